//! grtparse: turns grtrace streams into one human line per event, like blkparse.
//!
//! The library does the work so tests can call it: [`Cli`] is the command line, [`run`] parses
//! the inputs through `grtrace_format::trace` (mmap, k-way merge, sequence-gap detection),
//! prints lines through a big buffer with hand-rolled number formatting ([`out`], [`printer`];
//! on worker threads in batches, written in merged order, when the inputs are files),
//! dumps the merged binary stream (`-d`) and prints the summary ([`stats`]).

mod cli;
pub mod out;
mod par;
mod pass;
pub mod printer;
pub mod stats;

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use grtrace_cli::{Failure, InputWords, Resolved};
use grtrace_format::abi;
use grtrace_format::{RunSummary, StreamInfoView as Stream, Trace};

pub use crate::cli::{Cli, UsageError};
use crate::out::Out;
use crate::pass::{describe_stream, say, slots_of, Dump, Filters, Pass};
use crate::printer::{compile, Render};

/// Runs grtparse with its messages on standard error. A problem met while reading (a
/// damaged input, whose records before the damage are still used) is reported as it is met
/// and makes the run end in [`Failure::Reported`].
pub fn run(cli: Cli) -> Result<(), Failure> {
    match run_inner(cli, &mut io::stderr())? {
        0 => Ok(()),
        _ => Err(Failure::Reported),
    }
}

/// Runs grtparse; returns the exit status. Messages go to `err`, each on one line (a usage
/// error too: no `--help` hint).
pub fn run_to(cli: Cli, err: &mut dyn Write) -> i32 {
    match run_inner(cli, err) {
        Ok(code) => code,
        Err(f) => f.print_to("grtparse", err),
    }
}

/// The per-line formats of `-f` and `-F`: every string is checked, none may panic.
pub fn compile_formats(
    format: Option<&str>,
    specs: &[String],
    render: &mut Render,
) -> Result<(), UsageError> {
    if let Some(f) = format {
        render.default_fmt = Some(compile(f).map_err(|e| UsageError(format!("-f: {e}")))?);
    }
    for spec in specs {
        let (ev, f) = spec
            .split_once(',')
            .ok_or_else(|| UsageError(format!("-F '{spec}': expected EVENT,FORMAT")))?;
        if ev.trim().is_empty() {
            return Err(UsageError(format!(
                "-F '{spec}': no event name before the comma (e.g. -F 'END,%T.%t %n\\n')"
            )));
        }
        let slot = slots_of(&[ev.to_string()], "-F")?;
        let fmt = compile(f).map_err(|e| UsageError(format!("-F '{spec}': {e}")))?;
        render.per_slot[slot[0]] = Some(fmt);
    }
    Ok(())
}

/// The input words (`-i` ones first), `-D DIR` applied to the relative ones.
fn input_words(cli: &Cli) -> Result<InputWords, Failure> {
    InputWords::new(cli.input.words())?
        .in_dir(cli.input_dir.as_deref())?
        .required("no input: give a base name (run), files, or -i - for stdin (see --help)")
}

/// What grtparse writes, checked before any input is opened.
struct Outputs {
    /// `-o` (`-` when not given).
    text_path: PathBuf,
    /// `-d - run | grtreport`: the binary stream owns stdout (the summary goes to stderr).
    dump_to_stdout: bool,
}

/// Checks the output options: empty names, and stdout asked for twice. With `-d -`, text is
/// off unless sent to a file.
fn outputs(cli: &mut Cli) -> Result<Outputs, Failure> {
    for (opt, name) in [
        ("-o", &cli.output),
        ("-d", &cli.dump),
        ("--summary-json", &cli.summary_json),
    ] {
        if name.as_ref().is_some_and(|n| n.as_os_str().is_empty()) {
            return Err(Failure::Usage(format!("{opt}: the file name is empty")));
        }
    }
    let dump_to_stdout = cli.dump.as_deref().is_some_and(grtrace_cli::is_dash);
    if dump_to_stdout && !cli.no_text {
        match cli.output.as_deref() {
            None => cli.no_text = true,
            Some(o) if grtrace_cli::is_dash(o) => {
                return Err(Failure::Usage(
                    "-d - and -o - both write to stdout: send the text to a file or add -O".into(),
                ))
            }
            Some(_) => {}
        }
    }
    Ok(Outputs {
        text_path: cli.output.clone().unwrap_or_else(|| PathBuf::from("-")),
        dump_to_stdout,
    })
}

