//! Every output of the grtreport binary on the fixtures, byte for byte: the text report,
//! `--top`, `--jobs`, both `--csv` files, `--json`, `--interval`, `--critical-path`, the
//! `--perfetto` file, the `--html` page's data, `-q`, the filters, several cards and imported
//! captures. A change to any of them shows here as a diff of one golden file in
//! `fixtures/report-golden/` (see its README.md): the goldens were made by the grtreport of
//! commit 8d7b499 and checked by hand, so a restructuring that keeps them keeps the outputs.
//!
//! `GRT_BLESS=1 cargo test -p grtreport --test golden_outputs` rewrites the goldens (then
//! read the diff); `cargo test -p grtreport --test golden_outputs -- --ignored make_inputs`
//! rewrites the simulated inputs in `fixtures/report-golden/in/`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// The inputs, as named on the command line (relative to the run directory), by a short name
/// used in the golden file names.
const INPUTS: [(&str, &str); 11] = [
    ("worked", "worked-example.grtrace"),
    ("mixed", "in/mixed.grtrace"),
    ("frames", "in/frames.grtrace"),
    ("depchain", "in/dep-chain.grtrace"),
    ("cards", "in/cards"),
    ("gap", "parse/gap/run"),
    ("multi", "parse/multi/run"),
    ("every", "parse/every/run"),
    ("i915", "in/i915-small"),
    ("amd617", "in/amdgpu617"),
    ("amd612", "in/amdgpu612"),
];

/// The options every input is run with: (name, arguments, files the run writes).
const EVERY_INPUT: [(&str, &[&str], &[&str]); 8] = [
    ("text", &[], &[]),
    ("top", &["--top", "10"], &[]),
    ("jobs", &["--jobs", "-q"], &[]),
    (
        "csv",
        &["--csv", "out.csv", "-q"],
        &["out.csv", "out.rings.csv", "out.processes.csv"],
    ),
    ("json", &["--json", "--top", "10"], &[]),
    ("critical", &["--critical-path"], &[]),
    ("perfetto", &["--perfetto", "out.json", "-q"], &["out.json"]),
    ("html", &["--html", "out.html", "-q"], &["out.html"]),
];

/// Options a user runs on some inputs: (input, name, arguments, files written).
// rustfmt would put most rows' fields a line each: a row a line reads as a table.
#[rustfmt::skip]
const MORE: &[(&str, &str, &[&str], &[&str])] = &[
    ("worked",   "jobs-report",     &["--jobs"], &[]),
    ("worked",   "interval",        &["--interval", "0.00002"], &[]),
    ("worked",   "top-samples",     &["--top", "3", "--samples", "1"], &[]),
    ("worked",   "output",          &["-o", "out.txt", "--top", "2"], &["out.txt"]),
    ("mixed",    "quiet",           &["-q"], &[]),
    ("mixed",    "interval",        &["--interval", "0.01", "-q"], &[]),
    ("mixed",    "interval-report", &["--interval", "0.02"], &[]),
    ("mixed",    "csv-stdout",      &["--csv", "-", "-q"], &[]),
    ("mixed",    "ctx",             &["--ctx", "2,3", "--top", "5"], &[]),
    ("mixed",    "ring",            &["--ring", "gfx", "--top", "5"], &[]),
    ("mixed",    "pid",             &["--pid", "2003", "--jobs"], &[]),
    ("mixed",    "window",          &["-w", "0.02:0.06", "--top", "5"], &[]),
    ("mixed",    "window-json",     &["-w", "0.05", "--json"], &[]),
    ("mixed",    "rule",            &["--rule", "queue-min-us=200", "--top", "5"], &[]),
    ("mixed",    "json-all",        &["--json", "--top", "5", "--critical-path"], &[]),
    ("mixed",    "all",             &["--jobs", "--top", "5", "--csv", "out.csv", "--perfetto", "out.json"],
                                    &["out.csv", "out.rings.csv", "out.json"]),
    ("frames",   "frame-marker",    &["--critical-path", "--frame-marker", "frame"], &[]),
    ("frames",   "frame-json",      &["--json", "--critical-path", "--frame-marker", "frame"], &[]),
    ("frames",   "interval",        &["--interval", "0.02", "-q"], &[]),
    ("depchain", "html-jobs",       &["--html", "out.html", "--html-jobs", "50", "-q"],
                                    &["out.html"]),
    ("cards",    "interval",        &["--interval", "0.01", "-q"], &[]),
    ("cards",    "jobs-report",     &["--jobs", "--top", "3"], &[]),
    ("i915",     "interval",        &["--interval", "0.01", "-q"], &[]),
    ("amd617",   "interval",        &["--interval", "0.01"], &[]),
    ("gap",      "read",            &["--read", "--top", "3"], &[]),
    ("worked",   "usage-marker",    &["--frame-marker", "x"], &[]),
    ("worked",   "usage-ctx",       &["--ctx", "gfx"], &[]),
    ("worked",   "list-rules",      &["--list-rules", "--rule", "queue-min-us=200"], &[]),
];

