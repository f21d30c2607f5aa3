//! Named workloads with ground truth, played by `grtsim --scenario NAME` through the relay
//! path. A scenario is data: the records a kernel would write (each with its CPU in the
//! stamp, times relative to the session start, per-job events in time order) and, per job, the
//! labels a report should find (`tags`, empty for a healthy job).
//!
//! Adding a scenario: write a `fn(seed, jobs) -> Scenario`, add it to `SCENARIOS`. Keep the
//! API below stable: the recorder's tests, the simulator and grtreport's tests use it.

mod jobs;

use crate::model::{Model, ModelCfg};
use jobs::frames;
use jobs::{dep_chain, inject_every, report_clean, report_mixed, Inject};
pub use jobs::{Scenario, TruthJob};

type MakeScenario = fn(u64, usize) -> Scenario;

/// Each blocking class is the healthy report workload with that class injected into one
/// job in `every` (the last number).
const SCENARIOS: &[(&str, MakeScenario)] = &[
    ("clean", clean),
    ("report-clean", report_clean),
    ("host-submit", |s, j| inject_every(s, j, Inject::Host, 20)),
    ("queue-wait", |s, j| inject_every(s, j, Inject::Queue, 40)),
    ("exec-tail", |s, j| inject_every(s, j, Inject::Tail, 25)),
    ("dep-wait", |s, j| inject_every(s, j, Inject::Dep, 20)),
    ("vm-fault", |s, j| inject_every(s, j, Inject::Fault, 20)),
    ("preempt-thrash", |s, j| {
        inject_every(s, j, Inject::Preempt, 20)
    }),
    ("report-mixed", report_mixed),
    ("dep-chain", dep_chain),
    ("frames", frames::frames),
];

/// Names of every scenario, for `--help` and errors (in `SCENARIOS` order).
pub fn names() -> Vec<&'static str> {
    SCENARIOS.iter().map(|(n, _)| *n).collect()
}

/// Builds scenario `name` with `jobs` jobs, deterministically from `seed`.
pub fn by_name(name: &str, seed: u64, jobs: usize) -> Option<Scenario> {
    SCENARIOS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, build)| build(seed, jobs))
}

/// A healthy two-CPU desktop: four clients on three rings, one job every ~0.5 ms, the gfx ring about
/// half busy, no stalls, no errors. Every job's truth has no tags.
fn clean(seed: u64, jobs: usize) -> Scenario {
    let mut model = Model::new(ModelCfg::device(2, seed, 500_000));
    let (records, names) = model.records(jobs);
    Scenario {
        records,
        truth: names
            .into_iter()
            .map(|(ctx, ring, seqno)| TruthJob {
                ctx,
                ring,
                seqno,
                tags: Vec::new(),
                blocker: None,
            })
            .collect(),
    }
}

/// The truth as CSV: `ctx,ring,seqno,tags` with tags joined by `+`.
pub fn truth_csv(truth: &[TruthJob]) -> String {
    let mut s = String::from("ctx,ring,seqno,tags\n");
    for t in truth {
        s.push_str(&format!(
            "{},{},{},{}\n",
            t.ctx,
            t.ring,
            t.seqno,
            t.tags.join("+")
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_scenario_builds_with_truth_for_its_jobs() {
        for name in names() {
            let s = by_name(name, 1, 50).unwrap();
            assert_eq!(s.truth.len(), 50, "{name}");
            assert!(s
                .records
                .windows(2)
                .all(|w| w[0].0.time_ns <= w[1].0.time_ns));
        }
        assert!(by_name("no-such", 1, 5).is_none());
        // by_name finds the first of equal names: a second entry would never be played.
        let mut unique = names();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), SCENARIOS.len(), "duplicate scenario name");
    }

    #[test]
    fn truth_csv_joins_tags() {
        let t = [TruthJob {
            ctx: 1,
            ring: 2,
            seqno: 3,
            tags: vec!["stall", "late"],
            blocker: None,
        }];
        assert_eq!(truth_csv(&t), "ctx,ring,seqno,tags\n1,2,3,stall+late\n");
    }
}
