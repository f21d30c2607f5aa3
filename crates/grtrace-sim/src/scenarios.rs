//! Named workloads with ground truth, played by `grtsim --scenario NAME` through the relay
//! path. A scenario is data: the records a kernel would write (each with its CPU in the
//! stamp, times relative to the session start, per-job events in time order) and, per job, the
//! labels a report should find (`tags`, empty for a healthy job).
//!
//! Adding a scenario: write a `fn(seed, jobs) -> Scenario`, add it to `SCENARIOS`. Keep the
//! API below stable: the recorder's tests, the simulator and grtreport's tests use it.

use grtrace_format::{Body, Stamp};

use crate::model::{Model, ModelCfg};

/// A workload and what a report should say about each of its jobs.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Records in time order (`seq` is ignored: the simulated kernel numbers records).
    pub records: Vec<(Stamp, Body<'static>)>,
    pub truth: Vec<TruthJob>,
}

/// One job (named by ctx, ring, seqno) and its labels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TruthJob {
    pub ctx: u32,
    pub ring: u32,
    pub seqno: u64,
    pub tags: Vec<&'static str>,
}

type Builder = fn(u64, usize) -> Scenario;

const SCENARIOS: &[(&str, Builder)] = &[("clean", clean)];

/// Names of every scenario, for `--help` and errors.
pub fn names() -> &'static [&'static str] {
    const NAMES: &[&str] = &["clean"];
    NAMES
}

/// Builds scenario `name` with `jobs` jobs, deterministically from `seed`.
pub fn by_name(name: &str, seed: u64, jobs: usize) -> Option<Scenario> {
    SCENARIOS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, build)| build(seed, jobs))
}

/// A healthy two-CPU desktop: four clients on three rings, one job every ~0.5 ms, rings about
/// 60 % busy, no stalls, no errors. Every job's truth has no tags.
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
        assert_eq!(SCENARIOS.len(), names().len());
    }

    #[test]
    fn truth_csv_joins_tags() {
        let t = [TruthJob {
            ctx: 1,
            ring: 2,
            seqno: 3,
            tags: vec!["stall", "late"],
        }];
        assert_eq!(truth_csv(&t), "ctx,ring,seqno,tags\n1,2,3,stall+late\n");
    }
}
