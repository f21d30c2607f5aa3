//! Text formatted on worker threads (`-j`) is byte-for-byte the one-thread text: every case
//! of `fixtures/parse/options/cases.tsv` against the outputs the one-thread grtparse wrote
//! before the workers existed (`capture.sh`), on one thread and on several with batches as
//! small as one line (so that name notes, card switches and gaps fall on batch edges); then
//! larger synthetic traces (two cards, every record type, a damaged file) on one thread
//! against several, and `| head` ending the workers at once.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/parse")
}

/// Thread settings every case runs with: one thread, and workers with batches of 1, 3, 7
/// lines and the default.
const THREADS: [&[&str]; 5] = [
    &["-j", "1"],
    &["-j", "2", "--batch-lines", "1"],
    &["-j", "3", "--batch-lines", "3"],
    &["-j", "5", "--batch-lines", "7"],
    &["-j", "4"],
];

/// stdout, then stderr and the exit status as `capture.sh` writes them.
fn outcome(o: &Output) -> (Vec<u8>, String) {
    let mut err = text(&o.stderr);
    err.push_str(&format!("exit {}\n", o.status.code().unwrap_or(-1)));
    (o.stdout.clone(), err)
}

#[test]
fn every_option_case_matches_the_one_thread_goldens() {
    let f = fixtures();
    let cases = std::fs::read_to_string(f.join("options/cases.tsv")).unwrap();
    let mut n = 0;
    for row in cases.lines().filter(|l| !l.is_empty()) {
        let mut cols = row.split('\t');
        let name = cols.next().unwrap();
        let args: Vec<&str> = cols.collect();
        let want_out = std::fs::read(f.join(format!("options/{name}.out"))).unwrap();
        let want_err = std::fs::read_to_string(f.join(format!("options/{name}.err"))).unwrap();
        for threads in THREADS {
            let mut a = args.clone();
            a.extend_from_slice(threads);
            let (out, err) = outcome(&grtparse(&f, &a));
            assert!(
                out == want_out,
                "{name} {threads:?}: stdout differs from options/{name}.out:\n{}",
                text(&out)
            );
            assert_eq!(err, want_err, "{name} {threads:?}: stderr/status");
            n += 1;
        }
    }
    assert!(n >= 19 * THREADS.len(), "only {n} runs");
}

/// Runs `args` with every thread setting and checks they all give the one-thread outcome.
fn same_on_every_thread_count(dir: &Path, args: &[&str]) -> (Vec<u8>, String) {
    let mut one = args.to_vec();
    one.extend_from_slice(&["-j", "1"]);
    let want = outcome(&grtparse(dir, &one));
    for threads in &THREADS[1..] {
        let mut a = args.to_vec();
        a.extend_from_slice(threads);
        let got = outcome(&grtparse(dir, &a));
        assert!(got.0 == want.0, "{a:?}: stdout differs from -j 1");
        assert_eq!(got.1, want.1, "{a:?}: stderr/status differ from -j 1");
    }
    want
}

#[test]
fn two_cards_every_type_and_filters_print_the_same_on_several_threads() {
    let d = temp_dir("par-cards");
    let every = grtrace_format::synth::SynthConfig {
        records: 3000,
        cpus: 3,
        every_type: true,
        gap: Some((1, 500, 4)),
        kernel_lost: vec![(0, 3)],
        ..Default::default()
    };
    grtrace_format::synth::write_files(&every, &d.join("a"), 0, 1).unwrap();
    let other = grtrace_format::synth::SynthConfig {
        records: 2000,
        seed: 9,
        endian: grtrace_format::Endian::Big,
        ..Default::default()
    };
    grtrace_format::synth::write_files(&other, &d.join("b"), 1, 2).unwrap();
    let mut inputs: Vec<String> = (0..3).map(|c| format!("a.grtrace.{c}")).collect();
    inputs.extend((0..2).map(|c| format!("b.grtrace.{c}")));
    let inputs: Vec<&str> = inputs.iter().map(String::as_str).collect();
    for extra in [
        &[][..],
        &["-s", "--wall"],
        &["-q", "--ring", "gfx", "--exclude", "END"],
        &["-q", "-f", "%D %c %s %T.%t %p %a %r %x %n %f [%C] %d\\n"],
    ] {
        let mut a = inputs.clone();
        a.extend_from_slice(extra);
        let (out, err) = same_on_every_thread_count(&d, &a);
        let out = text(&out);
        assert!(out.lines().count() > 1000, "{a:?}: {err}");
        if extra.is_empty() {
            // Both cards, names learnt from both streams' notes.
            assert!(out.contains("card1 ") && out.contains("[vkcube]"), "{out}");
        }
    }
}

#[test]
fn a_damaged_file_prints_everything_before_the_damage_on_several_threads() {
    let d = temp_dir("par-damage");
    let files = synth(&d, "run", 0, 1, 20_000);
    // Cut CPU 1's file inside a record.
    let len = std::fs::metadata(&files[1]).unwrap().len();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&files[1])
        .unwrap();
    f.set_len(len / 2 + 5).unwrap();
    let (out, err) = same_on_every_thread_count(&d, &["run"]);
    assert!(
        err.contains("run.grtrace.1") && err.ends_with("exit 1\n"),
        "{err}"
    );
    assert!(text(&out).lines().count() > 10_000);
}

#[test]
fn head_closing_the_pipe_stops_the_workers_quietly() {
    let d = temp_dir("par-pipe");
    synth(&d, "run", 0, 1, 400_000);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_grtparse"));
    let cmd = cmd
        .current_dir(&d)
        .args(["run", "-j", "4", "--batch-lines", "64"]);
    // The run must end without the rest of the 400,000 lines being formatted once the
    // reader is gone (nothing to measure here but that it ends quietly).
    let (first, o) = grtrace_cli::first_line_then_close(cmd);
    assert!(first.starts_with("card0  0        1 "), "{first}");
    assert!(o.stderr.is_empty(), "{}", text(&o.stderr));
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn standard_input_and_a_full_disk_with_threads() {
    let d = temp_dir("par-stdin");
    let files = synth(&d, "run", 0, 1, 5000);
    // A merged stream on stdin (one thread, whatever -j says) prints what the files do.
    let merged = d.join("merged.grt");
    let o = grtparse(&d, &["run", "-q", "-O", "-d", "merged.grt"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let from_files = grtparse(&d, &["run", "-q", "-j", "3", "--batch-lines", "5"]);
    let piped = grtparse_in(
        &d,
        &["-", "-q", "-j", "3"],
        std::fs::File::open(&merged).unwrap(),
    );
    assert!(piped.stdout == from_files.stdout, "{}", text(&piped.stderr));
    // A write error on a worker's batch reaches the status.
    let o = grtparse(
        &d,
        &[
            "run",
            "-q",
            "-j",
            "3",
            "--batch-lines",
            "5",
            "-o",
            "/dev/full",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("/dev/full"), "{}", text(&o.stderr));
    let _ = files;
}
