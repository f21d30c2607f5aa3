//! `--perfetto FILE.pftrace`: Perfetto's protobuf trace, decoded by an independent decoder
//! (Perfetto's own compiled schema, `perfetto_trace_pb2` of the PyPI package `perfetto`,
//! through tests/perfetto_pb.py, which also checks sequence flags, interning, track
//! references and slice nesting), shows what the JSON export of the same run shows: the
//! same tracks, slices (names, times, durations, job args), instants, counters and flows,
//! a process and a GPU per card.
//!
//! The Python comes from `$GRT_PYTHON`, else /var/tmp/grtrace-pyenv/bin/python3, as
//! scripts/pyenv.sh makes it.

mod common;
#[path = "common/tef.rs"]
mod tef;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::*;
use grtreport::perfetto::CARD_PID_BASE;
use grtreport::perfetto_pb::ZERO_LEFT_OUT;
use serde_json::Value;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_grtreport"))
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python() -> PathBuf {
    let p = std::env::var_os("GRT_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/tmp/grtrace-pyenv/bin/python3"));
    assert!(
        p.exists(),
        "no Python with Perfetto's trace schema at {}: run scripts/pyenv.sh (or set GRT_PYTHON)",
        p.display()
    );
    p
}

/// What tests/perfetto_pb.py saw in the trace (it fails on an invalid one).
fn decode(trace: &Path) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/perfetto_pb.py");
    let out = succeed(Command::new(python()).arg(script).arg(trace));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Exports `inputs` as `NAME.pftrace` and `NAME.json`; returns both, decoded.
fn export_both(inputs: &[PathBuf], name: &str) -> (Value, tef::Checked, PathBuf) {
    let pf = tmp(&format!("{name}.pftrace"));
    let js = tmp(&format!("{name}.json"));
    for out in [&pf, &js] {
        succeed(bin().args(inputs).arg("--perfetto").arg(out).arg("-q"));
    }
    let json = std::fs::read_to_string(&js).unwrap();
    assert!(json.starts_with('{'), "{name}.json is JSON");
    let c = tef::check(&json).unwrap_or_else(|e| panic!("{name}.json:\n{}", e.join("\n")));
    assert_eq!(
        std::fs::read(&pf).unwrap()[0],
        0x0a,
        "{name}.pftrace: Trace.packet"
    );
    (decode(&pf), c, pf)
}

type Slice = (String, String, i64, i64);

/// Tracks of the protobuf trace: uuid -> (name, process pid or that of its parent).
fn pb_tracks(pb: &Value) -> HashMap<u64, (String, Option<i64>)> {
    let t = pb["tracks"].as_object().unwrap();
    let mut out = HashMap::new();
    for (k, v) in t {
        let pid = v["pid"].as_i64().or_else(|| {
            let parent = v["parent"].as_u64()?;
            t[&parent.to_string()]["pid"].as_i64()
        });
        out.insert(
            k.parse().unwrap(),
            (v["name"].as_str().unwrap().to_string(), pid),
        );
    }
    out
}

