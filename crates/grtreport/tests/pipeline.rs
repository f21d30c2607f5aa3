//! Reading on two threads (`input::run_pipelined`, what the binary does with files) gives
//! what one thread gives (`input::run_with_progress`, what it does with a pipe): the same
//! reports, job lines and interval rows, the same reader summary, on inputs with notes,
//! gaps, several cards, a file of the other byte order, streams (`--read`, stdin) and
//! damage; Ctrl-C and a failed write end it the same way.

use std::cell::RefCell;
use std::io::{self, Write};
use std::rc::Rc;
use std::sync::atomic::AtomicBool;

use grtrace_format::synth::{streams_of, SynthConfig, SESSION};
use grtrace_format::{Endian, InputSource, RunSummary, Trace};
use grtreport::engine::{Filter, JobSink, Names};
use grtreport::input::{self, Cards, Engines};
use grtreport::joiner::JoinConfig;
use grtreport::rows::{JobLines, SharedSink};
use grtreport::{Engine, Job, Rules};

/// The per-CPU streams of a synthetic run, the card in their headers set to `card`.
fn streams(cfg: &SynthConfig, card: u32) -> Vec<Vec<u8>> {
    streams_of(cfg, card, SESSION).unwrap()
}

/// Reads `trace` into `engines` on two threads (`pipelined`) or one, without progress,
/// the stop flag set from the start when `stop`: what the input functions return.
fn read(
    trace: &mut Trace,
    engines: &mut impl Engines,
    stop: bool,
    pipelined: bool,
) -> (RunSummary, io::Result<()>, bool) {
    let flag = AtomicBool::new(stop);
    let mut quiet = grtrace_cli::Progress::new("t", 0, grtrace_cli::ProgressMode::Never);
    if pipelined {
        input::run_pipelined(trace, engines, &flag, true, &mut quiet)
    } else {
        input::run_with_progress(trace, engines, &flag, true, &mut quiet)
    }
}

fn synth(records: u64, cpus: u32, seed: u64) -> SynthConfig {
    SynthConfig {
        records,
        cpus,
        seed,
        ..SynthConfig::default()
    }
}

/// Card 0: two CPUs with notes of every type, a sequence gap and a kernel NOTE_LOST;
/// card 1: the other byte order; card 2: one CPU. Each stream once, as bytes.
fn mixed() -> Vec<(String, Vec<u8>)> {
    let notes = SynthConfig {
        every_type: true,
        gap: Some((1, 2000, 7)),
        kernel_lost: vec![(0, 3)],
        ..synth(60_000, 2, 11)
    };
    let swapped = SynthConfig {
        endian: Endian::NATIVE.opposite(),
        ..synth(20_000, 2, 12)
    };
    let mut v = Vec::new();
    for (card, cfg) in [(0, notes), (1, swapped), (2, synth(20_000, 1, 13))] {
        for (cpu, s) in streams(&cfg, card).into_iter().enumerate() {
            v.push((format!("run.card{card}.grtrace.{cpu}"), s));
        }
    }
    v
}