/// What one run printed and wrote, as one text: exit status, stdout, stderr, then each file
/// (of an HTML page, only its data element: the page's script and style are not output).
fn run(dir: &Path, input: &str, args: &[&str], files: &[&str]) -> Vec<u8> {
    for f in files {
        let _ = std::fs::remove_file(dir.join(f));
    }
    let out = Command::new(env!("CARGO_BIN_EXE_grtreport"))
        .current_dir(dir)
        .arg(input)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let mut s = format!("$ grtreport {input} {}\n", args.join(" ")).into_bytes();
    s.extend(format!("--- exit {:?}\n--- stdout\n", out.status.code()).bytes());
    s.extend(&out.stdout);
    s.extend(b"--- stderr\n");
    s.extend(&out.stderr);
    for f in files {
        s.extend(format!("--- file {f}\n").bytes());
        let body =
            std::fs::read(dir.join(f)).unwrap_or_else(|e| panic!("{input} {args:?}: {f}: {e}"));
        if f.ends_with(".html") {
            // Each data element (one per card), with its opening tag.
            let text = String::from_utf8(body).unwrap();
            let mut rest = text.as_str();
            let mut found = 0;
            while let Some(at) = rest.find("<script") {
                let tag_end = at + rest[at..].find('>').unwrap() + 1;
                let end = tag_end + rest[tag_end..].find("</script>").unwrap();
                if rest[at..tag_end].contains("grt-data") {
                    s.extend(rest[at..end].bytes());
                    s.push(b'\n');
                    found += 1;
                }
                rest = &rest[end..];
            }
            assert!(found > 0, "{input} {args:?}: no data in the page");
        } else {
            s.extend(body);
        }
    }
    s
}

/// A fresh run directory holding every input under the name `INPUTS` gives it.
fn run_dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("grtreport-golden-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    let fx = fixtures();
    let copy = |from: &Path, to: &Path| {
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(from, to).unwrap();
    };
    copy(
        &fx.join("report/worked-example.grtrace"),
        &d.join("worked-example.grtrace"),
    );
    for sub in [
        "report-golden/in",
        "parse/gap",
        "parse/multi",
        "parse/every",
    ] {
        let to = if sub.starts_with("report-golden") {
            d.join("in")
        } else {
            d.join(sub)
        };
        for e in std::fs::read_dir(fx.join(sub)).unwrap() {
            let e = e.unwrap();
            copy(&e.path(), &to.join(e.file_name()));
        }
    }
    d
}

#[test]
fn every_output_matches_its_golden() {
    let dir = run_dir();
    let golden = fixtures().join("report-golden");
    let bless = std::env::var_os("GRT_BLESS").is_some();
    let mut cases: Vec<(String, &str, &[&str], &[&str])> = Vec::new();
    for (short, input) in INPUTS {
        for (name, args, files) in EVERY_INPUT {
            cases.push((format!("{short}--{name}"), input, args, files));
        }
    }
    for (short, name, args, files) in MORE {
        let input = INPUTS.iter().find(|(s, _)| s == short).unwrap().1;
        cases.push((format!("{short}--{name}"), input, args, files));
    }
    let mut differ = Vec::new();
    for (name, input, args, files) in &cases {
        let got = run(&dir, input, args, files);
        let path = golden.join(format!("{name}.txt"));
        if bless {
            std::fs::write(&path, &got).unwrap();
            continue;
        }
        let want = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if got != want {
            let (g, w) = (
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&want),
            );
            let line = g
                .lines()
                .zip(w.lines())
                .position(|(a, b)| a != b)
                .unwrap_or_else(|| g.lines().count().min(w.lines().count()));
            differ.push(format!(
                "{name}: line {}:\n  got:  {:?}\n  want: {:?}",
                line + 1,
                g.lines().nth(line).unwrap_or("<end>"),
                w.lines().nth(line).unwrap_or("<end>")
            ));
        }
    }
    // A golden no case writes is a case that was dropped.
    let names: Vec<String> = cases.iter().map(|c| format!("{}.txt", c.0)).collect();
    for e in std::fs::read_dir(&golden).unwrap() {
        let f = e.unwrap().file_name().into_string().unwrap();
        if f.ends_with(".txt") && !names.contains(&f) {
            differ.push(format!("{f}: no case writes it"));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        differ.is_empty(),
        "outputs differ from their goldens:\n{}",
        differ.join("\n")
    );
}

/// Writes the simulated inputs of `fixtures/report-golden/in/` (the imported ones were made
/// once by grtimport, see the README there).
#[test]
#[ignore]
fn make_inputs() {
    use grtrace_sim::scenarios;
    let d = fixtures().join("report-golden/in");
    std::fs::create_dir_all(&d).unwrap();
    for (file, name, seed, jobs) in [
        ("mixed.grtrace", "report-mixed", 9, 300),
        ("frames.grtrace", "frames", 6, 200),
        ("dep-chain.grtrace", "dep-chain", 3, 200),
    ] {
        let sc = scenarios::by_name(name, seed, jobs).unwrap();
        std::fs::write(d.join(file), common::scenario_stream(&sc.records)).unwrap();
    }
    // Two cards, each its own workload and driver.
    for (card, name, driver) in [(0, "report-mixed", "virtio_gpu"), (1, "frames", "amdgpu")] {
        let sc = scenarios::by_name(name, 5, 120).unwrap();
        let mut r = common::Rec::default();
        for (s, b) in &sc.records {
            r.push(s.cpu, s.pid, s.time_ns + common::T0, *b);
        }
        let bytes = common::ended_stream(&r.recs, card, driver);
        std::fs::write(d.join(format!("cards.card{card}.grtrace.0")), bytes).unwrap();
    }
}
