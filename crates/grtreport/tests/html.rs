//! `--html`: the page is self-contained, carries the jobs the report found (or a window of
//! them, saying what it left out), the markers and the per-ring series. The page's script
//! is exercised in a real browser by scripts/browser/run.sh.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use serde_json::Value;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_grtreport"))
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The page for `input` (with extra arguments), and its data element parsed.
fn page(input: &Path, extra: &[&str]) -> (String, Value) {
    let html = stdout_of(bin().arg(input).args(["--html", "-"]).args(extra));
    let open = "<script id=\"grt-data\" type=\"application/json\">";
    let a = html.find(open).expect("data element") + open.len();
    let b = a + html[a..].find("</script>").unwrap();
    let data = serde_json::from_str(&html[a..b]).expect("data is JSON");
    (html, data)
}

/// `--jobs` lines (no header) for `input`.
fn job_lines(input: &Path) -> Vec<String> {
    let out = bin().arg(input).args(["--jobs", "-q"]).output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .skip(1)
        .map(String::from)
        .collect()
}

fn mixed_file() -> PathBuf {
    scenario_file("report-mixed", 4, 3000)
}

#[test]
fn the_page_is_self_contained() {
    let (html, _) = page(&mixed_file(), &[]);
    assert!(html.starts_with("<!DOCTYPE html>"));
    for bad in [
        "<link", "src=", "@import", "url(", "http://", "https://", "<iframe", "fetch(",
    ] {
        // The SVG namespace URI is a name and url(#id) a reference inside the page, not
        // requests.
        let hits = html
            .match_indices(bad)
            .filter(|(i, _)| !html[*i..].starts_with("http://www.w3.org/2000/svg"))
            .filter(|(i, _)| !html[*i..].starts_with("url(#"))
            .count();
        assert_eq!(hits, 0, "page contains {bad}");
    }
    assert_eq!(html.matches("<script").count(), 2);
    assert_eq!(html.matches("<style>").count(), 1);
}

#[test]
fn the_page_carries_every_job_tables_and_verdicts() {
    let f = mixed_file();
    let (_, d) = page(&f, &[]);
    let lines = job_lines(&f);
    let jobs = d["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), lines.len());
    assert_eq!(d["jobs_left_out"], 0);
    // Same jobs, same tags, in the same time order as --jobs (which prints ctx ring seqno).
    let mut want: Vec<(u64, u64, u64)> = lines
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
                f[3].parse().unwrap(),
            )
        })
        .collect();
    let got = page_job_keys(&d);
    want.sort();
    assert_eq!(got, want);
    let tags = page_column(&d, "tags");
    let tagged = jobs.iter().filter(|j| j[tags] != 0).count();
    let groups = d["groups"].as_array().unwrap();
    let all = groups.iter().find(|g| g["label"] == "all").unwrap();
    assert_eq!(all["tagged"].as_u64().unwrap() as usize, tagged);
    assert!(groups.iter().any(|g| g["label"] == "ring 0 gfx"));
    assert!(!d["hints"].as_array().unwrap().is_empty());
    assert!(d["report"].as_str().unwrap().contains("Blocking Classes"));
    // Series: per ring, busy within 0..100, at most MAX_BUCKETS points.
    for (ring, s) in d["series"].as_object().unwrap() {
        let s = s.as_array().unwrap();
        assert!(
            !s.is_empty() && s.len() <= grtreport::html::MAX_BUCKETS,
            "{ring}"
        );
        for p in s {
            let busy = p[0].as_f64().unwrap();
            assert!((0.0..=100.0).contains(&busy));
        }
        assert!(
            s.iter().any(|p| p[0].as_f64().unwrap() > 0.0),
            "{ring} never busy"
        );
        assert!(s.iter().any(|p| p[6].is_number()), "{ring} has no exec p50");
    }
}