/// The output files given with their options, for the checks against the inputs.
fn output_files(cli: &Cli) -> [(&'static str, Option<&Path>); 3] {
    [
        ("-o", cli.output.as_deref()),
        ("-d", cli.dump.as_deref()),
        ("--summary-json", cli.summary_json.as_deref()),
    ]
}

/// The first stream's card and clock anchor for the lines; `--wall` without an anchor
/// prints relative times, with a warning.
fn set_up_render(render: &mut Render, streams: &[Stream], wall: bool, err: &mut dyn Write) {
    let first = &streams[0].header;
    render.set_card(first.card);
    if first.anchor_realtime_ns != 0 {
        render.anchor = Some((first.anchor_realtime_ns, first.anchor_clock_ns));
    }
    if wall {
        match render.anchor {
            Some(a) => render.wall = Some(a),
            None => {
                let _ = say!(
                    err,
                    "grtparse: warning: {}: no wall-clock anchor in the header, printing relative times",
                    streams[0].name
                );
            }
        }
    }
}

/// `-v`: one line per input.
fn describe_inputs(streams: &[Stream], err: &mut dyn Write) {
    for s in streams {
        let len = s.len.map(|l| format!(", {l} bytes")).unwrap_or_default();
        describe_stream(&s.name, &s.header, &len, err);
    }
}

/// Opens the text output (unless `-O`) and the dump (`-d`), each after checking it is none
/// of the inputs.
fn open_outputs(
    cli: &Cli,
    outs: &Outputs,
    read: &grtrace_cli::Inputs,
    streams: &[Stream],
    filtered: bool,
) -> Result<(Option<Out>, Option<Dump>), Failure> {
    let threaded = |out: grtrace_cli::Output| {
        let name = out.name.clone();
        Out::threaded(out.into_writer())
            .map_err(|e| Failure::Runtime(grtrace_cli::write_error(&name, &e)))
    };
    let text = match cli.no_text {
        true => None,
        false => Some(threaded(
            grtrace_cli::open_output("-o", &outs.text_path, read).map_err(Failure::Runtime)?,
        )?),
    };
    let dump = match &cli.dump {
        None => None,
        Some(name) => {
            let out = grtrace_cli::open_output("-d", name, read).map_err(Failure::Runtime)?;
            let file = out.regular_file();
            let seq_checked = filtered
                || streams
                    .iter()
                    .any(|s| s.header.flags & abi::STREAM_SEQ_CHECKED != 0);
            Some(Dump::new(
                threaded(out)?,
                &streams[0].header,
                seq_checked,
                file,
            ))
        }
    };
    Ok((text, dump))
}

fn run_inner(mut cli: Cli, err: &mut dyn Write) -> Result<i32, Failure> {
    // 1. The command line: inputs, outputs, filters, formats.
    let inputs = input_words(&cli)?;
    let outs = outputs(&mut cli)?;
    let filters = Filters::new(&cli)?;
    let mut render = Render::new(Vec::new());
    compile_formats(cli.format.as_deref(), &cli.format_spec, &mut render)?;

    // 2. The inputs, opened; no output may be one of them.
    let mut problems = 0u32;
    let Resolved {
        sources,
        warnings,
        read,
        files,
    } = inputs.resolve()?;
    for w in &warnings {
        let _ = say!(err, "grtparse: warning: {w}");
        problems += 1;
    }
    for (opt, name) in output_files(&cli) {
        if let Some(n) = name {
            read.check_output(opt, n).map_err(Failure::Runtime)?;
        }
    }
    let sources_len = sources.len();
    let mut trace = Trace::open(sources).map_err(|e| Failure::Runtime(e.to_string()))?;
    let streams = trace.streams().to_vec();
    set_up_render(&mut render, &streams, cli.wall, err);
    if cli.verbose {
        describe_inputs(&streams, err);
    }
    if let Err(e) = trace.check_sessions() {
        if !cli.force {
            return Err(Failure::Runtime(e.to_string()));
        }
        let _ = say!(err, "grtparse: warning: {e} (merged: --force)");
    }
    // The same for a recording that starts inside an input (streams concatenated on stdin):
    // the reader ends that input there unless merging was asked for.
    trace.merge_sessions(cli.force);
    // A dump is one merged stream of one card: a card that starts inside an input ends it.
    trace.single_card(cli.dump.is_some());
    let cards = trace.cards();
    if cli.dump.is_some() && cards.len() > 1 {
        let names: Vec<String> = cards
            .iter()
            .map(|&c| grtrace_format::Card(c).to_string())
            .collect();
        return Err(Failure::Usage(format!(
            "-d: the inputs hold several cards ({}) and a merged stream has one: dump each card's files separately",
            names.join(", ")
        )));
    }

    // 3. The outputs, then one pass over the merged trace.
    let (text, dump) = open_outputs(&cli, &outs, &read, &streams, filters.any)?;
    let progress = grtrace_cli::Progress::new(
        "grtparse",
        grtrace_cli::total_size(&files),
        cli.progress.mode(),
    );
    // Stream headers count as read: the records are what is counted from here on.
    let done_bytes = (files.len() * abi::STREAM_HEADER_SIZE) as u64;
    // `-q -O -d` with no filters: events go straight from the mapping to the dump, uncounted
    // (no summary asks for the counts).
    let dump_only = text.is_none()
        && cli.quiet.quiet
        && cli.summary_json.is_none()
        && !filters.any
        && !cli.per_process;
    let first_card = streams[0].header.card;
    let mut pass = Pass::new(
        render, text, dump, filters, progress, done_bytes, &cli, first_card, err,
    );
    if let Some(workers) = text_workers(&cli, &files, sources_len) {
        pass.parallel(workers, cli.batch_lines.unwrap_or(par::BATCH_LINES));
    }
    let summary = pass.run(&mut trace, dump_only);
    pass.progress.finish(pass.done_bytes);
    // Only a run that read everything can tell that a stream had no end.
    let unended = if pass.output_failed() {
        0
    } else {
        // The streams of cards and sessions that started inside an input too.
        streams
            .iter()
            .map(|s| &s.header)
            .chain(&pass.embedded)
            .filter(|h| !pass.stats.ended_cleanly(h))
            .count() as u64
    };
    pass.stats.set_unended(unended);

    // 4. The end: outputs finished, summary, warnings, status.
    let status = match finish_outputs(&mut pass, &cli, &outs, &read, &summary)? {
        Some(status) => status,
        None => return Ok(0), // `grtparse run | head`: the reader went away
    };
    let problems = problems + warn_at_end(&mut pass, &summary, unended);
    // Only the input knows its ring names, so this is found at the end, and is still a
    // usage error: the option named nothing.
    pass.filters.rings.check_names().map_err(Failure::Usage)?;
    Ok(if problems > 0 { 1 } else { status })
}

/// Worker threads for the text, if it is to be formatted in parallel: `-j N` gives N-1;
/// by default one per CPU besides this one, when every input is a regular file of at least
/// [`par::MIN_INPUT_BYTES`] in all (a pipe's lines come as they arrive, one at a time; a
/// small input is done before the threads would start).
fn text_workers(cli: &Cli, files: &[PathBuf], sources: usize) -> Option<usize> {
    if cli.no_text || files.len() != sources {
        return None;
    }
    let threads = match cli.threads.threads {
        Some(n) => n as usize,
        None if grtrace_cli::total_size(files) < par::MIN_INPUT_BYTES => return None,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    (threads > 1).then(|| threads - 1)
}

/// Flushes the dump and the text, prints the summary and writes `--summary-json`. Returns
/// the status so far, or None when a reader went away (the run then ends quietly).
fn finish_outputs(
    pass: &mut Pass<'_>,
    cli: &Cli,
    outs: &Outputs,
    read: &grtrace_cli::Inputs,
    summary: &RunSummary,
) -> Result<Option<i32>, Failure> {
    let err = &mut *pass.err;
    let mut status = 0;
    let mut reader_gone = false;
    if let Some(d) = pass.dump.as_mut() {
        if let Err(e) = d.finish(summary.gaps > 0) {
            let f = Failure::write(cli.dump.as_deref().unwrap_or(Path::new("")), e);
            reader_gone = f.is_broken_pipe();
            status = f.print_to("grtparse", err);
        }
    }
    if let Some(o) = pass.text.as_mut().filter(|o| o.failed()) {
        if let Err(e) = o.finish() {
            let f = Failure::write(&outs.text_path, e);
            if !f.is_broken_pipe() {
                return Err(f);
            }
            reader_gone = true;
        }
    }
    if reader_gone {
        return Ok(None);
    }
    if !cli.quiet.quiet {
        let mut o = match pass.text.take() {
            Some(o) => o,
            None if outs.dump_to_stdout => Out::new(Box::new(io::stderr())),
            None => Out::new(Box::new(io::stdout())),
        };
        pass.stats.write_summary(&mut o, &pass.render, summary);
        pass.text = Some(o);
    }
    if let Some(o) = pass.text.as_mut() {
        if let Err(e) = o.finish() {
            status = status.max(Failure::write(&outs.text_path, e).print_to("grtparse", err));
        }
    }
    if let Some(path) = &cli.summary_json {
        let written = grtrace_cli::open_output("--summary-json", path, read)
            .map_err(Failure::Runtime)
            .and_then(|out| {
                let mut w = io::BufWriter::new(out.into_writer());
                pass.stats
                    .write_json(&mut w, &pass.render, summary)
                    .and_then(|_| w.flush())
                    .map_err(|e| Failure::write(path, e))
            });
        if let Err(f) = written {
            status = status.max(f.print_to("grtparse", err));
        }
    }
    Ok(Some(status))
}

/// The messages after the summary: input damage, the reader's warnings, streams without an
/// end, losses. Returns the problems that make the status 1 (damaged inputs).
fn warn_at_end(pass: &mut Pass<'_>, summary: &RunSummary, unended: u64) -> u32 {
    let err = &mut *pass.err;
    for e in &summary.errors {
        let _ = say!(err, "grtparse: {e}");
    }
    for w in &summary.warnings {
        let _ = say!(err, "grtparse: warning: {w}");
    }
    if summary.warnings_dropped > 0 {
        let _ = say!(
            err,
            "grtparse: warning: {} more warnings not shown",
            summary.warnings_dropped
        );
    }
    if summary.reordered > 0 {
        let _ = say!(
            err,
            "grtparse: warning: {} record(s) printed out of time order (input not time-sorted, or a pipe whose CPUs arrived too far apart)",
            summary.reordered
        );
    }
    if unended > 0 {
        let _ = say!(
            err,
            "grtparse: warning: {unended} stream(s) did not end cleanly: no STREAM_INFO record at the end (the recorder was killed, or the file was cut short)"
        );
    }
    let lost = pass.stats.total_lost();
    if lost > 0 {
        let _ = say!(
            err,
            "grtparse: warning: {lost} record(s) lost (see LOST lines and the summary)"
        );
    }
    summary.errors.len() as u32
}
