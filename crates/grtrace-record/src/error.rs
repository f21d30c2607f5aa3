//! Everything that can stop a recording, each with the one line a user needs: what happened
//! and what to do about it.

use std::fmt;
use std::io;
use std::path::PathBuf;

#[derive(Debug)]
pub enum RecordError {
    /// The default debugfs root is not a debugfs mount.
    DebugfsNotMounted {
        root: PathBuf,
    },
    /// `<root>/grtrace` does not exist.
    NoGrtrace {
        root: PathBuf,
    },
    NoSuchCard {
        dev: String,
        root: PathBuf,
        available: Vec<String>,
    },
    NotRoot {
        path: PathBuf,
    },
    /// debugfs refuses mmap/open because the kernel is locked down.
    Lockdown {
        path: PathBuf,
        mode: String,
    },
    Busy {
        dev: String,
        /// The root given with -r, so the hint repeats it.
        root: PathBuf,
    },
    /// `ctl` is a FIFO nobody reads: a simulator tree whose grtsim is gone.
    NoServer {
        path: PathBuf,
    },
    DiskFull {
        path: PathBuf,
    },
    /// `-D DIR` names something that is not a directory (or has one on its path).
    NotADirectory {
        path: PathBuf,
    },
    /// The device did not reach a state after a command.
    Timeout {
        dev: String,
        root: PathBuf,
        want: &'static str,
    },
    Protocol {
        dev: String,
        msg: String,
    },
    /// `--ftrace`: the tracefs root is not a tracefs mount; `hint` says how to mount it.
    NoTracefs {
        root: PathBuf,
        hint: &'static str,
    },
    /// `--ftrace`: none of the GPU tracepoints of the mapping exists on this kernel.
    NoGpuTracepoints {
        root: PathBuf,
        missing: Vec<String>,
    },
    /// `--ftrace`: the kernel's ftrace data (`header_page`, a page of `trace_pipe_raw`)
    /// is not what the reader understands.
    TracefsData {
        what: String,
        msg: String,
    },
    Io {
        what: String,
        err: io::Error,
    },
}

impl RecordError {
    pub fn io(what: impl Into<String>, err: io::Error) -> RecordError {
        RecordError::Io {
            what: what.into(),
            err,
        }
    }
}

/// `grtrace -k -d DEV` with every option that matters to reach the same device (`-r ROOT`
/// when it is not the default), ready to paste.
pub fn kill_command(dev: &str, root: &std::path::Path) -> String {
    if root == std::path::Path::new(crate::DEFAULT_ROOT) {
        format!("grtrace -k -d {dev}")
    } else {
        format!("grtrace -k -r {} -d {dev}", grtrace_cli::shell_word(root))
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
                dev,
                root,
                available,
            } => {
                write!(f, "{dev}: no such device under {}/grtrace", root.display())?;
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
            RecordError::Busy { dev, root } => write!(
                f,
                "{dev}: busy: another grtrace is recording (or a crashed one left it set up: run `{}` to tear it down)",
                kill_command(dev, root)
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
            RecordError::Timeout { dev, root, want } => write!(
                f,
                "{dev}: the device did not become `{want}`: check `dmesg`, then `{}`",
                kill_command(dev, root)
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
