//! Inputs of several cards (`grtrace -d card0 -d card1 -o run` writes `run.card0.grtrace.*`
//! and `run.card1.grtrace.*`): one engine per card, jobs never joined across cards.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::*;
use grtrace_format::{Event, StreamHeader, StreamWriter};
use serde_json::Value;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_grtreport"))
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("grtreport-cards-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// `recs` as the stream of `card`, written to `<base>.card<card>.grtrace.0`.
fn card_file(base: &str, card: u32, r: &Rec) -> PathBuf {
    let h = StreamHeader::new(0, card, "virtio_gpu");
    let mut w = StreamWriter::new(Vec::new(), &h).unwrap();
    for (s, b) in &r.recs {
        w.write(s, b).unwrap();
    }
    let p = tmp(&format!("{base}.card{card}.grtrace.0"));
    std::fs::write(&p, w.into_inner()).unwrap();
    p
}

/// Job `seqno` of ctx 1 on ring 0: COMMIT, SUBMIT, START, END at `at` (ns after T0).
fn job(r: &mut Rec, seqno: u64, at: [u64; 4]) {
    let codes = [Event::COMMIT, Event::SUBMIT, Event::START, Event::END];
    for (t, code) in at.into_iter().zip(codes) {
        let pid = if matches!(code, Event::COMMIT | Event::SUBMIT) {
            7
        } else {
            0
        };
        r.ev(
            0,
            pid,
            T0 + t,
            code,
            1,
            1,
            0,
            seqno,
            0,
            0,
            u32::from(code == Event::SUBMIT),
        );
    }
}

/// Two cards with the same <ctx 1, ring 0, seqno 1..>: card0 runs jobs 1-2 for 6 us each,
/// card1 runs jobs 1-3 for 30 us each, interleaved in time with card0's.
fn two_cards(base: &str) -> Vec<PathBuf> {
    let mut c0 = Rec::default();
    c0.ring(T0, 0, 1 << 20, b"gfx");
    job(&mut c0, 1, [1_000, 2_000, 3_000, 9_000]);
    job(&mut c0, 2, [100_000, 101_000, 102_000, 108_000]);
    let mut c1 = Rec::default();
    c1.ring(T0, 0, 1 << 20, b"gfx");
    job(&mut c1, 1, [1_500, 2_500, 20_000, 50_000]);
    job(&mut c1, 2, [60_000, 61_000, 62_000, 92_000]);
    job(&mut c1, 3, [100_500, 101_500, 110_000, 140_000]);
    vec![card_file(base, 0, &c0), card_file(base, 1, &c1)]
}

fn run(args: &[&str], inputs: &[PathBuf]) -> (String, String) {
    let out = bin().args(inputs).args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    (String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
}

/// Each card's report counts its own jobs; a job's phases come from its own card's events.
#[test]
fn each_card_reports_only_its_own_jobs() {
    let inputs = two_cards("json");
    let (out, _) = run(&["--json"], &inputs);
    let v: Value = serde_json::from_str(&out).expect("valid JSON");
    let cards = v["cards"].as_array().expect("a cards array: {out}");
    assert_eq!(cards.len(), 2, "{out}");
    for (c, jobs, exec_ns) in [(0u64, 2u64, 6_000u64), (1, 3, 30_000)] {
        let r = &cards[c as usize];
        assert_eq!(r["card"], c);
        assert_eq!(r["schema"], "grtreport/1");
        assert_eq!(r["all"]["jobs"], jobs, "card {c}: {r}");
        assert_eq!(r["all"]["complete"], jobs, "card {c}: {r}");
        let exec = &r["all"]["phases"]["exec"];
        // Every job of the card ran exactly its card's time: none took the other card's END.
        assert_eq!(exec["min_ns"], exec_ns, "card {c}: {exec}");
        assert_eq!(exec["max_ns"], exec_ns, "card {c}: {exec}");
        assert!(r["source"]["driver"]
            .as_str()
            .unwrap()
            .ends_with(&format!("card{c}")));
    }
}

/// `--jobs` and `--csv` label every job with its card; the text report has a section per card.
#[test]
fn job_rows_and_text_sections_carry_the_card() {
    let inputs = two_cards("rows");
    let (out, err) = run(&["--jobs"], &inputs);
    assert!(
        !err.contains("joined") && !out.contains("joined"),
        "{err}{out}"
    );
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("#card"), "{out}");
    let rows: Vec<Vec<&str>> = lines
        .iter()
        .skip(1)
        .take_while(|l| l.starts_with(' '))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 5, "{out}");
    // card, time, ctx, ring, seqno, submit_ms, queue_ms, exec_ms
    let mut got: Vec<(&str, &str, &str)> = rows.iter().map(|r| (r[0], r[4], r[7])).collect();
    got.sort();
    assert_eq!(
        got,
        [
            ("0", "1", "0.006000"),
            ("0", "2", "0.006000"),
            ("1", "1", "0.030000"),
            ("1", "2", "0.030000"),
            ("1", "3", "0.030000"),
        ],
        "{out}"
    );
    let c0 = out.find("\ncard 0\n").expect("card 0 section");
    let c1 = out.find("\ncard 1\n").expect("card 1 section");
    assert!(c0 < c1, "{out}");

    let csv = tmp("rows.csv");
    run(&["-q", "--csv", csv.to_str().unwrap()], &inputs);
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let h = r.headers().unwrap().clone();
    assert_eq!(&h[0], "card");
    let seqno = h.iter().position(|c| c == "seqno").unwrap();
    let exec = h.iter().position(|c| c == "exec_ns").unwrap();
    let mut got: Vec<(String, String, String)> = r
        .records()
        .map(|x| {
            let x = x.unwrap();
            (x[0].to_string(), x[seqno].to_string(), x[exec].to_string())
        })
        .collect();
    got.sort();
    let want: Vec<(String, String, String)> = [
        ("0", "1", "6000"),
        ("0", "2", "6000"),
        ("1", "1", "30000"),
        ("1", "2", "30000"),
        ("1", "3", "30000"),
    ]
    .iter()
    .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
    .collect();
    assert_eq!(got, want, "{text}");
    let rings = std::fs::read_to_string(tmp("rows.rings.csv")).unwrap();
    let mut r = csv::Reader::from_reader(rings.as_bytes());
    assert_eq!(&r.headers().unwrap()[0], "card");
    let jobs: Vec<(String, String)> = r
        .records()
        .map(|x| {
            let x = x.unwrap();
            (x[0].to_string(), x[4].to_string())
        })
        .collect();
    assert_eq!(
        jobs,
        [("0".to_string(), "2".to_string()), ("1".into(), "3".into())],
        "{rings}"
    );
}

