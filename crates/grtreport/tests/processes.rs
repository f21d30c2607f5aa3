//! The per-process table (text section, `--json` `processes`, `FILE.processes.csv`) says
//! what the jobs say: on fixtures with every blocking class, each process's jobs, busy
//! time and time lost per class are summed here from the job rows of the same run's CSV,
//! independently of grtreport's own aggregation, and must match every row of all three
//! outputs.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/report-golden/in")
}

fn report(args: &[&str]) -> String {
    common::stdout_of(common::grtreport().args(args))
}

/// The blocking classes as the CSV columns name them, in [`Sums`]' tag order.
const CLASSES: [&str; 5] = [
    "host_submit",
    "queue_wait",
    "exec_tail",
    "dep_wait",
    "vm_fault",
];

/// (pid, ring) -> what the job rows say.
#[derive(Debug, Default, PartialEq)]
struct Sums {
    jobs: u64,
    complete: u64,
    busy_ns: u64,
    /// Per tag (host-submit .. vm-fault): jobs tagged and ns lost (preempt-thrash's lost
    /// time is not a CSV column and is left out).
    tag_jobs: [u64; 5],
    tag_lost: [u64; 5],
}

fn num(r: &csv::StringRecord, h: &csv::StringRecord, name: &str) -> u64 {
    let i = h
        .iter()
        .position(|c| c == name)
        .unwrap_or_else(|| panic!("{name}"));
    r[i].parse().unwrap_or(0)
}

fn from_jobs(csv_text: &str) -> BTreeMap<(String, u64), Sums> {
    let mut rd = csv::Reader::from_reader(csv_text.as_bytes());
    let h = rd.headers().unwrap().clone();
    let mut out: BTreeMap<(String, u64), Sums> = BTreeMap::new();
    for r in rd.records() {
        let r = r.unwrap();
        let pid = num(&r, &h, "pid");
        let key = (
            if pid == 0 {
                String::new()
            } else {
                pid.to_string()
            },
            num(&r, &h, "ring"),
        );
        let s = out.entry(key).or_default();
        s.jobs += 1;
        if num(&r, &h, "incomplete") == 1 {
            continue;
        }
        s.complete += 1;
        s.busy_ns += num(&r, &h, "exec_ns");
        let lost = [
            num(&r, &h, "submit_host_ns"),
            num(&r, &h, "queue_ns"),
            num(&r, &h, "exec_own_ns").saturating_sub(num(&r, &h, "class_p90_ns")),
            num(&r, &h, "gpu_wait_ns"),
            num(&r, &h, "vm_fault_ns"),
        ];
        for (t, col) in CLASSES.iter().enumerate() {
            if num(&r, &h, col) == 1 {
                s.tag_jobs[t] += 1;
                s.tag_lost[t] += lost[t];
            }
        }
    }
    out
}

#[test]
fn process_rows_are_the_sums_of_their_jobs() {
    for input in ["mixed.grtrace", "frames.grtrace", "dep-chain.grtrace"] {
        let dir = tempdir(input);
        let csv_path = dir.join("out.csv");
        let f = fixtures().join(input);
        let text = report(&[f.to_str().unwrap(), "--csv", csv_path.to_str().unwrap()]);
        let jobs = std::fs::read_to_string(&csv_path).unwrap();
        let want = from_jobs(&jobs);
        assert!(want.len() > 3, "{input}: {} processes", want.len());

        // FILE.processes.csv: every (pid, ring) of the jobs, nothing else.
        let procs = std::fs::read_to_string(dir.join("out.processes.csv")).unwrap();
        let mut rd = csv::Reader::from_reader(procs.as_bytes());
        let h = rd.headers().unwrap().clone();
        let mut got = BTreeMap::new();
        for r in rd.records() {
            let r = r.unwrap();
            let key = (r[0].to_string(), num(&r, &h, "ring"));
            let mut s = Sums {
                jobs: num(&r, &h, "jobs"),
                complete: num(&r, &h, "complete"),
                busy_ns: num(&r, &h, "busy_ns"),
                ..Sums::default()
            };
            for (t, n) in CLASSES.iter().enumerate() {
                s.tag_jobs[t] = num(&r, &h, &format!("{n}_jobs"));
                s.tag_lost[t] = num(&r, &h, &format!("{n}_lost_ns"));
            }
            got.insert(key, s);
        }
        assert_eq!(got, want, "{input}: processes.csv against the job rows");
        let busiest: Vec<u64> = {
            let mut rd = csv::Reader::from_reader(procs.as_bytes());
            rd.records()
                .map(|r| num(&r.unwrap(), &h, "busy_ns"))
                .collect()
        };
        assert!(busiest.windows(2).all(|w| w[0] >= w[1]), "busiest first");

        // --json: the same rows.
        let json: serde_json::Value =
            serde_json::from_str(&report(&[f.to_str().unwrap(), "--json"])).unwrap();
        let rows = json["processes"].as_array().unwrap();
        assert_eq!(rows.len(), want.len());
        for p in rows {
            let pid = p["pid"].as_u64().map_or(String::new(), |p| p.to_string());
            let w = &want[&(pid, p["ring"].as_u64().unwrap())];
            assert_eq!(p["jobs"].as_u64(), Some(w.jobs));
            assert_eq!(p["busy_ns"].as_u64(), Some(w.busy_ns));
            assert_eq!(
                p["lost"]["dep-wait"]["lost_ns"].as_u64(),
                Some(w.tag_lost[3])
            );
            assert_eq!(
                p["lost"]["queue-wait"]["jobs"].as_u64(),
                Some(w.tag_jobs[1])
            );
        }

        // The text section: the busiest row's busy time in ms and its job count.
        let sec = text
            .split("==================== Per Process")
            .nth(1)
            .expect("a Per Process section");
        let first = sec.lines().nth(3).unwrap();
        let top = &rows[0];
        let ms = format!(
            "{}.{:06}",
            top["busy_ns"].as_u64().unwrap() / 1_000_000,
            top["busy_ns"].as_u64().unwrap() % 1_000_000
        );
        assert!(first.contains(&ms), "{input}: {first} lacks {ms}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("grtreport-processes-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}
