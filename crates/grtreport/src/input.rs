//! Feeding an opened [`Trace`] (files, base name or stdin, merged in time order by
//! grtrace-format's reader) through the [`Engine`].

use std::io;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};

use grtrace_format::{Item, RunSummary, Trace};

use crate::engine::Engine;

/// Runs the whole trace through the engine. `stop` is polled (Ctrl-C): when it is set and
/// `stop_on_signal` is true, reading ends early and the report covers what was read.
/// An output error (for example a closed pipe under `--jobs`) ends the run and is returned.
pub fn run(
    trace: &mut Trace,
    engine: &mut Engine,
    stop: &AtomicBool,
    stop_on_signal: bool,
) -> (RunSummary, io::Result<()>, bool) {
    let mut quiet = grtrace_cli::Progress::new("grtreport", 0, grtrace_cli::ProgressMode::Never);
    run_with_progress(trace, engine, stop, stop_on_signal, &mut quiet)
}

/// [`run`], telling `progress` how many bytes were read (stream headers count as read).
pub fn run_with_progress(
    trace: &mut Trace,
    engine: &mut Engine,
    stop: &AtomicBool,
    stop_on_signal: bool,
    progress: &mut grtrace_cli::Progress,
) -> (RunSummary, io::Result<()>, bool) {
    let mut out_err = None;
    let mut n: u32 = 0;
    let mut stopped = false;
    let mut done = (trace.streams().iter().filter(|s| s.len.is_some()).count()
        * grtrace_format::abi::STREAM_HEADER_SIZE) as u64;
    let sum = trace.for_each(|item| {
        match item {
            Item::Record(r) => {
                done += r.bytes().len() as u64;
                progress.update(done);
                if let Err(e) = engine.feed(&r) {
                    out_err = Some(e);
                    return ControlFlow::Break(());
                }
            }
            Item::Gap(l) => engine.gap(&l),
        }
        n = n.wrapping_add(1);
        if n & 0xfff == 0 && stop_on_signal && stop.load(Ordering::Relaxed) {
            stopped = true;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    });
    progress.finish(done);
    (sum, out_err.map_or(Ok(()), Err), stopped)
}