/// One card's input keeps the single-card shapes: no `cards` array, no card column.
#[test]
fn one_card_keeps_the_single_card_shapes() {
    let inputs = two_cards("one");
    let (out, _) = run(&["--json"], &inputs[1..]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(v.get("cards").is_none());
    assert_eq!(v["all"]["jobs"], 3);
    let (out, _) = run(&["--jobs", "-q"], &inputs[1..]);
    assert!(out.starts_with("#         time"), "{out}");
}

/// A job of card0 waits for fence (50, 1), which job 1 of card1 owns (its START names fence
/// context 50); card0's own job 1 has the same <ctx, ring, seqno> but another fence. The
/// wait is on a fence no recorded job of card0 owns, never on card1's job.
#[test]
fn a_fence_of_another_card_is_not_owned_here() {
    let mut c0 = Rec::default();
    c0.ring(T0, 0, 1 << 20, b"gfx");
    job(&mut c0, 1, [1_000, 2_000, 3_000, 9_000]);
    let key = (1, 0, 2);
    c0.ev(0, 7, T0 + 100_000, Event::COMMIT, 1, 1, 0, 2, 0, 0, 0);
    c0.ev(0, 7, T0 + 101_000, Event::SUBMIT, 1, 1, 0, 2, 0, 0, 1);
    c0.sync(T0 + 102_000, Event::SYNC_ENTER, key, (50, 1));
    c0.sync(T0 + 400_000, Event::SYNC_EXIT, key, (50, 1));
    c0.ev(0, 0, T0 + 401_000, Event::START, 1, 1, 0, 2, 0, 0, 0);
    c0.ev(0, 0, T0 + 402_000, Event::END, 1, 1, 0, 2, 0, 0, 0);
    let mut c1 = Rec::default();
    c1.ring(T0, 0, 1 << 20, b"gfx");
    c1.ev(0, 7, T0 + 1_500, Event::COMMIT, 1, 1, 0, 1, 0, 0, 0);
    c1.ev(0, 7, T0 + 2_500, Event::SUBMIT, 1, 1, 0, 1, 0, 0, 1);
    c1.ev(0, 0, T0 + 20_000, Event::START, 1, 1, 0, 1, 50, 0, 0);
    c1.ev(0, 0, T0 + 300_000, Event::END, 1, 1, 0, 1, 50, 0, 0);
    let inputs = vec![card_file("fence", 0, &c0), card_file("fence", 1, &c1)];
    let (out, _) = run(&["--jobs", "-q"], &inputs);
    let waiter = out
        .lines()
        .find(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.first() == Some(&"0") && w.get(4) == Some(&"2")
        })
        .unwrap_or_else(|| panic!("card 0 job 2: {out}"));
    assert!(waiter.ends_with(" fence:50:1"), "{out}");
    assert!(!out.contains(" 1/0/1"), "{out}");
}
