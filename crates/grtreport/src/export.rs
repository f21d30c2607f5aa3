//! The command line's side of the timeline exports: checks `--perfetto` and `--html`
//! against the other options, opens their outputs (`-` is stdout) and registers them with
//! the [`Engine`].

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use grtrace_format::StreamInfoView;

use crate::engine::Engine;
use crate::html::{Html, HtmlConfig};
use crate::perfetto::{Perfetto, PerfettoConfig, DEFAULT_INTERVAL_NS};

/// The export options of the command line.
#[derive(Clone, Debug, Default)]
pub struct Exports {
    pub perfetto: Option<PathBuf>,
    pub html: Option<PathBuf>,
    pub html_max_jobs: usize,
}

type Out = BufWriter<Box<dyn Write>>;

/// Opens an export's output (`-` is stdout; an input is refused, the error names the file).
fn open(opt: &str, path: &PathBuf, inputs: &grtrace_cli::Inputs) -> Result<Out, String> {
    let out = grtrace_cli::open_output(opt, path, inputs)?;
    Ok(BufWriter::with_capacity(1 << 20, out.into_writer()))
}

impl Exports {
    /// An export writes to stdout: the text report then goes only to `-o FILE`.
    pub fn uses_stdout(&self) -> bool {
        [&self.perfetto, &self.html]
            .iter()
            .any(|p| p.as_ref().is_some_and(grtrace_cli::is_dash))
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

    /// Opens the outputs and adds the exporters to `engine`. `streams` are the opened inputs
    /// (card and driver come from the first), `input` the inputs as given.
    pub fn attach(
        &self,
        engine: &mut Engine,
        streams: &[StreamInfoView],
        input: &str,
        inputs: &grtrace_cli::Inputs,
    ) -> Result<(), String> {
        let Some(first) = streams.first() else {
            return Ok(());
        };
        if self.perfetto.is_none() && self.html.is_none() {
            return Ok(());
        }
        let card = first.header.card;
        if let Some(other) = streams.iter().find(|s| s.header.card != card) {
            // The exports draw one card's processes: report several cards with the text,
            // JSON or CSV outputs (one engine per card), or export one card at a time.
            return Err(format!(
                "{}: card {} differs from card {} of {}: export one card per run",
                other.name, other.header.card, card, first.name
            ));
        }
        let driver = first.header.driver.clone();
        if let Some(p) = &self.perfetto {
            let out = open("--perfetto", p, inputs)?;
            let cfg = PerfettoConfig {
                card,
                driver: driver.clone(),
                input: input.to_string(),
                interval_ns: DEFAULT_INTERVAL_NS,
            };
            let exp = Perfetto::new(out, cfg).map_err(|e| grtrace_cli::write_error(p, &e))?;
            engine.add_timeline(Box::new(exp));
        }
        if let Some(p) = &self.html {
            let out = open("--html", p, inputs)?;
            let cfg = HtmlConfig {
                card,
                driver,
                input: input.to_string(),
                max_jobs: self.html_max_jobs,
            };
            engine.add_timeline(Box::new(Html::new(out, cfg)));
        }
        Ok(())
    }
}
