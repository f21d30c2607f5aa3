//! The signals that end a run, set up one way for every binary: a handler only sets the
//! [`STOP`] flag (async-signal-safe), and the program's loops look at the flag.

use std::sync::atomic::{AtomicBool, Ordering};

use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};

/// Set when a stop signal arrived (see [`stop_on_terminate`], [`stop_on_interrupt`]).
pub static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_: nix::libc::c_int) {
    STOP.store(true, Ordering::Release);
}

extern "C" fn on_interrupt(_: nix::libc::c_int) {
    // A second Ctrl-C means "now": leave without a report.
    if STOP.swap(true, Ordering::SeqCst) {
        // SAFETY: _exit is async-signal-safe.
        unsafe { nix::libc::_exit(130) };
    }
}

/// For programs that run until told to stop (`grtrace`, `grtsim`): SIGINT, SIGTERM and
/// SIGHUP set [`STOP`], so the run ends cleanly (files finished, the kernel side torn
/// down). SIGPIPE is ignored, so a closed `-o -` reader shows up as EPIPE on a write, which
/// ends the run quietly. Returns the flag.
pub fn stop_on_terminate() -> &'static AtomicBool {
    let act = SigAction::new(
        SigHandler::Handler(on_stop),
        SaFlags::empty(),
        SigSet::empty(),
    );
    let ign = SigAction::new(SigHandler::SigIgn, SaFlags::empty(), SigSet::empty());
    // SAFETY: the handler only stores to an atomic (async-signal-safe); ignoring SIGPIPE
    // replaces no handler anyone relies on (Rust's runtime ignores it too).
    unsafe {
        for sig in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
            let _ = sigaction(sig, &act);
        }
        let _ = sigaction(Signal::SIGPIPE, &ign);
    }
    &STOP
}

/// For programs that report on what they read (`grtreport`): the first SIGINT sets
/// [`STOP`] (the report then covers the records read so far), a second one exits at once
/// with status 130. Reads are restarted after the first (SA_RESTART), so a pipe is read to
/// its end. Returns the flag.
pub fn stop_on_interrupt() -> &'static AtomicBool {
    let act = SigAction::new(
        SigHandler::Handler(on_interrupt),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    // SAFETY: the handler only touches an atomic and calls the async-signal-safe _exit.
    let _ = unsafe { sigaction(Signal::SIGINT, &act) };
    &STOP
}
