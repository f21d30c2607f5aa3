//! Inputs of several cards (`grtrace -d card0 -d card1 -o run` writes `run.card0.grtrace.*`
//! and `run.card1.grtrace.*`): one engine per card, jobs never joined across cards.

mod common;
#[path = "common/tef.rs"]
mod tef;

use std::path::PathBuf;
use std::process::Command;

use common::*;
use grtrace_format::{Body, Event, StreamHeader, StreamWriter};
use serde_json::Value;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_grtreport"))
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("grtreport-cards-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// The driver of `card` in these tests: each card its own, so a label taken from the wrong
/// card's header shows.
fn driver_of(card: u32) -> &'static str {
    ["virtio_gpu", "amdgpu"][card as usize % 2]
}

/// `recs` as the stream of `card`, written to `<base>.card<card>.grtrace.0`.
fn card_file(base: &str, card: u32, r: &Rec) -> PathBuf {
    let h = StreamHeader::new(0, card, driver_of(card));
    let mut w = StreamWriter::new(Vec::new(), &h).unwrap();
    for (s, b) in &r.recs {
        w.write(s, b).unwrap();
    }
    // Ended as a recorder that stopped cleanly ends a stream.
    let last = r.recs.iter().map(|(s, _)| s.time_ns).max().unwrap_or(T0);
    let info = grtrace_format::StreamInfo {
        kernel_dropped: 0,
        records: r.recs.len() as u64 + 1,
        bytes: 0,
        flags: grtrace_format::abi::INFO_STOPPED_CLEANLY,
    };
    let stamp = grtrace_format::Stamp {
        cpu: 0,
        pid: 0,
        time_ns: last,
        seq: r.recs.len() as u64 + 1,
    };
    w.write(&stamp, &Body::StreamInfo(info)).unwrap();
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
        let job = Ev::of_job(1, 0, seqno).on(0, pid).flags(1);
        r.add(
            job.at(code, T0 + t)
                .args(0, 0, u32::from(code == Event::SUBMIT)),
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
    succeeded(bin().args(inputs).args(args).output().unwrap())
}

/// Stdout and stderr of `out` as text, asserting that it exited 0.
fn succeeded(out: std::process::Output) -> (String, String) {
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
    let c0 = out.find("\ncard0\n").expect("card0 section");
    let c1 = out.find("\ncard1\n").expect("card1 section");
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
    // Run with no thread in context, submitted by thread 7.
    let gpu = Ev::of_job(1, 0, 2).flags(1);
    let host = gpu.on(0, 7);
    c0.add(host.at(Event::COMMIT, T0 + 100_000));
    c0.add(host.at(Event::SUBMIT, T0 + 101_000).args(0, 0, 1));
    c0.sync(T0 + 102_000, Event::SYNC_ENTER, key, (50, 1));
    c0.sync(T0 + 400_000, Event::SYNC_EXIT, key, (50, 1));
    c0.add(gpu.at(Event::START, T0 + 401_000));
    c0.add(gpu.at(Event::END, T0 + 402_000));
    let mut c1 = Rec::default();
    c1.ring(T0, 0, 1 << 20, b"gfx");
    let gpu = Ev::of_job(1, 0, 1).flags(1);
    let host = gpu.on(0, 7);
    c1.add(host.at(Event::COMMIT, T0 + 1_500));
    c1.add(host.at(Event::SUBMIT, T0 + 2_500).args(0, 0, 1));
    // Its fence is context 50's (arg0 of START and END).
    c1.add(gpu.at(Event::START, T0 + 20_000).args(50, 0, 0));
    c1.add(gpu.at(Event::END, T0 + 300_000).args(50, 0, 0));
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

/// A two-card recording made by grtsim: card0 plays `report-mixed` (300 jobs), card1
/// `report-clean` with another seed (120 jobs). Both use the same contexts, rings and
/// seqnos from 1, so the same <ctx, ring, seqno> names different jobs on the two cards.
/// Written under the caller's own `base`: tests run in parallel threads, and one test
/// rewriting a file another is reading made that one see an empty file.
/// The driver of `card` in [`sim_cards`]' headers.
fn sim_driver(card: u32) -> &'static str {
    ["grtsim", "grtsim1"][card as usize % 2]
}

fn sim_cards(base: &str) -> Vec<PathBuf> {
    [(0, ("report-mixed", 3, 300)), (1, ("report-clean", 7, 120))]
        .into_iter()
        .map(|(card, sc)| scenario_card_file(base, card, sc, sim_driver(card)))
        .collect()
}

/// `--jobs` rows of a multi-card run as (card, ctx, ring, seqno, exec in µs), the rows of
/// jobs with a START and an END (those the timeline draws on a ring).
fn drawn_jobs(inputs: &[PathBuf]) -> Vec<(u64, u64, u64, u64, i64)> {
    let (out, _) = run(&["--jobs", "-q"], inputs);
    let mut v: Vec<_> = out
        .lines()
        .skip(1)
        .filter(|l| !l.contains("no-end"))
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let n = |i: usize| w[i].parse::<u64>().unwrap();
            let exec: f64 = w[7].parse().unwrap();
            (n(0), n(2), n(3), n(4), (exec * 1e3).round() as i64)
        })
        .collect();
    v.sort();
    v
}

