//! The command line's side of the timeline exports: checks `--perfetto` and `--html`
//! against the other options, opens their outputs (`-` is stdout) and registers them with
//! the [`Engine`] of each card (several cards write one document, a process or section
//! per card).

use std::cell::RefCell;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::rc::Rc;

use crate::engine::Engine;
use crate::html::{Html, HtmlConfig, HtmlJoint};
use crate::perfetto::{Joint, Perfetto, PerfettoConfig, SharedOut, DEFAULT_INTERVAL_NS};
use crate::perfetto_feed::PbThread;

/// The export options of the command line.
#[derive(Clone, Debug, Default)]
pub struct Exports {
    pub perfetto: Option<PathBuf>,
    pub html: Option<PathBuf>,
    pub html_max_jobs: usize,
}

type Out = BufWriter<Box<dyn Write + Send>>;

/// Opens an export's output (`-` is stdout; an input is refused, the error names the file),
/// unbuffered: the protobuf export writes whole compressed blocks.
fn open(
    opt: &str,
    path: &PathBuf,
    inputs: &grtrace_cli::Inputs,
) -> Result<Box<dyn Write + Send>, String> {
    Ok(grtrace_cli::open_output(opt, path, inputs)?.into_checked_writer())
}

/// [`open`], buffered: the JSON and the page are written a few bytes at a time.
fn open_buffered(opt: &str, path: &PathBuf, inputs: &grtrace_cli::Inputs) -> Result<Out, String> {
    Ok(BufWriter::with_capacity(1 << 20, open(opt, path, inputs)?))
}

impl Exports {
    /// An export writes to stdout: the text report then goes only to `-o FILE`.
    pub fn uses_stdout(&self) -> bool {
        [&self.perfetto, &self.html]
            .iter()
            .any(|p| p.as_ref().is_some_and(grtrace_cli::is_dash))
    }

    /// Removes the exports' files (not standard output) of a run that did not end: they
    /// hold part of it, and are never left to be read as a whole. Says which, as
    /// `--perfetto FILE` (none: nothing was removed).
    pub fn remove_unfinished(&self) -> Vec<String> {
        [("--perfetto", &self.perfetto), ("--html", &self.html)]
            .into_iter()
            .filter_map(|(opt, p)| Some((opt, p.as_ref()?)))
            .filter(|(_, p)| !grtrace_cli::is_dash(p))
            .filter(|(_, p)| std::fs::metadata(p).is_ok_and(|m| m.is_file()))
            .filter(|(_, p)| std::fs::remove_file(p).is_ok())
            .map(|(opt, p)| format!("{opt} {}", grtrace_cli::show(p)))
            .collect()
    }

    /// Usage errors: two outputs on stdout. `others`: something else writes there too (job
    /// lines, a --json report, interval rows).
    pub fn check(&self, others: bool) -> Result<(), String> {
        let on_stdout = [&self.perfetto, &self.html]
            .iter()
            .filter(|p| p.as_ref().is_some_and(grtrace_cli::is_dash))
            .count()
            + usize::from(others);
        if on_stdout > 1 && self.uses_stdout() {
            return Err("only one of --perfetto -, --html -, --jobs, --interval and --json (without -o) can write to stdout".into());
        }
        if self.html.is_some() && self.html_max_jobs == 0 {
            return Err("--html-jobs must be at least 1".into());
        }
        Ok(())
    }

    /// Opens the outputs once for all cards (`several`: the inputs hold more than one);
    /// [`Opened::attach`] then adds each card's exporters to its engine. `input` is the
    /// inputs as given.
    pub fn open(
        &self,
        input: &str,
        inputs: &grtrace_cli::Inputs,
        several: bool,
    ) -> Result<Opened, String> {
        let mut o = Opened {
            perfetto: None,
            html: None,
            input: input.to_string(),
            html_max_jobs: self.html_max_jobs,
        };
        if let Some(p) = &self.perfetto {
            o.perfetto = Some(if crate::perfetto_pb::wants_protobuf(p) {
                // the checked writer names the file and removes it on a failed write
                let thread = PbThread::start(open("--perfetto", p, inputs)?, several)
                    .map_err(|e| format!("--perfetto: cannot start the export thread: {e}"))?;
                PerfettoOut::Protobuf(thread)
            } else {
                let joint = if several {
                    Joint::several_cards()
                } else {
                    Rc::new(Joint::default())
                };
                let out = open_buffered("--perfetto", p, inputs)?;
                PerfettoOut::Json(p.clone(), SharedOut(Rc::new(RefCell::new(out))), joint)
            });
        }
        if let Some(p) = &self.html {
            let out = SharedOut(Rc::new(RefCell::new(open_buffered("--html", p, inputs)?)));
            o.html = Some((out, Rc::new(HtmlJoint::new(several))));
        }
        Ok(o)
    }
}

/// `--perfetto`'s output: JSON (`*.json`, `-`) or Perfetto's protobuf trace (any other
/// file name).
enum PerfettoOut {
    Json(PathBuf, SharedOut<Out>, Rc<Joint>),
    Protobuf(PbThread),
}

/// The opened outputs of the exports, shared by the cards' exporters.
pub struct Opened {
    perfetto: Option<PerfettoOut>,
    html: Option<(SharedOut<Out>, Rc<HtmlJoint>)>,
    input: String,
    html_max_jobs: usize,
}

impl Opened {
    /// Adds the exporters of `card` (its `driver` from its stream header) to its engine.
    pub fn attach(&self, engine: &mut Engine, card: u32, driver: &str) -> Result<(), String> {
        let cfg = PerfettoConfig {
            card,
            driver: driver.to_string(),
            input: self.input.clone(),
            interval_ns: DEFAULT_INTERVAL_NS,
        };
        match &self.perfetto {
            Some(PerfettoOut::Json(p, out, joint)) => {
                let exp = Perfetto::in_joint(out.clone(), cfg, joint.clone())
                    .map_err(|e| grtrace_cli::write_error(p, &e))?;
                engine.add_timeline(Box::new(exp));
            }
            Some(PerfettoOut::Protobuf(thread)) => {
                engine.set_drawn_timeline(Box::new(thread.feeder(cfg)));
            }
            None => {}
        }
        if let Some((out, joint)) = &self.html {
            let cfg = HtmlConfig {
                card,
                driver: driver.to_string(),
                input: self.input.clone(),
                max_jobs: self.html_max_jobs,
            };
            engine.add_timeline(Box::new(Html::in_joint(out.clone(), cfg, joint.clone())));
        }
        Ok(())
    }
}
