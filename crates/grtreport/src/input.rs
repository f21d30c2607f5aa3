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
    let mut out_err = None;
    let mut n: u32 = 0;
    let mut stopped = false;
    let sum = trace.for_each(|item| {
        match item {
            Item::Record(r) => {
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
    (sum, out_err.map_or(Ok(()), Err), stopped)
}
