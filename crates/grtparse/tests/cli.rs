//! grtparse as a user runs it: golden outputs of the fixtures, inputs (base names, file lists,
//! stdin), bad input (one-line error naming file and offset, non-zero exit, everything before
//! the damage printed), the -d round trip, filters, usage errors and `| head`.

mod common;

use common::*;
use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/parse")
}

fn golden(name: &str) -> String {
    std::fs::read_to_string(fixtures().join(name)).unwrap()
}

/// Writes a synthetic two-CPU trace `dir/run.grtrace.{0,1}` of `records` records.
fn synth_run(dir: &Path, records: u64) {
    let cfg = grtrace_format::synth::SynthConfig {
        records,
        ..Default::default()
    };
    let outs: Vec<std::fs::File> = (0..2)
        .map(|c| std::fs::File::create(dir.join(format!("run.grtrace.{c}"))).unwrap())
        .collect();
    grtrace_format::synth::generate(&cfg, outs).unwrap();
}

/// Copies a fixture run (`multi`, `gap`, ...) into `dir`.
fn copy_run(run: &str, dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(fixtures().join(run)).unwrap() {
        let p = e.unwrap().path();
        let dst = dir.join(p.file_name().unwrap());
        std::fs::copy(&p, &dst).unwrap();
        out.push(dst);
    }
    out.sort();
    out
}

/// The text lines before the summary.
fn lines_only(s: &str) -> &str {
    s.split("\nSummary (").next().unwrap()
}

#[test]
fn golden_outputs_match() {
    let f = fixtures();
    for (args, file) in [
        (vec!["multi/run"], "multi.txt"),
        (vec!["gap/run"], "gap.txt"),
        (vec!["every/run", "-s"], "every.txt"),
        (
            vec!["gap/run", "-a", "SUBMIT,END", "--ring", "gfx", "-q"],
            "gap-filtered.txt",
        ),
        (
            vec![
                "every/run",
                "-q",
                "-f",
                "%D %c %s %T.%t %p %a %r %x %n %f [%C]\\n",
                "-F",
                "MSG,%T.%t MSG %d\\n",
            ],
            "every-format.txt",
        ),
        (vec!["bigend/run"], "multi.txt"),
    ] {
        let o = grtparse(&f, &args);
        assert_eq!(text(&o.stdout), golden(file), "grtparse {args:?}");
        assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
    }
}

#[test]
fn losses_are_inline_in_the_summary_and_warned_about() {
    let o = grtparse(&fixtures(), &["gap/run"]);
    let out = text(&o.stdout);
    assert!(out.contains("LOST        - - - count=3 source=gap"));
    assert!(out.contains("LOST        - - - count=4 source=kernel"));
    assert!(out.contains("Sequence gaps: 1 gaps, 3 records"));
    assert!(
        out.contains("Kernel dropped: 4 records in LOST notes; device dropped counter at stop: 4")
    );
    assert_eq!(
        text(&o.stderr),
        "grtparse: warning: 7 record(s) lost (see LOST lines and the summary)\n"
    );
}

#[test]
fn file_lists_and_stdin_read_like_a_base_name() {
    let d = temp_dir("inputs");
    let files = copy_run("multi", &d);
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let by_base = grtparse(&d, &["run"]);
    let mut args: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
    args.reverse();
    let by_list = grtparse(&d, &args);
    assert_eq!(text(&by_list.stdout), text(&by_base.stdout));
    assert_eq!(text(&by_base.stdout), golden("multi.txt"));

    // `cat run.grtrace.* | grtparse -i -`
    let mut cat = Vec::new();
    for f in &files {
        cat.extend(std::fs::read(f).unwrap());
    }
    let mut reader = Command::new(env!("CARGO_BIN_EXE_grtparse"));
    let (o, fed) = grtrace_cli::run_fed(reader.args(["-i", "-"]), &cat);
    fed.unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), golden("multi.txt"));
}