/// `--perfetto` of two cards: one process per card, every track and counter named after
/// its card, host threads on a track per card, and each card's ring tracks drawing exactly
/// that card's jobs (same keys, same execution times): no job of card1 on card0's tracks.
#[test]
fn perfetto_draws_each_card_in_its_own_process() {
    use grtreport::perfetto::CARD_PID_BASE;
    let inputs = sim_cards("perfetto_draws_each_card_in_its_own_process");
    let (out, _) = run(&["--perfetto", "-"], &inputs);
    let c = tef::check(&out).unwrap_or_else(|e| panic!("invalid trace:\n{}", e.join("\n")));
    let base = CARD_PID_BASE as i64;
    assert_eq!(c.processes[&base], "card0 (grtsim)");
    assert_eq!(c.processes[&(base + 1)], "card1 (grtsim1)");
    let card_of = |pid: i64| (pid - base) as u64;
    for (&(pid, _), name) in &c.threads {
        if pid >= base {
            let want = format!("card{} ", card_of(pid));
            assert!(
                name.starts_with(&want),
                "{name} under card {}",
                card_of(pid)
            );
        } else {
            // A host thread: its track says which card's jobs it submitted.
            assert!(
                name.ends_with(" card0")
                    || name.ends_with(" card1")
                    || name.contains(" card0 #")
                    || name.contains(" card1 #"),
                "host track {name}"
            );
        }
    }
    for e in c.events.iter().filter(|e| e["ph"] == "C") {
        let pid = e["pid"].as_i64().unwrap();
        let want = format!("card{} ring ", card_of(pid));
        assert!(e["name"].as_str().unwrap().starts_with(&want), "{e}");
    }
    // Ring slices by the card whose process they are in.
    let mut drawn: Vec<(u64, u64, u64, u64, i64)> = c
        .events
        .iter()
        .filter(|e| {
            let (pid, tid) = (e["pid"].as_i64().unwrap(), e["tid"].as_i64().unwrap_or(0));
            e["ph"] == "X"
                && pid >= base
                && c.threads[&(pid, tid)].starts_with(&format!("card{} ring ", card_of(pid)))
        })
        .map(|e| {
            let a = &e["args"];
            let exec: f64 = a["exec_ms"].as_f64().unwrap();
            (
                card_of(e["pid"].as_i64().unwrap()),
                a["ctx"].as_u64().unwrap(),
                a["ring"].as_u64().unwrap(),
                a["seqno"].as_u64().unwrap(),
                (exec * 1e3).round() as i64,
            )
        })
        .collect();
    drawn.sort();
    let want = drawn_jobs(&inputs);
    assert!(want.iter().any(|j| j.0 == 0) && want.iter().any(|j| j.0 == 1));
    // Same <ctx, ring, seqno> on both cards: the test means something.
    assert!(want.iter().any(|a| a.0 == 0
        && want
            .iter()
            .any(|b| b.0 == 1 && (a.1, a.2, a.3) == (b.1, b.2, b.3))));
    assert_eq!(drawn, want);
    // Host slices: each on a track of its own card.
    for e in c.named("X", |n| n.starts_with("submit ")) {
        let name = &c.threads[&(e["pid"].as_i64().unwrap(), e["tid"].as_i64().unwrap())];
        assert!(name.contains(" card"), "{name}");
    }
    let other = c.other.as_ref().expect("otherData");
    let cards = other["cards"].as_array().expect("cards in otherData");
    assert_eq!(cards.len(), 2);
    for (i, card) in cards.iter().enumerate() {
        assert_eq!(card["card"], i as u64);
        let n = want.iter().filter(|j| j.0 == i as u64).count() as u64;
        assert!(card["jobs"].as_u64().unwrap() >= n, "{card}");
    }
    assert_eq!(
        other["trace_events"].as_u64().unwrap() as usize,
        c.events.len()
    );
}

