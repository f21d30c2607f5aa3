//! grtparse as a user runs it: golden outputs of the fixtures, inputs (base names, file lists,
//! stdin), bad input (one-line error naming file and offset, non-zero exit, everything before
//! the damage printed), the -d round trip, filters, usage errors and `| head`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/parse")
}

fn grtparse(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_grtparse"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run grtparse")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn golden(name: &str) -> String {
    std::fs::read_to_string(fixtures().join(name)).unwrap()
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("grtparse-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
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
    let mut child = Command::new(env!("CARGO_BIN_EXE_grtparse"))
        .args(["-i", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&cat).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), golden("multi.txt"));
    let _ = std::fs::remove_dir_all(&d);
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
    let mut child = Command::new(env!("CARGO_BIN_EXE_grtparse"))
        .args(["-i", "-", "-q"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&dump.stdout).unwrap();
    let o = child.wait_with_output().unwrap();
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
    let _ = std::fs::remove_dir_all(&d);
    let _ = std::fs::remove_dir_all(&d2);
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
    // -A excludes.
    let o = grtparse(
        &f,
        &["multi/run", "-q", "-A", "PROCESS,RING,STREAM_INFO,QUEUE"],
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
        let _ = std::fs::remove_dir_all(&d);
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
    let _ = std::fs::remove_dir_all(&d);
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
    let mut child = Command::new(env!("CARGO_BIN_EXE_grtparse"))
        .current_dir(&d)
        .arg("run")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader is dropped here, like `head -1` exiting.
    let o = child.wait_with_output().unwrap();
    assert!(first.starts_with("card0  0        1 "), "{first}");
    assert!(o.stderr.is_empty(), "{}", text(&o.stderr));
    assert_eq!(
        o.status.code(),
        Some(0),
        "a closed pipe is a quiet, successful end"
    );
    let _ = std::fs::remove_dir_all(&d);
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
    let _ = std::fs::remove_dir_all(&d);
}