#[test]
fn dump_to_stdout_pipes_into_a_reader() {
    // `grtparse -d - run | grtparse -i -`: the stream alone owns stdout (text is implied off,
    // the summary goes to stderr), and the reader prints what the files print.
    let f = fixtures();
    let dump = grtparse(&f, &["multi/run", "-d", "-"]);
    assert!(dump.status.success(), "{}", text(&dump.stderr));
    assert!(dump.stdout.starts_with(b"GRTRACE\0"), "stdout is a stream");
    assert!(text(&dump.stderr).contains("Summary"), "summary on stderr");
    let mut reader = Command::new(env!("CARGO_BIN_EXE_grtparse"));
    let (o, fed) = grtrace_cli::run_fed(reader.args(["-i", "-", "-q"]), &dump.stdout);
    fed.unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), lines_only(&golden("multi.txt")));
}

#[test]
fn dump_round_trips_and_marks_gaps_checked() {
    let d = temp_dir("dump");
    copy_run("gap", &d);
    let o = grtparse(&d, &["run", "-q", "-O", "-d", "merged.bin"]);
    assert!(o.status.success());
    assert!(o.stdout.is_empty(), "-q -O prints nothing");
    let dump = std::fs::read(d.join("merged.bin")).unwrap();
    assert_eq!(&dump[..8], b"GRTRACE\0");
    let cpu = u32::from_ne_bytes(dump[20..24].try_into().unwrap());
    let flags = u32::from_ne_bytes(dump[28..32].try_into().unwrap());
    assert_eq!(cpu, 0xffff_ffff);
    assert_eq!(
        flags & 0b101,
        0b101,
        "MERGED and SEQ_CHECKED (gaps were found)"
    );
    // Reading the dump gives the same lines, the gap now coming from a NOTE_LOST source 3,
    // counted once.
    let again = grtparse(&d, &["merged.bin"]);
    let orig = golden("gap.txt");
    assert_eq!(lines_only(&text(&again.stdout)), lines_only(&orig));
    assert!(text(&again.stdout).contains("Sequence gaps: 1 gaps, 3 records"));
    // A dump of the dump is byte-identical.
    let o = grtparse(&d, &["merged.bin", "-q", "-O", "-d", "twice.bin"]);
    assert!(o.status.success());
    assert_eq!(std::fs::read(d.join("twice.bin")).unwrap(), dump);
    // Filtered dumps are SEQ_CHECKED even without gaps, and keep the notes.
    let d2 = temp_dir("dump2");
    copy_run("multi", &d2);
    let o = grtparse(&d2, &["run", "-a", "END", "-q", "-O", "-d", "end.bin"]);
    assert!(o.status.success());
    let o = grtparse(&d2, &["end.bin", "-q"]);
    let out = text(&o.stdout);
    assert_eq!(out.matches(" END ").count(), 7);
    assert_eq!(out.matches(" SUBMIT ").count(), 0);
    assert!(
        out.contains(" PROCESS "),
        "notes are kept in filtered dumps"
    );
    assert!(o.stderr.is_empty(), "no false gaps: {}", text(&o.stderr));
}

#[test]
fn filters_select_what_a_user_asks_for() {
    let f = fixtures();
    let o = grtparse(&f, &["multi/run", "-q", "--pid", "4102"]);
    let out = text(&o.stdout);
    assert!(!out.is_empty());
    for l in out.lines() {
        let fields: Vec<&str> = l.split_whitespace().collect();
        assert!(
            fields[4] == "4102" || fields[5] == "RING" || fields[5] == "STREAM_INFO",
            "{l}"
        );
    }
    let o = grtparse(&f, &["multi/run", "-q", "-a", "SUBMIT", "--ctx", "2"]);
    let out = text(&o.stdout);
    assert!(out.lines().count() >= 1);
    assert!(out
        .lines()
        .all(|l| l.split_whitespace().nth(7) == Some("2") && l.contains(" SUBMIT ")));
    // Time window: 0.0002 s to 0.0004 s after the first record.
    let o = grtparse(&f, &["multi/run", "-q", "-w", "0.0002:0.0004"]);
    let out = text(&o.stdout);
    assert!(out.lines().count() >= 1);
    for l in out.lines() {
        let t: f64 = l.split_whitespace().nth(3).unwrap().parse().unwrap();
        assert!((0.0002..=0.0004).contains(&t), "{l}");
    }
    // --exclude excludes (it was -A before -A became blkparse's hex mask).
    let o = grtparse(
        &f,
        &[
            "multi/run",
            "-q",
            "--exclude",
            "PROCESS,RING,STREAM_INFO,QUEUE",
        ],
    );
    let out = text(&o.stdout);
    assert!(!out.contains(" PROCESS ") && !out.contains(" QUEUE ") && out.contains(" SUBMIT "));
}

