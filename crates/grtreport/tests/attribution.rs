//! Blocked by whom: the simulator's dep-chain scenario knows the true blocker of every
//! waiting job (a fence owner on another ring or context, a chain, a long job ahead); the
//! report must name it with precision and recall of at least 0.95, and name a fence no
//! recorded job owns as such.

mod common;

use std::collections::HashMap;

use common::*;
use grtrace_sim::scenarios;
use grtreport::job::BlockKind;
use grtreport::{Job, Rules};

fn jobs_of(seed: u64, n: usize) -> (scenarios::Scenario, Vec<Job>) {
    let sc = scenarios::by_name("dep-chain", seed, n).expect("scenario");
    let (_, got) = run_bytes(scenario_stream(&sc.records), Rules::default());
    (sc, got)
}

#[test]
fn blockers_are_found_with_precision_and_recall_095() {
    for seed in [1, 2, 3] {
        let (sc, got) = jobs_of(seed, 4000);
        assert_eq!(got.len(), sc.truth.len());
        let by_key: HashMap<_, _> = got
            .iter()
            .map(|j| ((j.key.ctx, j.key.ring, j.key.seqno), j))
            .collect();
        let (mut tp, mut fp, mut fneg) = (0u32, 0u32, 0u32);
        let (mut dep, mut queue, mut chains) = (0, 0, 0);
        for t in &sc.truth {
            let j = by_key[&(t.ctx, t.ring, t.seqno)];
            let b = j.blocker();
            let named = b.owned.then_some((b.key.ctx, b.key.ring, b.key.seqno));
            match (t.blocker, named) {
                (Some(w), Some(h)) if w == h => tp += 1,
                (Some(_), Some(_)) => {
                    fp += 1;
                    fneg += 1;
                }
                (Some(_), None) => fneg += 1,
                (None, Some(_)) => fp += 1,
                (None, None) => {}
            }
            if named.is_some() && t.blocker == named {
                match b.kind {
                    BlockKind::Dep => dep += 1,
                    BlockKind::Queue => queue += 1,
                    BlockKind::None => unreachable!(),
                }
                if b.depth > 1 {
                    chains += 1;
                    // The chain ends at a long runner (ctx 7 or 8) that waited for nothing.
                    assert!(matches!(b.root.ctx, 7 | 8), "{b:?}");
                }
                // The blocker's own phases and tags come along.
                assert!(b.exec > 0 && b.exec != u64::MAX, "{b:?}");
                assert!(b.tags.is_some(), "{b:?}");
                assert!(b.lost > 0);
            }
        }
        let p = tp as f64 / (tp + fp).max(1) as f64;
        let r = tp as f64 / (tp + fneg).max(1) as f64;
        println!(
            "seed {seed}: tp {tp} fp {fp} fn {fneg} precision {p:.3} recall {r:.3}; \
             {dep} dependency, {queue} queue, {chains} chained"
        );
        assert!(p >= 0.95 && r >= 0.95, "seed {seed}: p {p} r {r}");
        assert!(
            dep > 100 && queue > 100 && chains > 50,
            "every kind is exercised"
        );
    }
}

#[test]
fn a_fence_no_job_owns_is_named_not_dropped() {
    let (sc, got) = jobs_of(7, 2000);
    let mut foreign = 0;
    for j in &got {
        let b = &j.dep;
        if b.is_some() && b.fence.0 == 999 {
            foreign += 1;
            assert!(!b.owned, "{b:?}");
            assert_eq!(j.blocker().who(), format!("fence 999:{}", b.fence.1));
            assert!(b.lost >= 300_000, "the wait is counted: {b:?}");
        }
    }
    let truth = sc.truth.iter().filter(|t| t.blocker.is_none()).count();
    assert!(foreign > 50 && foreign < truth, "{foreign} of {truth}");
}
