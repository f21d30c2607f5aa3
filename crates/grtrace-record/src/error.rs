//! Everything that can stop a recording, each with the one line a user needs: what happened
//! and what to do about it.

use std::fmt;
use std::io;
use std::path::PathBuf;

use grtrace_format::Card;

/// Where debugfs is mounted by default (here, below every other room, because the errors'
/// hints leave `-r ROOT` out for it).
pub const DEFAULT_ROOT: &str = "/sys/kernel/debug";

#[derive(Debug)]
/// Why a recording could not start or stopped (one line each, see `Display`).
pub enum RecordError {
    /// The default debugfs root is not a debugfs mount.
    DebugfsNotMounted {
        /// The root given.
        root: PathBuf,
    },
    /// `<root>/grtrace` does not exist.
    NoGrtrace {
        /// The root given.
        root: PathBuf,
    },
    /// No `<root>/grtrace/cardN` for the card asked for.
    NoSuchCard {
        /// The card asked for.
        card: Card,
        /// The root looked under.
        root: PathBuf,
        /// The cards that are there.
        available: Vec<String>,
    },
    /// Permission denied: not run as root.
    NotRoot {
        /// The path refused.
        path: PathBuf,
    },
    /// debugfs refuses mmap/open because the kernel is locked down.
    Lockdown {
        /// The path refused.
        path: PathBuf,
        /// The lockdown mode (`integrity`, `confidentiality`).
        mode: String,
    },
    /// The card's session is already set up (another recorder, or a crashed one).
    Busy {
        /// The card.
        card: Card,
        /// The root given with -r, so the hint repeats it.
        root: PathBuf,
    },
    /// `ctl` is a FIFO nobody reads: a simulator tree whose grtsim is gone.
    NoServer {
        /// The `ctl` FIFO.
        path: PathBuf,
    },
    /// An output's file system is full.
    DiskFull {
        /// The output.
        path: PathBuf,
    },
    /// `-D DIR` names something that is not a directory (or has one on its path).
    NotADirectory {
        /// The `-D` path.
        path: PathBuf,
    },
    /// The device did not reach a state after a command.
    Timeout {
        /// The card.
        card: Card,
        /// The root given with -r, so the hint repeats it.
        root: PathBuf,
        /// The state waited for.
        want: &'static str,
    },
    /// The device said something the recorder does not understand.
    Protocol {
        /// The card (and CPU), as shown.
        dev: String,
        /// What was wrong.
        msg: String,
    },
    /// `--ftrace`: the tracefs root is not a tracefs mount; `hint` says how to mount it.
    NoTracefs {
        /// The tracefs root given.
        root: PathBuf,
        /// How to mount it.
        hint: &'static str,
    },
    /// `--ftrace`: none of the GPU tracepoints of the mapping exists on this kernel.
    NoGpuTracepoints {
        /// The tracefs root.
        root: PathBuf,
        /// The tracepoints looked for.
        missing: Vec<String>,
    },
    /// `--ftrace`: the kernel's ftrace data (`header_page`, a page of `trace_pipe_raw`)
    /// is not what the reader understands.
    TracefsData {
        /// What was read.
        what: String,
        /// What was wrong.
        msg: String,
    },
    /// Any other I/O error.
    Io {
        /// What was being done.
        what: String,
        /// The error.
        err: io::Error,
    },
}

impl RecordError {
    /// An I/O error while doing `what`.
    pub fn io(what: impl Into<String>, err: io::Error) -> RecordError {
        RecordError::Io {
            what: what.into(),
            err,
        }
    }
}

/// `grtrace -k -d DEV` with every option that matters to reach the same device (`-r ROOT`
/// when it is not the default), ready to paste.
pub fn kill_command(card: Card, root: &std::path::Path) -> String {
    if root == std::path::Path::new(DEFAULT_ROOT) {
        format!("grtrace -k -d {card}")
    } else {
        format!("grtrace -k -r {} -d {card}", grtrace_cli::shell_word(root))
    }
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordError::DebugfsNotMounted { root } => write!(
                f,
                "debugfs is not mounted at {}: run `mount -t debugfs none {}` (or give its mount point with -r)",
                root.display(),
                root.display()
            ),
            RecordError::NoGrtrace { root } => write!(
                f,
                "{}/grtrace does not exist: this kernel has no grtrace support (boot a kernel with the grtrace patches), or for the simulator start `grtsim --root {}` first",
                root.display(),
                root.display()
            ),
            RecordError::NoSuchCard {
                card,
                root,
                available,
            } => {
                write!(f, "{card}: no such device under {}/grtrace", root.display())?;
                if available.is_empty() {
                    write!(f, " (no traceable cards: is the GPU driver loaded?)")
                } else {
                    write!(f, " (traceable: {}; pass one with -d)", available.join(", "))
                }
            }
            RecordError::NotRoot { path } => write!(
                f,
                "{}: permission denied: run grtrace as root (debugfs is root-only)",
                path.display()
            ),
            RecordError::Lockdown { path, mode } => write!(
                f,
                "{}: refused by kernel lockdown ({mode}): debugfs control and relay files are off-limits; boot with lockdown=none (or without Secure Boot) to trace",
                path.display()
            ),
            RecordError::Busy { card, root } => write!(
                f,
                "{card}: busy: another grtrace is recording (or a crashed one left it set up: run `{}` to tear it down)",
                kill_command(*card, root)
            ),
            RecordError::NoServer { path } => write!(
                f,
                "{}: nobody is serving this device (a grtsim tree whose simulator exited?): restart grtsim or remove the stale directory",
                path.display()
            ),
            RecordError::DiskFull { path } => write!(
                f,
                "{}: disk full: recording stopped; the files hold every whole record written so far, free space and record again",
                path.display()
            ),
            RecordError::NotADirectory { path } => write!(
                f,
                "-D {}: not a directory (it, or a part of its path, is a file): give a directory for the output files",
                path.display()
            ),
            RecordError::Timeout { card, root, want } => write!(
                f,
                "{card}: the device did not become `{want}`: check `dmesg`, then `{}`",
                kill_command(*card, root)
            ),
            RecordError::Protocol { dev, msg } => write!(
                f,
                "{dev}: {msg} (kernel and grtrace disagree on the relay protocol: use matching versions)"
            ),
            RecordError::NoTracefs { root, hint } => {
                write!(f, "{} is not a tracefs mount{hint}", root.display())
            }
            RecordError::NoGpuTracepoints { root, missing } => {
                let mut systems: Vec<&str> = missing
                    .iter()
                    .map(|m| m.split_once(':').map_or(m.as_str(), |(s, _)| s))
                    .collect();
                systems.dedup();
                write!(
                    f,
                    "none of the {} GPU tracepoints grtrace maps exists under {}/events (systems {}): load the GPU driver's module (it adds its tracepoints), or boot a kernel with CONFIG_DRM_SCHED; `ls {}/events` shows what this kernel has",
                    missing.len(),
                    root.display(),
                    systems.join(", "),
                    root.display()
                )
            }
            RecordError::TracefsData { what, msg } => write!(
                f,
                "{what}: {msg}: this kernel's ftrace data is not laid out as grtrace reads it (report it with `uname -r`)"
            ),
            RecordError::Io { what, err } => write!(f, "{what}: {err}"),
        }
    }
}

impl std::error::Error for RecordError {}