/// `--interval` of two cards: one stream of rows with a card column (as `--jobs`), each
/// card's rows those the card gives alone (its intervals, from the same origin).
#[test]
fn interval_rows_of_two_cards_carry_the_card() {
    let inputs = sim_cards("interval_rows_of_two_cards_carry_the_card");
    let (out, _) = run(&["--interval", "0.005", "-q"], &inputs);
    let mut lines = out.lines();
    assert!(lines.next().unwrap().starts_with("#card"), "{out}");
    let mut per_card: [Vec<String>; 2] = Default::default();
    for l in lines {
        let (card, row) = l.trim_start().split_once(' ').unwrap();
        per_card[card.parse::<usize>().unwrap()].push(row.trim_start().to_string());
    }
    for (card, rows) in per_card.iter().enumerate() {
        assert!(rows.len() >= 2, "card {card}: {out}");
        let (alone, _) = run(&["--interval", "0.005", "-q"], &inputs[card..card + 1]);
        let alone: Vec<String> = alone
            .lines()
            .skip(1)
            .map(|l| l.trim_start().to_string())
            .collect();
        assert_eq!(rows, &alone, "card {card}");
    }
}

/// `--html` of two cards: one self-contained page, a data element per card (read by the
/// page's script into a section each), each carrying exactly its card's jobs.
#[test]
fn html_has_a_section_per_card_with_its_own_jobs() {
    let inputs = sim_cards("html_has_a_section_per_card_with_its_own_jobs");
    let (html, _) = run(&["--html", "-", "-q"], &inputs);
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(
        html.contains("<title>grtreport: card0 (grtsim), card1 (grtsim1) "),
        "{}",
        &html[..300]
    );
    // Two data elements and the script, once.
    assert_eq!(html.matches("<script").count(), 3);
    assert_eq!(html.matches("<style>").count(), 1);
    assert!(!html.contains("id=\"grt-data\""));
    let (out, _) = run(&["--jobs", "-q"], &inputs);
    for card in 0..2u64 {
        let open = format!(
            "<script class=\"grt-data\" id=\"grt-data-card{card}\" type=\"application/json\">"
        );
        let a = html.find(&open).expect("data element") + open.len();
        let b = a + html[a..].find("</script>").unwrap();
        let d: Value = serde_json::from_str(&html[a..b]).expect("data is JSON");
        assert_eq!(d["card"], card);
        let got = page_job_keys(&d);
        let mut want: Vec<(u64, u64, u64)> = out
            .lines()
            .skip(1)
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .filter(|w| w[0] == card.to_string())
            .map(|w| {
                (
                    w[2].parse().unwrap(),
                    w[3].parse().unwrap(),
                    w[4].parse().unwrap(),
                )
            })
            .collect();
        want.sort();
        assert!(!want.is_empty());
        assert_eq!(got, want, "card {card}");
        // The card's own report in its section.
        let all = d["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["label"] == "all")
            .unwrap();
        assert_eq!(all["jobs"].as_u64().unwrap() as usize, want.len());
    }
}

/// Two cards' streams concatenated on stdin (`cat a b | grtreport`): the second card turns
/// up only while reading, after the exports were set up for one. It still gets a process
/// of its own named after its card and driver (from its stream header, met mid-stream)
/// exactly as when the files are given, its tracks named after it, and the document
/// stays valid; the HTML page names it with its driver too.
#[test]
fn a_card_that_turns_up_on_stdin_is_drawn_apart() {
    let inputs = sim_cards("a_card_that_turns_up_on_stdin_is_drawn_apart");
    let mut cat = std::fs::read(&inputs[0]).unwrap();
    cat.extend(std::fs::read(&inputs[1]).unwrap());
    let (out, _) = run_stdin(&["--perfetto", "-", "-q"], &cat);
    let c = tef::check(&out).unwrap_or_else(|e| panic!("invalid trace:\n{}", e.join("\n")));
    let base = grtreport::perfetto::CARD_PID_BASE as i64;
    assert_eq!(c.processes[&base], "card0 (grtsim)");
    assert_eq!(c.processes[&(base + 1)], "card1 (grtsim1)");
    for (&(pid, _), name) in &c.threads {
        if pid == base + 1 {
            assert!(name.starts_with("card1 "), "{name}");
        }
    }
    let cards = &c.other.as_ref().unwrap()["cards"];
    assert_eq!(cards.as_array().unwrap().len(), 2);
    assert_eq!(cards[1]["card"], 1);
    assert_eq!(cards[1]["driver"], "grtsim1");
    let (files, _) = run(&["--perfetto", "-", "-q"], &inputs);
    let f = tef::check(&files).unwrap();
    assert_eq!(f.processes, c.processes);
    for card in 0..2 {
        for key in ["card", "driver"] {
            assert_eq!(
                f.other.as_ref().unwrap()["cards"][card][key],
                cards[card][key]
            );
        }
    }

    let (html, _) = run_stdin(&["--html", "-", "-q"], &cat);
    let data = |html: &str, card: u32| -> Value {
        let open = format!(
            "<script class=\"grt-data\" id=\"grt-data-card{card}\" type=\"application/json\">"
        );
        let a = html.find(&open).expect("data element") + open.len();
        let b = a + html[a..].find("</script>").unwrap();
        serde_json::from_str(&html[a..b]).expect("data is JSON")
    };
    assert_eq!(data(&html, 1)["driver"], "grtsim1", "{}", &html[..300]);
    let (files, _) = run(&["--html", "-", "-q"], &inputs);
    assert_eq!(data(&html, 1)["driver"], data(&files, 1)["driver"]);
}

/// `--csv` keeps one set of columns: when card0's stream is longer than the pipe read-ahead
/// (1 MiB, `PIPE_READAHEAD`), its first rows are written without a card column before
/// card1's header is read. The run then stops with one line naming the CSV and why, exit 1,
/// and the rows written before are intact: whole, card0's, in order from its first job.
/// Fed through a real pipe (the read-ahead is what a pipe gets).
#[test]
fn csv_stops_when_a_card_turns_up_after_rows_were_written() {
    // Card0: 6000 jobs of 4 events (72 bytes each), 1.7 MB > 1 MiB; card1: 3 jobs.
    let mut c0 = Rec::default();
    c0.ring(T0, 0, 1 << 20, b"gfx");
    for i in 0..6000u64 {
        let t = 10_000 * i;
        job(&mut c0, i + 1, [t + 1_000, t + 2_000, t + 3_000, t + 9_000]);
    }
    let mut c1 = Rec::default();
    c1.ring(T0, 0, 1 << 20, b"gfx");
    for i in 0..3u64 {
        let t = 10_000 * i;
        job(&mut c1, i + 1, [t + 1_500, t + 2_500, t + 3_500, t + 9_500]);
    }
    let inputs = [card_file("csvlate", 0, &c0), card_file("csvlate", 1, &c1)];
    let mut cat = std::fs::read(&inputs[0]).unwrap();
    assert!(cat.len() > grtrace_format::trace::PIPE_READAHEAD + (64 << 10));
    cat.extend(std::fs::read(&inputs[1]).unwrap());
    let csv = tmp("csvlate.csv");
    let _ = std::fs::remove_file(&csv);
    // The reader stops early: the rest of the pipe may find no reader (EPIPE is fine).
    let (out, _) = through_pipe(&["-q", "--csv", csv.to_str().unwrap()], &cat);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr.lines().collect::<Vec<_>>(),
        [format!(
            "grtreport: {}: another card turned up while reading, after job rows without a card column were written (streams of several cards concatenated on stdin): give each card's files as an input of its own",
            csv.display()
        )],
    );
    // The rows before: the header without a card column, then card0's jobs 1, 2, ... each
    // whole (every field there, the last line ended), as the file run writes them.
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(text.ends_with('\n'));
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let head = r.headers().unwrap().clone();
    assert!(!head.iter().any(|h| h == "card"), "{head:?}");
    let seqno = head
        .iter()
        .position(|h| h == "seqno")
        .expect("seqno column");
    let rows: Vec<csv::StringRecord> = r.records().map(|x| x.unwrap()).collect();
    assert!(rows.len() >= 100, "{} rows", rows.len());
    assert!(
        rows.len() < 6000,
        "{} rows: card1 came after them",
        rows.len()
    );
    let alone = tmp("csvlate-alone.csv");
    run(&["-q", "--csv", alone.to_str().unwrap()], &inputs[..1]);
    let alone = std::fs::read_to_string(&alone).unwrap();
    let mut want = csv::Reader::from_reader(alone.as_bytes());
    assert_eq!(want.headers().unwrap(), &head);
    for (i, (got, want)) in rows.iter().zip(want.records()).enumerate() {
        assert_eq!(got, &want.unwrap(), "row {i}");
        assert_eq!(got[seqno].parse::<usize>().unwrap(), i + 1);
    }
}