fn dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("grtreport-pipeline-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The streams as mapped files, as bytes, as `--read` streams, and concatenated on stdin.
fn source_sets(streams: &[(String, Vec<u8>)], tag: &str) -> Vec<(&'static str, Vec<InputSource>)> {
    let d = dir().join(tag);
    std::fs::create_dir_all(&d).unwrap();
    let files: Vec<_> = streams
        .iter()
        .map(|(n, s)| {
            let p = d.join(n);
            std::fs::write(&p, s).unwrap();
            p
        })
        .collect();
    let stdin: Vec<u8> = streams.iter().flat_map(|(_, s)| s.clone()).collect();
    vec![
        (
            "mapped",
            files.iter().cloned().map(InputSource::File).collect(),
        ),
        (
            "bytes",
            streams
                .iter()
                .map(|(n, s)| InputSource::Bytes {
                    name: n.clone(),
                    data: s.clone(),
                })
                .collect(),
        ),
        (
            "--read",
            files
                .iter()
                .map(|p| InputSource::Stream {
                    name: p.display().to_string(),
                    reader: Box::new(std::fs::File::open(p).unwrap()),
                })
                .collect(),
        ),
        (
            "stdin",
            vec![InputSource::Stream {
                name: "(stdin)".into(),
                reader: Box::new(io::Cursor::new(stdin)),
            }],
        ),
    ]
}

/// A writer into a buffer the test keeps.
#[derive(Clone, Default)]
struct Buf(Rc<RefCell<Vec<u8>>>);

impl Write for Buf {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A job sink whose writes fail from the `n`th job on (a closed pipe).
struct FailAfter(u64);

impl JobSink for FailAfter {
    fn job(&mut self, _: &Job, _: &Names<'_>) -> io::Result<()> {
        if self.0 == 0 {
            return Err(io::Error::new(io::ErrorKind::BrokenPipe, "closed"));
        }
        self.0 -= 1;
        Ok(())
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Outputs {
    /// The report only: classification on the worker thread.
    Report,
    /// `--jobs` lines and `--interval` rows as well (everything on this thread).
    Lines,
    /// A job sink that fails after 1000 jobs.
    Failing,
}

/// Everything a run gives: reports (text and JSON) of each card, job lines, interval
/// rows, the reader's summary, the output error, whether it stopped, records joined.
#[derive(Debug, PartialEq)]
struct Run {
    text: String,
    json: Vec<serde_json::Value>,
    lines: String,
    summary: String,
    out: Option<String>,
    stopped: bool,
    records: u64,
}

fn summary(s: &RunSummary) -> String {
    let errors: Vec<String> = s.errors.iter().map(|e| e.to_string()).collect();
    format!(
        "records {} gaps {} ({}) unknown {} backwards {} reordered {} warnings {} errors {errors:?}",
        s.records,
        s.gaps,
        s.gap_records,
        s.unknown_records,
        s.seq_backwards,
        s.reordered,
        s.warnings.len()
    )
}

fn run(sources: Vec<InputSource>, outputs: Outputs, pipelined: bool, stop: bool) -> Run {
    let mut trace = Trace::open(sources).unwrap();
    let lines = Buf::default();
    let sink: Rc<RefCell<dyn JobSink>> = match outputs {
        Outputs::Failing => Rc::new(RefCell::new(FailAfter(1000))),
        _ => Rc::new(RefCell::new(
            JobLines::new(lines.clone()).with_card_column(),
        )),
    };
    let rows = Rc::new(RefCell::new(
        grtreport::rows::IntervalLines::new(Box::new(lines.clone()), false).with_card_column(),
    ));
    let headers = trace.streams().iter().map(|s| s.header.clone()).collect();
    let mut cards = Cards::new(headers, |_, _| {
        let mut e = Engine::new(
            Rules::default(),
            JoinConfig::default(),
            Filter::default(),
            3,
        );
        if outputs == Outputs::Report {
            e.use_worker();
        } else {
            e.add_sink(Box::new(SharedSink(sink.clone())));
            e.set_interval_sink(20_000_000, rows.clone());
        }
        e
    });
    for c in trace.cards() {
        cards.of_card(c);
    }
    let (sum, out, stopped) = read(&mut trace, &mut cards, stop, pipelined);
    let mut records = 0;
    let (mut text, mut json) = (Vec::new(), Vec::new());
    let out = out.and_then(|_| cards.iter_mut().try_for_each(|(_, e)| e.finish()));
    for (_, e) in cards.iter() {
        records += e.joiner.stats.records;
        grtreport::output::write_report(&mut text, e, 5, &[]).unwrap();
        json.push(grtreport::json::report(e, 5, &[]));
    }
    let lines = String::from_utf8(lines.0.borrow().clone()).unwrap();
    Run {
        text: String::from_utf8(text).unwrap(),
        json,
        lines,
        summary: summary(&sum),
        out: out.err().map(|e| e.to_string()),
        stopped: stopped || sum.stopped,
        records,
    }
}

fn same_both_ways(streams: &[(String, Vec<u8>)], tag: &str, outputs: Outputs) -> Vec<Run> {
    let mut runs = Vec::new();
    for ((name, one), (_, two)) in source_sets(streams, tag)
        .into_iter()
        .zip(source_sets(streams, tag))
    {
        let a = run(one, outputs, false, false);
        let b = run(two, outputs, true, false);
        // After a failed write the merging thread may have read a few batches ahead, or
        // to the end (the run ends with the error: the summary is not shown).
        if outputs != Outputs::Failing {
            assert_eq!((&a.summary, a.stopped), (&b.summary, b.stopped), "{name}");
        }
        assert_eq!(a.text, b.text, "{name}");
        assert!(a.json == b.json, "{name}: JSON reports differ");
        assert_eq!(a.lines, b.lines, "{name}");
        assert_eq!((&a.out, a.records), (&b.out, b.records), "{name}");
        runs.push(a);
    }
    runs
}

#[test]
fn two_threads_give_the_reports_of_one() {
    let streams = mixed();
    for outputs in [Outputs::Report, Outputs::Lines] {
        let runs = same_both_ways(&streams, "mixed", outputs);
        let r = &runs[0];
        assert!(r.summary.contains("gaps 1 (7)"), "{}", r.summary);
        assert!(r.records > 99_000, "{}", r.records);
        // Three cards, each reported.
        assert_eq!(r.json.len(), 3);
        if outputs == Outputs::Lines {
            assert!(r.lines.lines().count() > 10_000);
            assert!(r.lines.contains("busy"), "interval rows");
        }
    }
}

#[test]
fn two_threads_report_damage_like_one() {
    let mut streams = mixed();
    // Card 0's CPU 1 ends in the middle of a record, well into the trace.
    let (_, s) = &mut streams[1];
    s.truncate(128 + 72 * 15_000 + 21);
    let runs = same_both_ways(&streams, "damaged", Outputs::Lines);
    assert!(runs[0].summary.contains("truncated"), "{}", runs[0].summary);
}

/// Ctrl-C: both paths stop early with a report of what was read (the merging thread polls
/// the flag at its first hand-over, one thread every 4096 items).
#[test]
fn two_threads_stop_on_ctrl_c() {
    let streams = mixed();
    for (name, sources) in source_sets(&streams, "stop") {
        let all = run(sources, Outputs::Report, true, false).records;
        for pipelined in [false, true] {
            let (_, sources) = source_sets(&streams, "stop")
                .into_iter()
                .find(|(n, _)| *n == name)
                .unwrap();
            let r = run(sources, Outputs::Report, pipelined, true);
            assert!(r.stopped, "{name}");
            assert!(
                r.records > 0 && r.records < all / 2,
                "{name}: {} of {all}",
                r.records
            );
            assert!(r.out.is_none());
        }
    }
}

/// A write that fails (`--jobs | head`) ends both paths with that error, with the same
/// jobs joined and written before it (on one thread the reader stops right there).
#[test]
fn two_threads_stop_on_a_failed_write() {
    let streams = mixed();
    let runs = same_both_ways(&streams, "failing", Outputs::Failing);
    for r in runs {
        assert!(
            r.out.as_deref().is_some_and(|e| e.contains("closed")),
            "{:?}",
            r.out
        );
        assert!(r.stopped);
    }
}

/// A trace of a few hundred batches: every record the reader counted reaches the joiner;
/// a failed write stops the reader long before the end.
#[test]
fn a_long_trace_through_two_threads_joins_every_record() {
    let streams: Vec<_> = streams(&synth(400_000, 2, 3), 0)
        .into_iter()
        .enumerate()
        .map(|(cpu, s)| (format!("long.grtrace.{cpu}"), s))
        .collect();
    let (_, sources) = source_sets(&streams, "long").remove(0);
    let r = run(sources, Outputs::Report, true, false);
    assert!(
        r.summary.starts_with(&format!("records {} ", r.records)),
        "{}",
        r.summary
    );
    assert!(r.records >= 400_000);
    // A write that fails early stops the merging thread within a few batches.
    let (_, sources) = source_sets(&streams, "long").remove(0);
    let f = run(sources, Outputs::Failing, true, false);
    let read: u64 = f.summary.split(' ').nth(1).unwrap().parse().unwrap();
    assert!(f.out.is_some() && f.stopped);
    assert!(read < r.records / 4, "{read} of {}", r.records);
}

/// An engine whose `n`th lookup cuts a file down to 1024 bytes, after a pause: another
/// process truncating an input after the reader checked what the joiner reads next.
struct Cutting {
    engine: Engine,
    lookups: u32,
    file: std::path::PathBuf,
}

impl Engines for Cutting {
    fn of_card(&mut self, _card: u32) -> &mut Engine {
        self.lookups = self.lookups.saturating_sub(1);
        if self.lookups == 1 {
            // Time for a merging thread to reach the end of a file smaller than its queue:
            // then nothing but the joiner can see the cut.
            std::thread::sleep(std::time::Duration::from_millis(300));
            let f = std::fs::OpenOptions::new().write(true).open(&self.file);
            f.unwrap().set_len(1024).unwrap();
        }
        &mut self.engine
    }
}

/// A file cut while it is read ends the run with one error naming it and the byte where
/// it now ends: on one thread, where the reader finds the cut, and on two, where the
/// reader may have checked the whole file before the joiner reads it: never a report
/// silently short of the rest of the file.
#[test]
fn a_file_cut_while_it_is_read_is_an_error_not_a_short_report() {
    // On two threads a file smaller than the hand-over queue (~1.75 MiB): the merging
    // thread never waits, and has read it all when the cut comes.
    for (pipelined, records, lookups) in [(false, 200_000, 40), (true, 12_000, 3)] {
        let data = streams(&synth(records, 1, 5), 0).remove(0);
        assert!(pipelined == (data.len() < 1 << 20), "{} bytes", data.len());
        let file = dir().join(format!("cut-{pipelined}.grtrace.0"));
        std::fs::write(&file, &data).unwrap();
        let mut trace = Trace::open(vec![InputSource::File(file.clone())]).unwrap();
        let engine = Engine::new(
            Rules::default(),
            JoinConfig::default(),
            Filter::default(),
            3,
        );
        let mut cut = Cutting {
            engine,
            lookups,
            file: file.clone(),
        };
        let (sum, out, _) = read(&mut trace, &mut cut, false, pipelined);
        assert!(out.is_ok());
        let errors: Vec<String> = sum.errors.iter().map(|e| e.to_string()).collect();
        assert_eq!(errors.len(), 1, "{pipelined}: {errors:?}");
        let name = file.display().to_string();
        assert!(
            errors[0].starts_with(&name) && errors[0].contains("shrank while being read"),
            "{errors:?}"
        );
        assert!(errors[0].contains("1024 now"), "{errors:?}");
        let joined = cut.engine.joiner.stats.records;
        assert!(
            joined > 0 && joined < records,
            "{pipelined}: {joined} joined"
        );
    }
}
