//! Ground truth: the simulator's scenarios inject each blocking class on known jobs; the
//! report must find them with precision and recall of at least 0.95, and tag nothing on a
//! clean workload.

mod common;

use common::*;
use grtrace_sim::scenarios;
use grtreport::{Rules, Tags};

fn check(name: &str, seed: u64, jobs: usize) -> String {
    let sc = scenarios::by_name(name, seed, jobs).expect("scenario");
    let (_, got) = run_bytes(scenario_stream(&sc.records), Rules::default());
    let s = score(&got, &sc.truth);
    let mut report = String::new();
    let mut fail = Vec::new();
    for (i, (tp, fp, fneg)) in s.iter().enumerate() {
        let p = if tp + fp == 0 {
            1.0
        } else {
            *tp as f64 / (tp + fp) as f64
        };
        let r = if tp + fneg == 0 {
            1.0
        } else {
            *tp as f64 / (tp + fneg) as f64
        };
        report.push_str(&format!(
            "{name} {}: tp {tp} fp {fp} fn {fneg} precision {p:.3} recall {r:.3}\n",
            Tags::NAMES[i]
        ));
        if p < 0.95 || r < 0.95 {
            fail.push(Tags::NAMES[i]);
        }
    }
    assert!(fail.is_empty(), "{name} seed {seed}: {fail:?}\n{report}");
    report
}

/// grtsim's own "clean" workload keeps its rings about 60 % busy with FIFO service, so some
/// jobs really do wait behind others for over 500 µs and more than half their life: by the
/// design's rule that is queue wait, though the scenario's truth has no tags. Here every
/// other class must stay silent, and each queue-wait tag must be a real wait.
#[test]
fn grtsim_clean_scenario_has_only_real_queue_waits() {
    let sc = scenarios::by_name("clean", 5, 3000).unwrap();
    let (_, got) = run_bytes(scenario_stream(&sc.records), Rules::default());
    assert_eq!(got.len(), sc.truth.len());
    assert!(got.iter().all(|j| !j.flags.incomplete()));
    let mut queued = 0;
    for j in &got {
        assert_eq!(j.tags.0 & !Tags::QUEUE_WAIT, 0, "{j:#?}");
        if j.tags.has(Tags::QUEUE_WAIT) {
            queued += 1;
            assert!(j.phases.queue > 500_000 && j.phases.queue * 2 > j.phases.total);
            assert!(j.outstanding >= 2, "{j:#?}");
        }
    }
    println!("clean: {queued} of {} jobs waited in the queue", got.len());
}

#[test]
fn report_clean_scenario_gets_no_tags() {
    check("report-clean", 11, 3000);
}

#[test]
fn each_injected_class_is_found_with_precision_and_recall_095() {
    let mut all = String::new();
    // One scenario per class, named like the class: a new class without one fails here.
    for name in Tags::NAMES.into_iter().chain(["report-mixed"]) {
        for seed in [1, 2] {
            all.push_str(&check(name, seed, 4000));
        }
    }
    println!("{all}");
}

/// Real traces miss events: with 2% of STARTs and 3% of IRQs dropped, jobs get an inferred
/// START or complete at SIGNAL, and the tags must still hold up.
#[test]
fn tags_survive_missing_start_and_irq_events() {
    use grtrace_format::{Body, Event};
    let sc = scenarios::by_name("report-mixed", 9, 6000).unwrap();
    let (mut starts, mut irqs) = (0u32, 0u32);
    let kept: Vec<_> = sc
        .records
        .iter()
        .filter(|(_, b)| match b {
            Body::Event(e) if e.code == Event::START => {
                starts += 1;
                starts % 50 != 0
            }
            Body::Event(e) if e.code == Event::IRQ => {
                irqs += 1;
                irqs % 33 != 0
            }
            _ => true,
        })
        .cloned()
        .collect();
    let (_, got) = run_bytes(scenario_stream(&kept), Rules::default());
    assert_eq!(got.len(), 6000);
    let inferred = got
        .iter()
        .filter(|j| j.flags.has(grtreport::Flags::INFERRED))
        .count();
    assert!(inferred > 50, "{inferred}");
    let s = score(&got, &sc.truth);
    for (i, (tp, fp, fneg)) in s.iter().enumerate() {
        let p = *tp as f64 / (tp + fp).max(1) as f64;
        let r = *tp as f64 / (tp + fneg).max(1) as f64;
        println!(
            "{}: tp {tp} fp {fp} fn {fneg} precision {p:.3} recall {r:.3}",
            Tags::NAMES[i]
        );
        assert!(p >= 0.95 && r >= 0.95, "{}: p {p} r {r}", Tags::NAMES[i]);
    }
}