#[test]
fn bad_input_names_file_and_offset_and_keeps_what_came_before() {
    let d = temp_dir("bad");
    copy_run("multi", &d);
    let full = grtparse(&d, &["run", "-q"]);
    // Truncate CPU 1 in the middle of its 10th record (offset 128 + 9 records).
    let p = d.join("run.grtrace.1");
    let data = std::fs::read(&p).unwrap();
    let cut_at = {
        // Walk the records to find the start of the 10th.
        let mut off = 128usize;
        for _ in 0..9 {
            off += u16::from_le_bytes([data[off + 2], data[off + 3]]) as usize;
        }
        off
    };
    let size = u16::from_le_bytes([data[cut_at + 2], data[cut_at + 3]]) as usize;
    std::fs::write(&p, &data[..cut_at + size - 8]).unwrap();
    let o = grtparse(&d, &["run", "-q"]);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert_eq!(
        err.lines().next().unwrap(),
        format!(
            "grtparse: run.grtrace.1: byte {cut_at}: truncated record ({} of {size} bytes)",
            size - 8
        )
    );
    // Every line of the damaged CPU before the cut, and all of the others, are printed.
    let out = text(&o.stdout);
    let lost_lines = text(&full.stdout)
        .lines()
        .filter(|l| !out.contains(*l))
        .count();
    let cpu1_total = text(&full.stdout)
        .lines()
        .filter(|l| l.split_whitespace().nth(1) == Some("1"))
        .count();
    assert_eq!(lost_lines, cpu1_total - 9);

    // Wrong magic, future version, empty file, missing CPU file: one line each, exit 1.
    type Damage = Box<dyn Fn(&mut Vec<u8>)>;
    let cases: Vec<(&str, Damage, &str)> = vec![
        (
            "magic",
            Box::new(|b: &mut Vec<u8>| b[0] = b'X'),
            "byte 0: not a grtrace stream (bad magic)",
        ),
        (
            "future",
            Box::new(|b: &mut Vec<u8>| b[10] = 3),
            "byte 10: unsupported future format version 3.0",
        ),
        (
            "empty",
            Box::new(|b: &mut Vec<u8>| b.clear()),
            "byte 0: empty file",
        ),
        (
            "short",
            Box::new(|b: &mut Vec<u8>| b.truncate(100)),
            "truncated stream header",
        ),
    ];
    for (tag, damage, expect) in cases {
        let d = temp_dir(tag);
        copy_run("multi", &d);
        let p = d.join("run.grtrace.2");
        let mut b = std::fs::read(&p).unwrap();
        damage(&mut b);
        std::fs::write(&p, &b).unwrap();
        let o = grtparse(&d, &["run", "-q", "-O"]);
        assert_eq!(o.status.code(), Some(1), "{tag}");
        let err = text(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{tag}: {err}");
        assert!(
            err.contains("run.grtrace.2") && err.contains(expect),
            "{tag}: {err}"
        );
        // Named explicitly, the damaged file alone is an error too.
        let o = grtparse(&d, &["run.grtrace.2", "-q"]);
        assert_eq!(o.status.code(), Some(1));
    }

    let d = temp_dir("missing");
    copy_run("multi", &d);
    std::fs::remove_file(d.join("run.grtrace.1")).unwrap();
    let o = grtparse(&d, &["run", "-q"]);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(err.contains("missing CPU file(s) for CPU 1"), "{err}");
    let out = text(&o.stdout);
    assert!(
        out.lines()
            .any(|l| l.split_whitespace().nth(1) == Some("3")),
        "CPUs after the hole are parsed"
    );
}

#[test]
fn usage_errors_exit_2() {
    let f = fixtures();
    for args in [
        vec!["multi/run", "-a", "NOPE"],
        vec!["multi/run", "-w", "x"],
        vec!["multi/run", "-f", "%q"],
        vec!["multi/run", "-F", "SUBMIT"],
        vec!["multi/run", "-d", "-", "-o", "-"],
        vec![],
        vec!["--no-such-option"],
    ] {
        let o = grtparse(&f, &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
        assert!(!o.stderr.is_empty());
    }
}

#[test]
fn head_closing_the_pipe_is_quiet() {
    let d = temp_dir("pipe");
    synth_run(&d, 50_000);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_grtparse"));
    let (first, o) = grtrace_cli::first_line_then_close(cmd.current_dir(&d).arg("run"));
    assert!(first.starts_with("card0  0        1 "), "{first}");
    assert!(o.stderr.is_empty(), "{}", text(&o.stderr));
    assert_eq!(
        o.status.code(),
        Some(0),
        "a closed pipe is a quiet, successful end"
    );
}

#[test]
fn a_full_disk_is_an_error_for_text_and_dump() {
    // Writes happen on a writer thread; its error must still reach the user and the exit code.
    let d = temp_dir("full");
    synth_run(&d, 50_000);
    for args in [
        &["run", "-q", "-o", "/dev/full"][..],
        &["run", "-q", "-O", "-d", "/dev/full"][..],
    ] {
        let o = grtparse(&d, args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let e = text(&o.stderr);
        assert!(
            e.starts_with("grtparse: /dev/full: No space left"),
            "{args:?}: {e}"
        );
        assert_eq!(e.lines().count(), 1, "{e}");
    }
}

/// Writes one CPU-0 stream of `events` SUBMIT events, event `i` by pid `pid(i)`, ending with a
/// NOTE_STREAM_INFO when `ended` (a recorder killed with SIGKILL writes none).
fn write_stream(path: &Path, events: u64, pid: impl Fn(u64) -> u32, ended: bool) {
    use grtrace_format::{Body, EventBody, Stamp, StreamHeader, StreamInfo, StreamWriter};
    let h = StreamHeader::new(0, 0, "test");
    let f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut w = StreamWriter::new(f, &h).unwrap();
    for i in 0..events {
        let st = Stamp {
            cpu: 0,
            pid: pid(i),
            time_ns: 1000 + i,
            seq: i,
        };
        let ev = EventBody {
            code: grtrace_format::Event::SUBMIT,
            seqno: i,
            ..Default::default()
        };
        w.write(&st, &Body::Event(ev)).unwrap();
    }
    if ended {
        let st = Stamp {
            cpu: 0,
            time_ns: 1000 + events,
            seq: events,
            ..Default::default()
        };
        let info = StreamInfo {
            kernel_dropped: 0,
            records: events,
            bytes: 0,
            flags: grtrace_format::abi::INFO_STOPPED_CLEANLY,
        };
        w.write(&st, &Body::StreamInfo(info)).unwrap();
    }
    w.get_mut().flush().unwrap();
}

#[test]
fn an_empty_event_name_in_a_format_spec_is_a_usage_error_not_a_panic() {
    let f = fixtures();
    for spec in [",%a", " ,%a\\n", ",", "SUBMIT,%", "NOPE,%a", "SUBMIT,%9"] {
        let o = grtparse(&f, &["multi/run", "-q", "-F", spec]);
        let e = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "-F {spec:?}: {e}");
        assert!(!e.contains("panicked"), "{e}");
        assert_eq!(
            e.lines().next().map(|l| l.starts_with("grtparse: -F")),
            Some(true),
            "{e}"
        );
    }
    let o = grtparse(&f, &["multi/run", "-q", "-F", ",%a"]);
    assert!(text(&o.stderr).contains("no event name"));
}

#[test]
fn an_output_that_is_an_input_is_refused_and_the_input_kept() {
    let d = temp_dir("same");
    let files = copy_run("multi", &d);
    let f0 = files[0].file_name().unwrap().to_str().unwrap().to_string();
    let size = std::fs::metadata(&files[0]).unwrap().len();
    std::fs::hard_link(&files[0], d.join("alias")).unwrap();
    for args in [
        vec![f0.as_str(), "-o", f0.as_str()],
        vec![f0.as_str(), "-q", "-O", "-d", f0.as_str()],
        vec!["run", "-o", f0.as_str()],
        vec!["run", "-d", "alias", "-O"],
        vec!["-i", "run", "-o", "./alias"],
    ] {
        let o = grtparse(&d, &args);
        let e = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {e}");
        assert!(e.contains("refusing to overwrite"), "{args:?}: {e}");
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(o.stdout.is_empty(), "{args:?}");
        assert_eq!(
            std::fs::metadata(&files[0]).unwrap().len(),
            size,
            "{args:?}"
        );
    }
    // Another file is fine.
    let o = grtparse(&d, &["run", "-q", "-o", "out.txt"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
}

#[test]
fn outputs_that_cannot_be_created_are_named() {
    let f = fixtures();
    let o = grtparse(&f, &["multi/run", "-o", "/nonexistent-dir/out.txt"]);
    assert_eq!(o.status.code(), Some(1));
    let e = text(&o.stderr);
    assert_eq!(
        e.trim_end(),
        "grtparse: /nonexistent-dir/out.txt: cannot create: No such file or directory (os error 2)"
    );
    for (opt, empty) in [("-o", ""), ("-d", "")] {
        let o = grtparse(&f, &["multi/run", opt, empty]);
        assert_eq!(o.status.code(), Some(2), "{opt} ''");
    }
}

#[test]
fn a_directory_input_says_it_is_a_directory_and_d_reads_from_one() {
    let f = fixtures();
    let o = grtparse(&f, &["multi"]);
    assert_eq!(o.status.code(), Some(1));
    let e = text(&o.stderr);
    assert!(
        e.contains("multi: is a directory") && e.contains("-D multi run"),
        "{e}"
    );
    assert_eq!(e.lines().count(), 1);
    // blkparse -D: relative inputs are looked up in DIR.
    let want = grtparse(&f, &["multi/run"]);
    let got = grtparse(&f, &["-D", "multi", "run"]);
    assert_eq!(got.status.code(), Some(0), "{}", text(&got.stderr));
    assert_eq!(got.stdout, want.stdout);
    let got = grtparse(
        Path::new("/"),
        &["-D", f.join("multi").to_str().unwrap(), "run"],
    );
    assert_eq!(got.stdout, want.stdout);
    let o = grtparse(&f, &["-D", "nosuchdir", "run"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn rings_are_taken_by_name_or_number_and_an_unknown_name_is_an_error() {
    let f = fixtures();
    let by_name = grtparse(&f, &["multi/run", "-q", "-a", "SUBMIT", "--ring", "gfx"]);
    assert_eq!(by_name.status.code(), Some(0), "{}", text(&by_name.stderr));
    let lines = text(&by_name.stdout);
    assert!(
        lines.lines().count() > 0 && lines.lines().all(|l| l.contains(" gfx ")),
        "{lines}"
    );
    let o = grtparse(&f, &["multi/run", "-q", "--ring", "nosuch"]);
    assert_eq!(o.status.code(), Some(2));
    let e = text(&o.stderr);
    assert!(
        e.contains("--ring nosuch: no ring of that name") && e.contains("gfx"),
        "{e}"
    );
}

#[test]
fn a_recording_without_stream_info_did_not_end_cleanly() {
    let d = temp_dir("unended");
    write_stream(&d.join("ok.grtrace.0"), 10, |_| 7, true);
    write_stream(&d.join("killed.grtrace.0"), 10, |_| 7, false);
    let o = grtparse(&d, &["ok"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(!text(&o.stdout).contains("not end") && o.stderr.is_empty());
    let o = grtparse(&d, &["killed"]);
    let (out, e) = (text(&o.stdout), text(&o.stderr));
    assert!(
        out.contains("Streams not ended: 1 (no STREAM_INFO record"),
        "{out}"
    );
    assert!(e.contains("1 stream(s) did not end cleanly"), "{e}");
}

#[test]
fn set_mask_is_a_hex_event_mask_like_blkparse() {
    let f = fixtures();
    // SUBMIT is code 3, END code 7.
    let o = grtparse(&f, &["multi/run", "-q", "-A", "0x88"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let mut kinds: Vec<String> = text(&o.stdout)
        .lines()
        .map(|l| l.split_whitespace().nth(5).unwrap().to_string())
        .collect();
    kinds.sort();
    kinds.dedup();
    assert!(kinds.contains(&"SUBMIT".into()) && kinds.contains(&"END".into()));
    assert!(!kinds.contains(&"START".into()) && !kinds.contains(&"COMMIT".into()));
    assert!(kinds.contains(&"PROCESS".into()), "notes stay: {kinds:?}");
    for bad in ["SUBMIT", "0", "zz"] {
        let o = grtparse(&f, &["multi/run", "-A", bad]);
        assert_eq!(o.status.code(), Some(2), "-A {bad}");
        assert!(
            text(&o.stderr).contains("hex event mask")
                || text(&o.stderr).contains("selects nothing")
        );
    }
}

#[test]
fn per_process_stats_are_bounded_with_many_pids() {
    let d = temp_dir("pids");
    let n = grtparse::stats::PID_LIMIT as u64 + 1000;
    write_stream(&d.join("run.grtrace.0"), n, |i| i as u32 + 1, true);
    let o = grtparse(&d, &["run", "-s", "-O"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let per = out.split("Per process:\n").nth(1).unwrap();
    assert_eq!(per.lines().count(), grtparse::stats::PID_LIMIT + 1);
    assert!(
        per.contains("other (pids past the first 4096): events=1000 SUBMIT=1000"),
        "{}",
        per.lines().last().unwrap()
    );
}

#[test]
fn file_names_that_are_not_utf8_or_hold_newlines_work_and_errors_stay_on_one_line() {
    use std::os::unix::ffi::OsStrExt;
    let d = temp_dir("names");
    let files = copy_run("multi", &d);
    let odd = std::ffi::OsStr::from_bytes(b"r\xffn\nx");
    let mut base = odd.to_os_string();
    base.push(".grtrace.0");
    std::fs::copy(&files[0], d.join(&base)).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_grtparse"))
        .current_dir(&d)
        .arg(odd)
        .arg("-q")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(!o.stdout.is_empty());
    // Damage it: the error names the file on one line, escaped.
    let p = d.join(&base);
    let mut bytes = std::fs::read(&p).unwrap();
    bytes.truncate(bytes.len() - 5);
    std::fs::write(&p, &bytes).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_grtparse"))
        .current_dir(&d)
        .arg(&base)
        .args(["-q", "-o"])
        .arg(d.join(odd))
        .output()
        .unwrap();
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.lines().all(|l| l.starts_with("grtparse: ")), "{e}");
    assert!(e.contains("\\n"), "{e}");
}

#[test]
fn progress_is_off_when_stderr_is_not_a_terminal_and_can_be_forced() {
    let f = fixtures();
    let o = grtparse(&f, &["multi/run", "-q", "-O"]);
    assert!(o.stderr.is_empty(), "{}", text(&o.stderr));
    let o = grtparse(&f, &["multi/run", "-q", "-O", "--progress"]);
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0));
    assert!(e.starts_with("grtparse:   0% (0 of 0 MiB)\n"), "{e}");
    assert!(e.ends_with("grtparse: 100% (0 of 0 MiB)\n"), "{e}");
    assert!(
        e.lines()
            .all(|l| l.starts_with("grtparse: ") && l.contains("% (")),
        "{e}"
    );
    let o = grtparse(&f, &["multi/run", "--progress", "--no-progress"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn summary_json_carries_the_figures_of_the_text_summary() {
    let d = temp_dir("summary-json");
    let json = d.join("sum.json");
    let o = grtparse(
        &fixtures(),
        &["gap/run", "--summary-json", json.to_str().unwrap()],
    );
    // The text is what it always was (gap.txt), plus the JSON file.
    assert_eq!(text(&o.stdout), golden("gap.txt"));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["schema"], "grtparse-summary/1");
    assert_eq!(v["cards"], "card0");
    assert_eq!(
        (v["events"].as_u64(), v["notes"].as_u64()),
        (Some(37), Some(9))
    );
    assert_eq!(v["counts"]["COMMIT"], 5);
    assert_eq!(v["counts"]["LOST"], 1);
    assert_eq!(v["lost"]["kernel"], 4);
    assert_eq!(v["lost"]["recorder"], 0);
    assert_eq!(v["lost"]["gap"], 3);
    assert_eq!(v["sequence_gaps"], 1);
    assert_eq!(v["sequence_errors"], 0);
    assert_eq!(v["device_dropped"], 4);
    assert_eq!(v["unknown_event_codes"], 0);
    let cpus = v["cpus"].as_array().unwrap();
    assert_eq!(cpus.len(), 2);
    assert_eq!(
        (cpus[0]["cpu"].as_u64(), cpus[0]["events"].as_u64()),
        (Some(0), Some(14))
    );
    assert_eq!(cpus[1]["lost"]["gap"], 3);

    // -q -O: no text at all, the JSON all the same (every record counted, none printed)...
    let o = grtparse(&fixtures(), &["gap/run", "-q", "-O", "--summary-json", "-"]);
    let q: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(q, v);
    // ...and its counts follow the filters, like the text summary's.
    let o = grtparse(
        &fixtures(),
        &["gap/run", "-q", "-O", "-a", "END", "--summary-json", "-"],
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["events"], 5);
    assert_eq!(v["counts"]["END"], 5);
    assert!(v["counts"].get("COMMIT").is_none());

    // A file that is one of the inputs is refused before anything is written.
    let files = copy_run("gap", &d);
    let before = std::fs::read(&files[0]).unwrap();
    let victim = files[0].to_str().unwrap();
    let o = grtparse(&d, &["run", "-q", "--summary-json", victim]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("--summary-json"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(std::fs::read(&files[0]).unwrap(), before);
}

#[test]
fn ring_notes_print_their_flags_when_set() {
    use grtrace_format::abi::{ring_flag, RING_UNIT_BYTES};
    use grtrace_format::{Body, RingNote, Stamp};
    let dir = temp_dir("ringflags");
    let ring = |ring: u32, flags: u32, name: &'static [u8]| {
        let stamp = Stamp {
            cpu: 0,
            pid: 0,
            time_ns: 1000 + ring as u64,
            seq: 0,
        };
        let body = Body::Ring(RingNote {
            ring,
            engine_class: 4,
            size: 16384,
            unit: RING_UNIT_BYTES,
            flags,
            name,
        });
        (stamp, body)
    };
    let recs = [
        ring(0x200, 0, b"vcs0"),
        ring(0x201, ring_flag::CTX_SEQNO, b"vcs1"),
        ring(
            0x2ff,
            ring_flag::CTX_SEQNO | ring_flag::VIRTUAL | 0x10,
            b"vcs-virtual",
        ),
    ];
    let stream = grtrace_format::builder::merged_stream(&recs, 0, "i915");
    std::fs::write(dir.join("run.grtrace"), stream).unwrap();
    let out = grtparse(&dir, &["-q", "run.grtrace"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rings: Vec<String> = text(&out.stdout)
        .lines()
        .filter(|l| l.contains(" RING "))
        .map(|l| l.split(" - - ").nth(1).unwrap_or("").to_string())
        .collect();
    assert_eq!(
        rings,
        [
            "name=vcs0 class=vdec size=16384 unit=bytes [-]",
            "name=vcs1 class=vdec size=16384 unit=bytes flags=ctx-seqno [-]",
            "name=vcs-virtual class=vdec size=16384 unit=bytes flags=ctx-seqno,virtual,0x10 [-]",
        ]
    );
}

/// `grtparse run >&-` and `grtparse -d - run >&-`: nothing can be written, so nothing is
/// read and the exit status is 1, with one line (Rust would reopen fd 1 on /dev/null and
/// every write would "succeed").
#[test]
fn a_closed_stdout_is_an_error_not_exit_0() {
    let run = fixtures().join("every");
    for args in [&[][..], &["-d", "-"][..]] {
        let args = args.iter().map(OsStr::new).chain([run.as_os_str()]);
        grtrace_cli::assert_refuses_closed_stdout(Path::new(env!("CARGO_BIN_EXE_grtparse")), args);
    }
}
