//! grtparse's inputs under hostile or unusual conditions (issue 14 "crashes" and "wrong
//! answers", issue 10 "devices and sessions"): stdin twice, several cards under one base name,
//! stale files of another session, stray huge CPU numbers, extreme wall-clock anchors and
//! counts too wide for the summary's columns.

mod common;

use common::*;
use std::path::Path;

use grtrace_format::builder::Builder;
use grtrace_format::record::{Body, EventBody, Lost, StreamHeader};
use grtrace_format::Event;

#[test]
fn stdin_given_twice_is_a_usage_error() {
    let d = temp_dir("stdin2");
    let o = grtparse(&d, &["-i", "-", "-i", "-"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("stdin (-) is given more than once"));
    let o = grtparse(&d, &["-", "-i", "-"]);
    assert_eq!(o.status.code(), Some(2));
}

/// `grtrace -d card0 -d card1 -o two` writes two.card0.grtrace.* and two.card1.grtrace.*:
/// `grtparse two` reads both, each line names its own card, and sequences are checked per
/// card (the two cards both number their CPUs' records from 1).
#[test]
fn every_card_of_a_base_name_is_read_and_labelled() {
    let d = temp_dir("cards");
    synth(&d, "two.card0", 0, 0x10, 600);
    synth(&d, "two.card1", 1, 0x20, 400);
    let one = grtparse(&d, &["two.card0", "-q"]);
    let n0 = text(&one.stdout).lines().count();
    let one = grtparse(&d, &["two.card1", "-q"]);
    let n1 = text(&one.stdout).lines().count();
    for args in [&["two", "-q"][..], &["two.card0", "two.card1", "-q"][..]] {
        let o = grtparse(&d, args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
        assert!(!err.contains("sequence"), "{err}");
        let out = text(&o.stdout);
        let c0 = out.lines().filter(|l| l.starts_with("card0 ")).count();
        let c1 = out.lines().filter(|l| l.starts_with("card1 ")).count();
        assert_eq!((c0, c1), (n0, n1), "{args:?}");
        assert!(n0 > 500 && n1 > 300);
    }
    // The summary names both; a dump cannot hold two cards and says so.
    let o = grtparse(&d, &["two"]);
    assert!(text(&o.stdout).contains("Summary (card0, card1):"));
    let o = grtparse(&d, &["two", "-d", "m.bin"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("several cards (card0, card1)"));
}

/// The summary of two cards of 2 CPUs each: a table per card with that card's 2 CPUs (the
/// same table the card gives alone), not 2 columns adding CPU N of both cards; the JSON
/// keeps its totals (what kernel/verify.sh reads) and lists every card's own figures.
#[test]
fn the_summary_of_several_cards_is_per_card() {
    let d = temp_dir("cardsum");
    synth(&d, "two.card0", 0, 0x10, 600);
    synth(&d, "two.card1", 1, 0x20, 400);
    // The table part of a summary: from the header line to the first blank line.
    let table = |out: &str| -> String {
        let s = out.find("\nname ").expect("summary table") + 1;
        let e = s + out[s..].find("\n\n").unwrap();
        out[s..e].to_string()
    };
    let alone: Vec<String> = ["two.card0", "two.card1"]
        .iter()
        .map(|b| {
            let json = d.join(format!("{b}.json"));
            let o = grtparse(&d, &[b, "--summary-json", json.to_str().unwrap()]);
            table(&text(&o.stdout))
        })
        .collect();
    let json = d.join("two.json");
    let o = grtparse(&d, &["two", "--summary-json", json.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let sum = &out[out.find("\nSummary (card0, card1):\n").expect("summary")..];
    for (c, t) in alone.iter().enumerate() {
        assert!(t.lines().next().unwrap().contains("CPU1"), "{t}");
        assert!(!t.contains("CPU2"), "{t}");
        let head = format!("\ncard{c}:\n");
        let at = sum
            .find(&head)
            .unwrap_or_else(|| panic!("card{c} table: {sum}"))
            + head.len();
        assert_eq!(&sum[at..at + t.len()], t.as_str(), "card{c}");
    }
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let one = |c: usize| -> serde_json::Value {
        let p = d.join(format!("two.card{c}.json"));
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    let (a, b) = (one(0), one(1));
    assert_eq!(v["schema"], "grtparse-summary/1");
    assert!(
        a.get("per_card").is_none(),
        "one card: the shape is unchanged"
    );
    let n = |x: &serde_json::Value, k: &str| x[k].as_u64().unwrap();
    assert_eq!(n(&v, "events"), n(&a, "events") + n(&b, "events"));
    assert_eq!(
        n(&v["lost"], "kernel"),
        n(&a["lost"], "kernel") + n(&b["lost"], "kernel")
    );
    // Four CPU entries: two per card, each with its card.
    let cpus = v["cpus"].as_array().unwrap();
    assert_eq!(cpus.len(), 4, "{cpus:?}");
    let per = v["per_card"].as_array().expect("per_card");
    for (c, alone) in [a, b].iter().enumerate() {
        assert_eq!(per[c]["card"], c as u64);
        for k in [
            "events",
            "notes",
            "counts",
            "cpus",
            "lost",
            "device_dropped",
        ] {
            assert_eq!(per[c][k], alone[k], "card{c} {k}");
        }
        let mine: Vec<&serde_json::Value> = cpus.iter().filter(|e| e["card"] == c as u64).collect();
        assert_eq!(mine.len(), 2);
        for (e, want) in mine.iter().zip(alone["cpus"].as_array().unwrap()) {
            assert_eq!(e["cpu"], want["cpu"]);
            assert_eq!(e["events"], want["events"]);
        }
    }
}

/// A 2-CPU recording written over an older 4-CPU one leaves run.grtrace.2 and .3 of another
/// session: refused with one line naming the files, unless --force.
#[test]
fn files_of_another_session_are_refused_unless_forced() {
    let d = temp_dir("sessions");
    synth(&d, "old", 0, 0x11, 300);
    synth(&d, "run", 0, 0x22, 300);
    std::fs::rename(d.join("old.grtrace.0"), d.join("run.grtrace.2")).unwrap();
    std::fs::rename(d.join("old.grtrace.1"), d.join("run.grtrace.3")).unwrap();
    let o = grtparse(&d, &["run", "-q"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(o.stdout.is_empty(), "nothing is printed from a mixed merge");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(
            "run.grtrace.2: session 0x11 of card0 differs from run.grtrace.0 (session 0x22)"
        ),
        "{err}"
    );
    let o = grtparse(&d, &["run", "-q", "--force"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("(merged: --force)"));
}

/// A stray run.grtrace.4294967295 beside a recording used to abort with a 103 GB allocation.
#[test]
fn a_stray_huge_cpu_file_is_one_short_warning() {
    let d = temp_dir("huge");
    synth(&d, "run", 0, 1, 200);
    for cpu in [4_294_967_295u32, 5_000_000] {
        let mut h = StreamHeader::new(cpu, 0, "t");
        h.session_id = 1;
        let mut b = Builder::new();
        b.on(cpu).pid(1).event(Event(0)).at(1);
        std::fs::write(d.join(format!("run.grtrace.{cpu}")), b.stream(&h)).unwrap();
    }
    let o = grtparse(&d, &["run", "-q", "--force"]);
    let err = text(&o.stderr);
    assert!(err.len() < 2000, "{} bytes of warnings", err.len());
    assert!(
        err.contains("missing CPU file(s) for CPU 2-4999999,5000001-4294967294 "),
        "{err}"
    );
    assert!(o.status.code() == Some(1) && !o.stdout.is_empty());
}

fn one_stream(dir: &Path, name: &str, anchor: (u64, u64), recs: &[(u64, Body<'static>)]) {
    let mut h = StreamHeader::new(0, 0, "t");
    h.anchor_realtime_ns = anchor.0;
    h.anchor_clock_ns = anchor.1;
    let mut b = Builder::new();
    b.pid(1);
    for &(t, body) in recs {
        b.record(body).at(t);
    }
    std::fs::write(dir.join(name), b.stream(&h)).unwrap();
}

/// `--wall` with an anchor that puts records past the u64 nanosecond range or before 1970
/// prints the true time, not a wrapped one.
#[test]
fn wall_clock_with_an_extreme_anchor_does_not_wrap() {
    let d = temp_dir("wall");
    let ev = || {
        Body::Event(EventBody {
            code: grtrace_format::Event::COMMIT,
            ..EventBody::default()
        })
    };
    one_stream(&d, "late", (u64::MAX, 0), &[(1_000_000_005, ev())]);
    let o = grtparse(&d, &["late", "--wall", "-q"]);
    let out = text(&o.stdout);
    // u64::MAX + 1_000_000_005 ns = 18446744074.709551620 s
    assert!(out.contains(" 18446744074.709551620 "), "{out}");
    one_stream(&d, "early", (5, 3_000_000_000), &[(1_000_000_000, ev())]);
    let o = grtparse(&d, &["early", "--wall", "-q", "-f", "%z|%T.%t\\n"]);
    // 5 + 1e9 - 3e9 ns = -1.999999995 s
    assert_eq!(text(&o.stdout), "-1.999999995|-1.999999995\n");
}

/// Summary columns grow with the counts: 19-digit losses on two CPUs stay two numbers.
#[test]
fn summary_columns_stay_apart_at_nineteen_digits() {
    let d = temp_dir("wide");
    let big = 1_234_567_890_123_456_789u64;
    let lost = |cpu| {
        Body::Lost(Lost {
            cpu,
            source: 1,
            count: big,
            first_ns: 1,
            last_ns: 2,
        })
    };
    one_stream(
        &d,
        "wide",
        (0, 0),
        &[(10, lost(0)), (11, lost(1)), (12, lost(2))],
    );
    let o = grtparse(&d, &["wide", "-O"]);
    let out = text(&o.stdout);
    let row = out
        .lines()
        .find(|l| l.starts_with("lost(kernel)"))
        .unwrap_or_else(|| panic!("{out}"));
    let fields: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        fields,
        [
            "lost(kernel)",
            "1234567890123456789",
            "1234567890123456789",
            "1234567890123456789",
            "3703703670370370367"
        ],
        "{row}"
    );
}

/// Codes a later minor version adds (FORMAT.md §2.1) are printed by number with their raw
/// arguments, counted per code and as unknown, and never dropped or named as a 1.0 code;
/// the binary dump keeps their records byte for byte.
#[test]
fn event_codes_of_a_later_minor_version_flow_through_by_number() {
    let d = temp_dir("future-codes");
    let h = StreamHeader::new(0, 0, "t");
    let mut b = Builder::new();
    b.pid(1);
    b.event(Event::COMMIT).job(3, 0, 1).at(1_000);
    for (i, code) in [26u16, 63, 300].into_iter().enumerate() {
        b.event(Event(code))
            .job(3, 0, 1)
            .at(2_000 + i as u64)
            .args(7, 8, 9, 10);
    }
    b.event(Event::END).job(3, 0, 1).at(9_000);
    let data = b.stream(&h);
    std::fs::write(d.join("run.grtrace.0"), &data).unwrap();
    let json = d.join("sum.json");
    let o = grtparse(&d, &["run", "--summary-json", json.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let names: Vec<&str> = out
        .lines()
        .take(5)
        .map(|l| l.split_whitespace().nth(5).unwrap_or(""))
        .collect();
    assert_eq!(
        names,
        ["COMMIT", "EVENT_26", "EVENT_63", "EVENT_300", "END"],
        "{out}"
    );
    assert!(
        out.contains(" EVENT_300 ") && out.contains("a0=7 a1=8 a2=9 a3=10"),
        "{out}"
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(
        (v["events"].as_u64(), v["unknown_event_codes"].as_u64()),
        (Some(5), Some(3))
    );
    assert_eq!(v["counts"]["EVENT_26"], 1);
    assert_eq!(v["counts"]["EVENT_63"], 1);
    // The dump copies every record, unknown codes too.
    let o = grtparse(&d, &["run", "-q", "-O", "-d", "dump.grt"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let dump = std::fs::read(d.join("dump.grt")).unwrap();
    let hs = grtrace_format::abi::STREAM_HEADER_SIZE;
    assert_eq!(dump[hs..], data[hs..]);
}

/// grtparse reading `bytes` on stdin (a file, so the bytes are read as a stream) in `dir`.
fn grtparse_stdin(dir: &Path, args: &[&str], bytes: &[u8]) -> std::process::Output {
    let p = dir.join("stdin.bytes");
    std::fs::write(&p, bytes).unwrap();
    grtparse_in(dir, args, std::fs::File::open(&p).unwrap())
}

/// Card0's and card1's CPU 0 streams of two cards of different drivers, and their
/// concatenation (`cat two.card0.grtrace.0 two.card1.grtrace.0`).
fn two_drivers(d: &Path) -> (Vec<u8>, Vec<u8>) {
    synth(d, "two.card0", 0, 0x10, 300);
    synth(d, "two.card1", 1, 0x20, 200);
    let p1 = d.join("two.card1.grtrace.0");
    let mut b1 = std::fs::read(&p1).unwrap();
    // The header's driver field (FORMAT.md §2.1, offset 56, 32 bytes).
    b1[56..88].fill(0);
    b1[56..62].copy_from_slice(b"amdgpu");
    std::fs::write(&p1, &b1).unwrap();
    let b0 = std::fs::read(d.join("two.card0.grtrace.0")).unwrap();
    let cat = [b0.clone(), b1].concat();
    (b0, cat)
}

/// `cat two.card0.grtrace.0 two.card1.grtrace.0 | grtparse -`: card1's stream header
/// comes only mid-stream, yet `-v` describes it like an input given apart (its card and
/// driver, and where it starts), its lines carry card1, the summary names both cards, and
/// its stream is checked for a clean end like an input's: the same lines as from the files.
#[test]
fn a_card_that_starts_inside_stdin_is_described_and_labelled_like_an_input() {
    let d = temp_dir("latecard");
    let (b0, cat) = two_drivers(&d);
    let files = grtparse(&d, &["two.card0.grtrace.0", "two.card1.grtrace.0", "-v"]);
    let piped = grtparse_stdin(&d, &["-", "-v"], &cat);
    let (ferr, perr) = (text(&files.stderr), text(&piped.stderr));
    assert_eq!(piped.status.code(), files.status.code(), "{perr}");
    let described = |err: &str, card: u32| -> Vec<String> {
        err.lines()
            .filter(|l| l.contains(&format!(", card {card}, ")))
            .map(|l| {
                // `grtparse: input NAME: cpu 0, card ..., session 0x20[, where]`
                let rest = &l[l.find(": cpu").expect(l)..];
                let (head, tail) = rest.split_once(", session ").unwrap();
                format!("{head}, session {}", tail.split(',').next().unwrap())
            })
            .collect()
    };
    assert_eq!(
        perr.lines().filter(|l| l.contains("card1, amdgpu")).collect::<Vec<_>>(),
        [format!(
            "grtparse: input (stdin): cpu 0, card1, amdgpu, little-endian, version 1.0, session 0x20, from byte {}",
            b0.len()
        )],
        "{perr}"
    );
    assert_eq!(described(&perr, 1), described(&ferr, 1));
    let (fout, pout) = (text(&files.stdout), text(&piped.stdout));
    let card1 = |s: &str| s.lines().filter(|l| l.starts_with("card1 ")).count();
    assert!(card1(&pout) > 0);
    assert_eq!(card1(&pout), card1(&fout));
    assert!(pout.contains("Summary (card0, card1):"), "{pout}");
    // Card1's stream ends with its STREAM_INFO: no warning of an unended stream either way;
    // cut before its end, the piped run says so, as the files run does.
    assert!(!perr.contains("did not end cleanly"), "{perr}");
    let cut = grtparse_stdin(&d, &["-", "-q"], &cat[..cat.len() - 72]);
    assert!(
        text(&cut.stderr).contains("1 stream(s) did not end cleanly"),
        "{}",
        text(&cut.stderr)
    );
}

/// A dump (`-d`) is one merged stream of one card: a second card that starts inside stdin
/// ends the input there with one line naming stdin and the byte, exit 1, and the dump keeps
/// every record of the first card (it used to take card1's records under card0's header).
#[test]
fn a_dump_stops_at_a_card_that_starts_inside_stdin() {
    let d = temp_dir("latedump");
    let (b0, cat) = two_drivers(&d);
    let o = grtparse_stdin(&d, &["-", "-q", "-O", "-d", "dump"], &cat);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(
        err.lines().filter(|l| l.contains("byte")).collect::<Vec<_>>(),
        [format!("grtparse: (stdin): byte {}: a stream of card1 starts here, and this run takes card0 only (a merged stream holds one card): read each card's streams apart", b0.len())],
        "{err}"
    );
    let alone = grtparse(&d, &["two.card0.grtrace.0", "-q", "-O", "-d", "alone"]);
    assert_eq!(alone.status.code(), Some(0), "{}", text(&alone.stderr));
    assert_eq!(
        std::fs::read(d.join("dump")).unwrap(),
        std::fs::read(d.join("alone")).unwrap()
    );
}

/// Two recordings of one card concatenated on stdin: not merged silently. The run stops at
/// the second header with one line naming stdin and the byte, exit 1, after printing every
/// line of the first recording; `--force` reads both, with a warning.
#[test]
fn a_second_recording_inside_stdin_is_refused_unless_forced() {
    let d = temp_dir("latesession");
    synth(&d, "old", 0, 0x11, 300);
    synth(&d, "new", 0, 0x22, 300);
    let old = std::fs::read(d.join("old.grtrace.0")).unwrap();
    let cat = [old.clone(), std::fs::read(d.join("new.grtrace.0")).unwrap()].concat();
    let o = grtparse_stdin(&d, &["-"], &cat);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("grtparse: (stdin): byte {}: session 0x22 of card0 starts here after a stream of card0 of session 0x11: streams of two recordings, not merged (--force merges them)\n", old.len())),
        "{err}"
    );
    let alone = grtparse(&d, &["old.grtrace.0"]);
    let lines = |o: &std::process::Output| {
        text(&o.stdout)
            .lines()
            .filter(|l| l.starts_with("card0 "))
            .count()
    };
    assert_eq!(lines(&o), lines(&alone));
    let forced = grtparse_stdin(&d, &["-", "--force"], &cat);
    let ferr = text(&forced.stderr);
    assert_eq!(forced.status.code(), Some(0), "{ferr}");
    assert!(ferr.contains("session 0x22 of card0 starts here after a stream of card0 of session 0x11: streams of two recordings, not merged (--force merges them) (merged: --force)"), "{ferr}");
    assert!(lines(&forced) > lines(&alone));
}