/// Every slice of the JSON export as (track, name, ts, dur) in ns, with its args.
fn json_slices(c: &tef::Checked) -> Vec<(Slice, Value)> {
    let mut v: Vec<_> = c
        .events
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| {
            let track =
                c.threads[&(e["pid"].as_i64().unwrap(), e["tid"].as_i64().unwrap())].clone();
            let s = (
                track,
                e["name"].as_str().unwrap().to_string(),
                tef::ns(&e["ts"]).unwrap(),
                tef::ns(&e["dur"]).unwrap(),
            );
            (s, e["args"].clone())
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// The decoded trace's `list` (slices, instants), each item with the name of its track.
fn pb_on_tracks<'a>(pb: &'a Value, list: &str) -> Vec<(String, &'a Value)> {
    let tracks = pb_tracks(pb);
    let items = pb[list].as_array().unwrap().iter();
    items
        .map(|s| (tracks[&s["track"].as_u64().unwrap()].0.clone(), s))
        .collect()
}

fn pb_slices(pb: &Value) -> Vec<(Slice, Value)> {
    let mut v: Vec<_> = pb_on_tracks(pb, "slices")
        .into_iter()
        .map(|(track, s)| {
            let name = s["name"].as_str().unwrap().to_string();
            let (ts, dur) = (s["ts"].as_i64().unwrap(), s["dur"].as_i64().unwrap());
            ((track, name, ts, dur), s["args"].clone())
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// Instants as (track or process, name, ts, args).
fn json_instants(c: &tef::Checked) -> Vec<(String, String, i64, Value)> {
    let mut v: Vec<_> = c
        .events
        .iter()
        .filter(|e| e["ph"] == "i")
        .map(|e| {
            let pid = e["pid"].as_i64().unwrap();
            let track = if e["s"] == "p" {
                c.processes[&pid].clone()
            } else {
                c.threads[&(pid, e["tid"].as_i64().unwrap())].clone()
            };
            let name = e["name"].as_str().unwrap().to_string();
            (track, name, tef::ns(&e["ts"]).unwrap(), e["args"].clone())
        })
        .collect();
    v.sort_by(|a, b| (&a.0, &a.1, a.2).cmp(&(&b.0, &b.1, b.2)));
    v
}

fn pb_instants(pb: &Value) -> Vec<(String, String, i64, Value)> {
    let mut v: Vec<_> = pb_on_tracks(pb, "instants")
        .into_iter()
        .map(|(track, s)| {
            let name = s["name"].as_str().unwrap().to_string();
            (track, name, s["ts"].as_i64().unwrap(), s["args"].clone())
        })
        .collect();
    v.sort_by(|a, b| (&a.0, &a.1, a.2).cmp(&(&b.0, &b.1, b.2)));
    v
}

/// Counter samples as "track name" -> [(ts, value to 0.1)] (the JSON's one event per ring
/// with busy %, outstanding and fill % args is three tracks, as trace_processor names them).
fn json_counters(c: &tef::Checked) -> BTreeMap<String, Vec<(i64, String)>> {
    let mut m: BTreeMap<String, Vec<(i64, String)>> = BTreeMap::new();
    for e in c.events.iter().filter(|e| e["ph"] == "C") {
        for (k, v) in e["args"].as_object().unwrap() {
            let name = format!("{} {k}", e["name"].as_str().unwrap());
            let ts = tef::ns(&e["ts"]).unwrap();
            m.entry(name)
                .or_default()
                .push((ts, format!("{:.1}", v.as_f64().unwrap())));
        }
    }
    m
}

fn pb_counters(pb: &Value) -> BTreeMap<String, Vec<(i64, String)>> {
    pb["counters"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| {
            let s = v
                .as_array()
                .unwrap()
                .iter()
                .map(|p| {
                    (
                        p[0].as_i64().unwrap(),
                        format!("{:.1}", p[1].as_f64().unwrap()),
                    )
                })
                .collect();
            (k.clone(), s)
        })
        .collect()
}

/// The protobuf trace's flows by kind: `submit` (a submission's host or queued slice to
/// the same job's execution) and `blocker` (an execution to one that named it blocker).
fn pb_flows(pb: &Value) -> BTreeMap<String, usize> {
    let slices = pb["slices"].as_array().unwrap();
    let mut m = BTreeMap::new();
    for f in pb["flows"].as_array().unwrap() {
        let from = &slices[f[0].as_u64().unwrap() as usize];
        let to = &slices[f[1].as_u64().unwrap() as usize];
        let (fname, tname) = (from["name"].as_str().unwrap(), to["name"].as_str().unwrap());
        let kind = if let Some(job) = fname
            .strip_prefix("submit ")
            .or_else(|| fname.strip_prefix("queued "))
        {
            assert_eq!(job, tname, "a submission's arrow ends at its execution");
            assert!(from["ts"].as_i64() <= to["ts"].as_i64());
            "submit"
        } else {
            // The blocker's key is in the waiter's args.
            let a = &from["args"];
            let who = format!("ctx {} ring {} seqno {}", a["ctx"], a["ring"], a["seqno"]);
            assert_eq!(to["args"]["blocker"].as_str(), Some(who.as_str()), "{f}");
            assert!(from["ts"].as_i64() <= to["ts"].as_i64(), "{f}");
            "blocker"
        };
        *m.entry(kind.to_string()).or_default() += 1;
    }
    m
}

/// The protobuf trace shows what the JSON shows; returns the count of slices.
fn assert_same_content(pb: &Value, c: &tef::Checked, what: &str) -> usize {
    let (js, ps) = (json_slices(c), pb_slices(pb));
    let keys = |v: &[(Slice, Value)]| v.iter().map(|s| s.0.clone()).collect::<Vec<_>>();
    assert_eq!(keys(&ps), keys(&js), "{what}: slices");
    for ((k, pa), (_, ja)) in ps.iter().zip(&js) {
        // Every arg of the JSON's slice, but a blocker of null (absent here) and those the
        // protobuf trace leaves out when 0.
        let mut args = 0;
        for (name, jv) in ja.as_object().unwrap() {
            // Times are ns here (the JSON's are ms with six decimals: the same ns).
            let (name, jv) = match name.strip_suffix("_ms") {
                Some(base) => {
                    let ns = (jv.as_f64().unwrap() * 1e6).round() as u64;
                    (format!("{base}_ns"), Value::from(ns))
                }
                None => (name.clone(), jv.clone()),
            };
            if pa.get(&name).is_none() && jv == 0 {
                assert!(
                    ZERO_LEFT_OUT.contains(&name.as_str()),
                    "{what}: {k:?} {name} = 0 is left out"
                );
                continue;
            }
            if !jv.is_null() {
                args += 1;
            }
            let pv = &pa[&name];
            match &jv {
                Value::Null => assert!(pv.is_null(), "{what}: {k:?} {name}"),
                Value::Number(n) => {
                    let (j, p) = (n.as_f64().unwrap(), pv.as_f64().unwrap());
                    assert!((j - p).abs() < 1e-6, "{what}: {k:?} {name}: {j} vs {p}");
                }
                _ => assert_eq!(pv, &jv, "{what}: {k:?} {name}"),
            }
        }
        assert_eq!(
            pa.as_object().unwrap().len(),
            args,
            "{what}: {k:?} args {pa} vs {ja}"
        );
    }
    let (ji, pi) = (json_instants(c), pb_instants(pb));
    assert_eq!(ji.len(), pi.len(), "{what}: instants");
    for (j, p) in ji.iter().zip(&pi) {
        assert_eq!((&p.0, &p.1, p.2), (&j.0, &j.1, j.2), "{what}: instant");
        for (name, jv) in j.3.as_object().unwrap() {
            assert_eq!(&p.3[name], jv, "{what}: instant {} {name}", j.1);
        }
    }
    assert_eq!(pb_counters(pb), json_counters(c), "{what}: counters");
    assert_eq!(pb_flows(pb), c.flows, "{what}: flows");
    js.len()
}

#[test]
fn fixtures_and_scenarios_export_the_same_timeline_as_the_json() {
    let mut inputs: Vec<(String, PathBuf)> = [
        "fixtures/report/worked-example.grtrace",
        "fixtures/parse/multi/run",
        "fixtures/parse/gap/run",
        "fixtures/parse/every/run",
        "fixtures/parse/bigend/run",
    ]
    .iter()
    .map(|f| (f.replace('/', "_"), root().join(f)))
    .collect();
    for (name, seed, jobs) in [
        ("report-mixed", 3, 1500),
        ("dep-chain", 3, 800),
        ("vm-fault", 2, 400),
    ] {
        inputs.push((name.to_string(), scenario_file(name, seed, jobs)));
    }
    let mut seen = (0, 0, 0);
    for (name, input) in &inputs {
        let (pb, c, _) = export_both(std::slice::from_ref(input), name);
        let slices = assert_same_content(&pb, &c, name);
        assert!(slices > 0, "{name}");
        seen.0 += pb["instants"].as_array().unwrap().len();
        seen.1 += pb_flows(&pb).get("blocker").copied().unwrap_or(0);
        seen.2 += pb["counters"].as_object().unwrap().len();
        // One card: one GPU and its process.
        assert_eq!(pb["gpus"].as_array().unwrap().len(), 1, "{name}");
        let card = pb["tracks"]
            .as_object()
            .unwrap()
            .values()
            .find(|t| t["pid"] == CARD_PID_BASE)
            .expect("the card's process");
        assert!(
            card["name"].as_str().unwrap().starts_with("card0 ("),
            "{name}: {card}"
        );
    }
    // The inputs draw every kind of thing at least once.
    assert!(seen.0 > 0 && seen.1 > 0 && seen.2 > 0, "{seen:?}");
}

#[test]
fn instants_and_job_args_read_back_by_name() {
    let every = root().join("fixtures/parse/every/run");
    let (pb, _, _) = export_both(&[every], "every-names");
    let inst = pb_instants(&pb);
    for name in ["VM_FAULT", "RESET", "TIMEOUT", "HANG"] {
        assert!(inst.iter().any(|i| i.1 == name), "{name}");
    }
    assert!(inst
        .iter()
        .any(|i| i.1.starts_with("msg: ") && i.3["text"].is_string()));
    let gap = root().join("fixtures/parse/gap/run");
    let (pb, _, _) = export_both(&[gap], "gap-names");
    let lost: Vec<_> = pb_instants(&pb)
        .into_iter()
        .filter(|i| i.1.starts_with("lost "))
        .collect();
    // On the card's process track: the recorder's NOTE_LOST and the reader's sequence gap.
    assert!(lost.iter().all(|i| i.0.starts_with("card0 (")));
    assert!(lost
        .iter()
        .any(|i| i.3["count"] == 4 && i.3["sequence_gap"] == false));
    assert!(lost
        .iter()
        .any(|i| i.3["count"] == 3 && i.3["sequence_gap"] == true));
    // The worked example's job 7/41, in ns.
    let ex = root().join("fixtures/report/worked-example.grtrace");
    let (pb, _, _) = export_both(&[ex], "example-names");
    let s = pb_slices(&pb);
    let exec = s.iter().find(|s| s.0 .1 == "7/41").unwrap();
    assert_eq!(
        (exec.0 .0.as_str(), exec.0 .2, exec.0 .3),
        ("ring 0 gfx", 2_500_000, 500_000)
    );
    assert_eq!(exec.1["tags"], "queue-wait");
    assert_eq!(exec.1["queue_ns"], 2_300_000);
    let host = s.iter().find(|s| s.0 .1 == "submit 7/41").unwrap();
    assert_eq!((host.0 .2, host.0 .3), (0, 200_000));
    assert_eq!(pb_flows(&pb).get("submit"), Some(&1));
}

/// Two cards in one file: a GPU and a process per card, every track of a card under its
/// process and named after it, each card's ring tracks holding exactly its own jobs.
#[test]
fn two_cards_stay_apart() {
    let inputs: Vec<PathBuf> = [
        (0, ("report-mixed", 3, 300), "grtsim"),
        (1, ("dep-chain", 7, 200), "grtsim1"),
    ]
    .into_iter()
    .map(|(card, sc, driver)| scenario_card_file("two-cards", card, sc, driver))
    .collect();
    let (pb, c, _) = export_both(&inputs, "two-cards");
    assert_same_content(&pb, &c, "two cards");
    let gpus: Vec<_> = pb["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["name"].as_str().unwrap(), g["model"].as_str().unwrap()))
        .collect();
    assert_eq!(gpus, [("card0", "grtsim"), ("card1", "grtsim1")]);
    let tracks = pb_tracks(&pb);
    let base = CARD_PID_BASE as i64;
    for card in 0..2i64 {
        let want = format!("card{card} ");
        let procs: Vec<_> = tracks
            .values()
            .filter(|t| t.1 == Some(base + card))
            .collect();
        assert!(procs
            .iter()
            .any(|t| t.0.starts_with(&format!("card{card} ("))));
        assert!(
            procs.iter().all(|t| t.0.starts_with(&want)),
            "card{card}: {procs:?}"
        );
    }
    // Each card's ring slices are that card's jobs: card1's run only dep-chain's contexts.
    let per_card = |card: i64| {
        let mut n: Vec<_> = pb["slices"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| tracks[&s["track"].as_u64().unwrap()].1 == Some(base + card))
            .filter(|s| s["args"]["tags"].is_string())
            .map(|s| s["name"].as_str().unwrap().to_string())
            .collect();
        n.sort();
        n
    };
    let one = |card: i64| {
        let mut n: Vec<_> = c
            .events
            .iter()
            .filter(|e| e["ph"] == "X" && e["pid"] == base + card && e["args"]["tags"].is_string())
            .map(|e| e["name"].as_str().unwrap().to_string())
            .collect();
        n.sort();
        n
    };
    assert_eq!(per_card(0), one(0));
    assert_eq!(per_card(1), one(1));
    assert!(!per_card(1).is_empty());
}

/// The file name picks the format: `.json` (any case) and `-` are JSON, the rest protobuf.
#[test]
fn the_file_name_picks_the_format() {
    let ex = root().join("fixtures/report/worked-example.grtrace");
    for (name, protobuf) in [
        ("pick.pftrace", true),
        ("pick.perfetto-trace", true),
        ("pick", true),
        ("pick.JSON", false),
        ("pick.json", false),
    ] {
        let p = tmp(name);
        let o = bin()
            .arg(&ex)
            .arg("--perfetto")
            .arg(&p)
            .arg("-q")
            .output()
            .unwrap();
        assert!(o.status.success(), "{name}");
        let first = std::fs::read(&p).unwrap()[0];
        assert_eq!(first == 0x0a, protobuf, "{name}");
        assert_eq!(first == b'{', !protobuf, "{name}");
    }
    let o = bin().arg(&ex).args(["--perfetto", "-"]).output().unwrap();
    assert_eq!(o.stdout[0], b'{');
}

/// The packets go out in zlib blocks (`compressed_packets`), which the decoder reads in
/// place as trace_processor does, each block a packet sequence of its own (its interned
/// names and clock its own): a run of many jobs is at least 5 times smaller than its
/// JSON, with the same timeline.
#[test]
fn a_long_run_is_compressed_in_blocks_five_times_smaller_than_its_json() {
    let input = scenario_file("report-mixed", 5, 12_000);
    let (pb, c, pf) = export_both(std::slice::from_ref(&input), "long-run");
    assert!(assert_same_content(&pb, &c, "long-run") > 0);
    let blocks = pb["compressed_blocks"].as_u64().unwrap();
    assert!(blocks >= 2, "{blocks} compressed blocks");
    assert_eq!(
        pb["sequences"].as_u64(),
        Some(blocks),
        "a sequence per block"
    );
    // The decoder's checks of sequences can fail: a block without its first packet or its
    // clock snapshot, or on another block's sequence, is rejected.
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/perfetto_pb.py");
    succeed(
        Command::new(python())
            .arg(script)
            .arg("--self-test")
            .arg(&pf),
    );
    let pb_size = std::fs::metadata(&pf).unwrap().len();
    let json_size = std::fs::metadata(pf.with_extension("json")).unwrap().len();
    assert!(
        json_size >= 5 * pb_size,
        "protobuf {pb_size} B, JSON {json_size} B: {:.1}x",
        json_size as f64 / pb_size as f64
    );
}

/// The file is the same byte for byte whether the run has one CPU (every stage on the
/// joining and export threads) or more (the classifier and the feed on the engine's
/// worker thread, blocks encoded and compressed on workers of their own).
#[test]
fn the_export_is_the_same_on_one_cpu_as_on_several() {
    if std::thread::available_parallelism().map_or(1, usize::from) < 2 {
        eprintln!("one CPU: nothing to compare");
        return;
    }
    let input = scenario_file("report-mixed", 5, 12_000);
    let (one, several) = (tmp("one-cpu.pftrace"), tmp("several-cpus.pftrace"));
    let taskset = Command::new("taskset")
        .args(["-c", "0"])
        .arg(env!("CARGO_BIN_EXE_grtreport"))
        .arg(&input)
        .arg("--perfetto")
        .arg(&one)
        .output()
        .expect("taskset (util-linux)");
    assert!(taskset.status.success(), "{taskset:?}");
    let run = succeed(bin().arg(&input).arg("--perfetto").arg(&several));
    assert_eq!(taskset.stdout, run.stdout, "the report");
    let (a, b) = (
        std::fs::read(&one).unwrap(),
        std::fs::read(&several).unwrap(),
    );
    assert!(a.len() > 100_000, "{} bytes", a.len());
    assert!(a == b, "{} and {} bytes differ", a.len(), b.len());
}

/// A write that fails partway through a long run (past a file size limit of a few KiB,
/// while the records still come: the JSON as it is written, the protobuf trace on its
/// export thread at its first compressed block): exit 1, the export's own file named (not
/// standard output), and no half file left behind.
#[test]
fn a_write_failing_midway_names_the_export_and_leaves_no_half_file() {
    let input = scenario_file("report-mixed", 5, 12_000);
    for ext in ["json", "pftrace"] {
        let p = tmp(&format!("midway.{ext}"));
        let o = output_under_file_limit(
            16,
            &[input.as_os_str(), "--perfetto".as_ref(), p.as_os_str()],
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{ext}: {err}");
        let said = format!("grtreport: export: {}: ", p.display());
        assert!(err.starts_with(&said), "{ext}: {err}");
        assert!(!p.exists(), "{ext}: half a file left behind");
    }
}

/// An export into a named pipe whose reader leaves early is not whole: an error naming the
/// pipe, exit 1 (only a closed standard output ends a run quietly).
#[test]
fn an_export_into_a_named_pipe_whose_reader_left_is_an_error() {
    let input = scenario_file("report-mixed", 5, 12_000);
    for ext in ["json", "pftrace"] {
        let fifo = tmp(&format!("gone-reader.{ext}"));
        let _ = std::fs::remove_file(&fifo);
        let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        let mut reader = Command::new("head")
            .args(["-c", "100"])
            .arg(&fifo)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let o = bin()
            .arg(&input)
            .arg("--perfetto")
            .arg(&fifo)
            .arg("-q")
            .output()
            .unwrap();
        reader.wait().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{ext}: {err}");
        assert!(err.contains(&*fifo.to_string_lossy()), "{ext}: {err}");
        assert!(err.contains("Broken pipe"), "{ext}: {err}");
    }
}

/// A run that stops because standard output (`--jobs`) was closed does not leave an export
/// of part of it: the file is removed and the exit status says so (1, one line naming it),
/// as for a dataset.
#[test]
fn a_closed_stdout_removes_the_export_of_part_of_the_run() {
    let input = scenario_file("report-mixed", 5, 12_000);
    for ext in ["json", "pftrace"] {
        let p = tmp(&format!("closed-stdout.{ext}"));
        let args = [
            input.as_os_str(),
            "-q".as_ref(),
            "--jobs".as_ref(),
            "--perfetto".as_ref(),
        ];
        let o = output_into_closed_stdout(&[&args[..], &[p.as_os_str()]].concat());
        assert_not_written_for_closed_stdout(&o, "--perfetto", &p);
        assert!(!p.exists(), "{ext}: part of an export left behind");
    }
}

/// A failed write names the file, exits 1 and leaves no empty file behind.
#[test]
fn a_failed_write_names_the_file_and_leaves_no_empty_file() {
    let ex = root().join("fixtures/report/worked-example.grtrace");
    let o = bin()
        .arg(&ex)
        .args(["--perfetto", "/dev/full", "-q"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("/dev/full"), "{err}");
    // A file size limit of 0: created, but nothing can be written into it.
    let p = tmp("no-room.pftrace");
    let args = [
        ex.as_os_str(),
        "--perfetto".as_ref(),
        p.as_os_str(),
        "-q".as_ref(),
    ];
    let o = output_under_file_limit(0, &args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains(&*p.to_string_lossy()), "{err}");
    assert!(!p.exists(), "an empty {} was left behind", p.display());
}