/// `recs` as a stream of card0 of recording `session`.
fn session_stream(session: u64, r: &Rec) -> Vec<u8> {
    let mut h = StreamHeader::new(0, 0, "virtio_gpu");
    h.session_id = session;
    let mut w = StreamWriter::new(Vec::new(), &h).unwrap();
    for (s, b) in &r.recs {
        w.write(s, b).unwrap();
    }
    w.into_inner()
}

/// Two recordings of one card concatenated on stdin (`cat old.grtrace.0 new.grtrace.0 |
/// grtreport -`): the second one's jobs share <ctx, ring, seqno> with the first's, so
/// merging them would join jobs across recordings. As for files of two sessions, the run
/// stops at the second header with one line naming stdin and its byte offset, exit 1, and
/// the report of what came before; `--force` merges them with a warning.
#[test]
fn a_second_recording_of_a_card_on_stdin_is_not_merged_silently() {
    let mut old = Rec::default();
    old.ring(T0, 0, 1 << 20, b"gfx");
    job(&mut old, 1, [1_000, 2_000, 3_000, 9_000]);
    job(&mut old, 2, [10_000, 11_000, 12_000, 18_000]);
    let mut new = Rec::default();
    new.ring(T0 + 50_000, 0, 1 << 20, b"gfx");
    job(&mut new, 1, [51_000, 52_000, 53_000, 90_000]);
    let first = session_stream(0x11, &old);
    let mut cat = first.clone();
    cat.extend(session_stream(0x22, &new));
    let out = bin()
        .args(["-", "--jobs"])
        .stdin(
            std::fs::File::open({
                let p = tmp("two-sessions");
                std::fs::write(&p, &cat).unwrap();
                p
            })
            .unwrap(),
        )
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let want = format!(
        "grtreport: (stdin): byte {}: session 0x22 of card0 starts here after a stream of card0 of session 0x11: streams of two recordings, not merged (--force merges them)",
        first.len()
    );
    assert_eq!(
        stderr
            .lines()
            .filter(|l| l.contains("session 0x22"))
            .collect::<Vec<_>>(),
        [want.as_str()],
        "{stderr}"
    );
    // The first recording's two jobs, whole, and nothing of the second (9 records).
    assert!(
        stdout.contains("grtreport: 9 records, 8 events"),
        "{stdout}"
    );
    let rows = |s: &str| s.lines().filter(|l| l.starts_with("   0.")).count();
    assert_eq!(rows(&stdout), 2, "{stdout}");
    assert!(
        stdout.contains("2 job(s): 2 complete, 0 incomplete"),
        "{stdout}"
    );

    let (piped, stderr) = run_stdin(&["--jobs", "--force"], &cat);
    assert!(
        stderr.contains("session 0x22 of card0 starts here after a stream of card0 of session 0x11: streams of two recordings, not merged (--force merges them) (merged: --force)"),
        "{stderr}"
    );
    // Every record of both recordings was read (9 + 5).
    assert!(
        piped.contains("grtreport: 14 records, 12 events"),
        "{piped}"
    );
    assert!(rows(&piped) >= 2, "{piped}");
}