#[test]
fn a_large_trace_carries_a_window_and_says_what_it_left_out() {
    let f = mixed_file();
    let (_, d) = page(&f, &["--html-jobs", "500"]);
    let lines = job_lines(&f);
    let jobs = d["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 500);
    assert_eq!(d["jobs_total"].as_u64().unwrap() as usize, lines.len());
    assert_eq!(
        d["jobs_left_out"].as_u64().unwrap() as usize,
        lines.len() - 500
    );
    // The window: every carried job began before its end, every job left out at or after.
    let end = d["window_end_ns"].as_u64().unwrap();
    let times = ["commit_ns", "submit_ns", "start_ns", "end_ns"].map(|c| page_column(&d, c));
    let first = |j: &Value| {
        times
            .iter()
            .map(|&k| j[k].as_i64().unwrap())
            .find(|&t| t >= 0)
            .unwrap()
    };
    assert!(jobs.iter().all(|j| (first(j) as u64) < end));
    let starts: Vec<u64> = lines
        .iter()
        .map(|l| {
            let s: f64 = l.split_whitespace().next().unwrap().parse().unwrap();
            (s * 1e9).round() as u64
        })
        .collect();
    assert_eq!(starts.iter().filter(|&&t| t < end).count(), 500);
    // The plots still cover the whole trace.
    let (_, all) = page(&f, &[]);
    assert_eq!(d["series"], all["series"]);
}

#[test]
fn markers_carry_messages_faults_and_lost_records() {
    let (_, d) = page(&root().join("fixtures/parse/every/run"), &[]);
    assert!(!d["msgs"].as_array().unwrap().is_empty());
    let marks: Vec<&str> = d["marks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m[2].as_str().unwrap())
        .collect();
    for m in ["VM_FAULT", "RESET", "TIMEOUT", "HANG", "STALL"] {
        assert!(marks.contains(&m), "{m} not in {marks:?}");
    }
    let (_, g) = page(&root().join("fixtures/parse/gap/run"), &[]);
    let lost: u64 = g["lost"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l[1].as_u64().unwrap())
        .sum();
    assert_eq!(lost, 4 + 3);
    assert!(g["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("sequence gap")));
}

#[test]
fn html_jobs_zero_is_a_usage_error() {
    let out = bin()
        .arg(mixed_file())
        .args(["--html", "-", "--html-jobs", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn jobs_carry_their_blocker_for_arrows_and_the_chain() {
    let p = scenario_file("dep-chain", 3, 1500);
    let sc = grtrace_sim::scenarios::by_name("dep-chain", 3, 1500).unwrap();
    let (_, d) = page(&p, &[]);
    let jobs = d["jobs"].as_array().unwrap();
    let [ctx, ring, seqno, blocker, info] =
        ["ctx", "ring", "seqno", "blocker_job", "blocker_info"].map(|c| page_column(&d, c));
    let key = |j: &Value| format!("{}/{}/{}", j[ctx], j[ring], j[seqno]);
    let keys: std::collections::HashSet<String> = jobs.iter().map(key).collect();
    let truth: std::collections::HashMap<String, String> = sc
        .truth
        .iter()
        .filter_map(|t| {
            let (c, r, s) = t.blocker?;
            Some((
                format!("{}/{}/{}", t.ctx, t.ring, t.seqno),
                format!("{c}/{r}/{s}"),
            ))
        })
        .collect();
    let (mut named, mut right) = (0, 0);
    for j in jobs {
        if let Some(b) = j[blocker].as_str() {
            named += 1;
            assert!(
                keys.contains(b),
                "blocker {b} of {} not in the page",
                key(j)
            );
            let info = j[info].as_array().unwrap();
            assert!(info[0] == "dep" || info[0] == "queue");
            if truth.get(&key(j)).map(String::as_str) == Some(b) {
                right += 1;
            }
        }
    }
    assert!(named > 50);
    assert!(right as f64 >= 0.95 * named as f64, "{right} of {named}");
    // Some chains are longer than one link: the page can walk them.
    assert!(jobs.iter().any(|j| j[info][3].as_u64().unwrap_or(0) > 1));
}

/// A ring whose jobs are all incomplete (they lack the COMMIT the stream records) has no
/// complete job to judge a blocking class on: `-` in the text's Blocking Classes, null in
/// the JSON tags and the page's tag_jobs, never 0, by the one rule all three use.
#[test]
fn a_group_without_complete_jobs_is_unjudged_in_text_json_and_page() {
    use grtrace_format::Event;
    let mut r = Rec::with_gfx();
    r.ring(T0, 1, 1 << 20, b"comp");
    for seqno in 1..=20u64 {
        let t = T0 + seqno * MS;
        // ring 0: whole jobs of ctx 3, submitted by thread 77; ring 1: jobs of ctx 4 seen
        // on the GPU only, no COMMIT or SUBMIT. Each runs 200 us.
        let host = Ev::of_job(3, 0, seqno).on(1, 77);
        r.add(host.at(Event::COMMIT, t));
        r.add(host.at(Event::SUBMIT, t + 10 * US).args(0, 0, 1));
        for (gpu, start) in [
            (Ev::of_job(3, 0, seqno), 30),
            (Ev::of_job(4, 1, seqno), 300),
        ] {
            r.add(gpu.at(Event::START, t + start * US));
            r.add(gpu.at(Event::END, t + (start + 200) * US));
            r.add(gpu.at(Event::IRQ, t + (start + 210) * US).args(seqno, 0, 0));
        }
    }
    let f = tmp("no-complete-ring.grtrace");
    std::fs::write(&f, merged_stream(&r.recs)).unwrap();

    let text = stdout_of(bin().arg(&f));
    let classes = text
        .split("Blocking Classes")
        .nth(1)
        .expect("a Blocking Classes section");
    let cells = |label: &str| -> Vec<String> {
        let l = classes
            .lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("{label} row: {classes}"));
        l[l.find(label).unwrap() + label.len()..]
            .split_whitespace()
            .map(String::from)
            .collect()
    };
    let comp = cells("ring 1 (comp)");
    assert_eq!(comp[0], "0", "no complete job: {comp:?}");
    assert!(comp[1..].iter().all(|c| c == "-"), "{comp:?}");
    let gfx = cells("ring 0 (gfx)");
    assert_eq!(gfx[0], "20", "{gfx:?}");
    assert!(gfx[1..].iter().all(|c| c != "-"), "{gfx:?}");

    let json = bin().arg(&f).arg("--json").output().unwrap();
    let v: Value = serde_json::from_slice(&json.stdout).unwrap();
    let ring = |id: u64| {
        v["rings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .unwrap()
            .clone()
    };
    let (j0, j1) = (ring(0), ring(1));
    assert_eq!(j1["complete"], 0);
    let tags = j1["tags"].as_object().unwrap();
    assert!(tags.values().all(Value::is_null), "{tags:?}");
    let tags = j0["tags"].as_object().unwrap();
    assert!(tags.values().all(|t| t["judged"] == 20), "{tags:?}");

    let (_, d) = page(&f, &[]);
    let groups = d["groups"].as_array().unwrap();
    let group = |label: &str| {
        groups
            .iter()
            .find(|g| g["label"] == label)
            .unwrap_or_else(|| panic!("{label}: {groups:?}"))
    };
    let comp = group("ring 1 comp");
    assert_eq!(comp["complete"], 0);
    let tag_jobs = comp["tag_jobs"].as_array().unwrap();
    assert!(tag_jobs.iter().all(Value::is_null), "{tag_jobs:?}");
    let gfx = group("ring 0 gfx")["tag_jobs"].as_array().unwrap();
    assert!(gfx.iter().all(Value::is_u64), "{gfx:?}");
}