/// `grtreport - ARGS` fed `bytes` through a pipe: its output, and how writing the pipe went.
fn through_pipe(args: &[&str], bytes: &[u8]) -> (std::process::Output, std::io::Result<()>) {
    grtrace_cli::run_fed(bin().arg("-").args(args), bytes)
}

/// `grtreport -` fed `bytes` on stdin, with `args`.
fn run_stdin(args: &[&str], bytes: &[u8]) -> (String, String) {
    let (out, fed) = through_pipe(args, bytes);
    fed.unwrap();
    succeeded(out)
}

/// Two cards' streams concatenated on stdin (`cat a.card0.grtrace.0 b.card1.grtrace.0 |
/// grtreport -`): card1 turns up only while reading, yet every output labels it as when
/// the two files are given as inputs: the text report, `--jobs`, `--csv` (jobs and rings),
/// `--json` and `--interval` are the same bytes, so card1's jobs are never joined with
/// card0's, and card1's report names its own driver (`source` line, JSON `source.driver`)
/// from its stream header, met mid-stream. One honest difference in the reports: card1's
/// ring note (at T0) is read after card0's first record was delivered, so the reader warns
/// of a record out of time order.
#[test]
fn cards_concatenated_on_stdin_are_labelled_as_separate_inputs() {
    let inputs = two_cards("cat");
    let mut cat = std::fs::read(&inputs[0]).unwrap();
    cat.extend(std::fs::read(&inputs[1]).unwrap());
    const LATE: &str = "1 records arrived out of time order";
    let in_order = |s: &str| {
        s.lines()
            .filter(|l| *l != format!("grtreport: warning: {LATE}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let (files, _) = run(&[], &inputs);
    let (piped, _) = run_stdin(&[], &cat);
    assert!(piped.contains("\ncard1\n"), "{piped}");
    for c in 0..2 {
        let src = format!("grtreport: source: driver {}, card{c}", driver_of(c));
        assert_eq!(piped.lines().filter(|l| *l == src).count(), 1, "{piped}");
    }
    assert_eq!(in_order(&piped), in_order(&files));

    let (files, _) = run(&["--jobs", "-q"], &inputs);
    let (piped, _) = run_stdin(&["--jobs", "-q"], &cat);
    assert!(piped.starts_with("#card"), "{piped}");
    assert_eq!(piped, files);

    // `--interval` rows are written as each interval closes: card0's first two closed
    // before the reader reached card1's stream, so they come above a note and without the
    // card column; every row after carries its card. The same rows as from the files.
    let args = ["--interval", "0.00005", "-q"];
    let (files, _) = run(&args, &inputs);
    let (piped, _) = run_stdin(&args, &cat);
    let note = "# another card turned up while reading: the lines above are the first card's\n";
    let (above, below) = piped.split_once(note).expect(&piped);
    assert!(below.starts_with("#card"), "{piped}");
    let mut got: Vec<String> = above
        .lines()
        .skip(1)
        .map(|l| format!("    0 {l}"))
        .chain(below.lines().skip(1).map(String::from))
        .collect();
    let mut want: Vec<String> = files.lines().skip(1).map(String::from).collect();
    assert!(got.iter().any(|l| l.starts_with("    1 ")), "{piped}");
    got.sort();
    want.sort();
    assert_eq!(got, want);

    let (files, _) = run(&["--json"], &inputs);
    let (piped, _) = run_stdin(&["--json"], &cat);
    let mut files: Value = serde_json::from_str(&files).unwrap();
    let piped: Value = serde_json::from_str(&piped).unwrap();
    assert_eq!(piped["cards"][1]["card"], 1, "{piped}");
    assert_eq!(
        piped["cards"][1]["source"]["driver"],
        "driver amdgpu, card1"
    );
    for c in 0..2 {
        assert_eq!(piped["cards"][c]["warnings"], serde_json::json!([LATE]));
        files["cards"][c]["warnings"] = serde_json::json!([LATE]);
    }
    assert_eq!(piped, files);

    let csv_of = |name: &str, stdin: bool| {
        let p = tmp(&format!("cat-{name}.csv"));
        let args = ["-q", "--csv", p.to_str().unwrap()];
        if stdin {
            run_stdin(&args, &cat);
        } else {
            run(&args, &inputs);
        }
        let rings = std::fs::read_to_string(tmp(&format!("cat-{name}.rings.csv"))).unwrap();
        (std::fs::read_to_string(&p).unwrap(), rings)
    };
    let (files, files_rings) = csv_of("files", false);
    let (piped, piped_rings) = csv_of("piped", true);
    assert!(piped.starts_with("card,"), "{piped}");
    assert!(piped_rings.starts_with("card,"), "{piped_rings}");
    assert_eq!(piped, files);
    assert_eq!(piped_rings, files_rings);
}
