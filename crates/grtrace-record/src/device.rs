//! A traced device seen from user space: `<root>/grtrace/cardN/` and its control files.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use grtrace_format::abi::files;
use grtrace_format::relay::{CpuState, CtlCommand, DevState, Info};

use crate::error::RecordError;

/// `statfs` magic of debugfs.
const DEBUGFS_MAGIC: i64 = 0x6462_6720;
pub const DEFAULT_ROOT: &str = "/sys/kernel/debug";

/// How long a command may take to show in `info` (immediate on the kernel; the simulator
/// applies commands asynchronously).
const STATE_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone, Debug)]
pub struct Device {
    /// `card0`.
    pub name: String,
    pub dir: PathBuf,
}

/// Accepts `card0`, `0` and `/dev/dri/card0`.
pub fn normalize_name(dev: &str) -> String {
    let base = dev.rsplit('/').next().unwrap_or(dev);
    if base.chars().all(|c| c.is_ascii_digit()) && !base.is_empty() {
        format!("card{base}")
    } else {
        base.to_string()
    }
}

impl Device {
    /// Finds the device, with a useful error for each way it can be missing.
    pub fn find(root: &Path, dev: &str) -> Result<Device, RecordError> {
        let name = normalize_name(dev);
        let top = root.join(files::DIR);
        if !top.is_dir() {
            if root == Path::new(DEFAULT_ROOT) && !is_debugfs(root) {
                return Err(RecordError::DebugfsNotMounted {
                    root: root.to_path_buf(),
                });
            }
            if let Err(e) = fs::read_dir(root) {
                if e.kind() == io::ErrorKind::PermissionDenied {
                    return Err(RecordError::NotRoot {
                        path: root.to_path_buf(),
                    });
                }
            }
            return Err(RecordError::NoGrtrace {
                root: root.to_path_buf(),
            });
        }
        let dir = top.join(&name);
        if !dir.join(files::INFO).exists() {
            let mut available: Vec<String> = fs::read_dir(&top)
                .map(|rd| {
                    rd.filter_map(|e| e.ok())
                        .filter(|e| e.path().join(files::INFO).exists())
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            available.sort();
            return Err(RecordError::NoSuchCard {
                dev: name,
                root: root.to_path_buf(),
                available,
            });
        }
        Ok(Device { name, dir })
    }

    /// The debugfs root (or grtsim root) the device was found under.
    pub fn root(&self) -> PathBuf {
        self.dir
            .parent()
            .and_then(Path::parent)
            .map_or_else(|| PathBuf::from(DEFAULT_ROOT), Path::to_path_buf)
    }

    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }

    pub fn info(&self) -> Result<Info, RecordError> {
        let p = self.path(files::INFO);
        let text = fs::read_to_string(&p).map_err(|e| open_error(&p, e))?;
        Info::parse(&text).map_err(|msg| RecordError::Protocol {
            dev: self.name.clone(),
            msg,
        })
    }

    pub fn state(&self) -> Result<Vec<CpuState>, RecordError> {
        let p = self.path(files::STATE);
        let text = fs::read_to_string(&p).map_err(|e| open_error(&p, e))?;
        CpuState::parse_all(&text).map_err(|msg| RecordError::Protocol {
            dev: self.name.clone(),
            msg,
        })
    }

    pub fn dropped(&self) -> Result<u64, RecordError> {
        let p = self.path(files::DROPPED);
        let text = fs::read_to_string(&p).map_err(|e| open_error(&p, e))?;
        text.trim().parse().map_err(|_| RecordError::Protocol {
            dev: self.name.clone(),
            msg: format!("dropped: bad value `{}`", text.trim()),
        })
    }

    /// Writes one command to `ctl` (one `write()`, as the kernel wants).
    pub fn ctl(&self, cmd: &CtlCommand) -> Result<(), RecordError> {
        let p = self.path(files::CTL);
        let mut f = open_write(&p)?;
        let line = format!("{cmd}\n");
        f.write_all(line.as_bytes()).map_err(|e| {
            if e.raw_os_error() == Some(nix::libc::EBUSY) {
                RecordError::Busy {
                    dev: self.name.clone(),
                    root: self.root(),
                }
            } else if e.raw_os_error() == Some(nix::libc::EINVAL) {
                RecordError::Protocol {
                    dev: self.name.clone(),
                    msg: format!("the kernel refused `{cmd}` (check -b/-n ranges and filters)"),
                }
            } else if e.raw_os_error() == Some(nix::libc::ENOMEM) {
                RecordError::io(
                    format!(
                        "{}: `{cmd}`: not enough kernel memory for the relay buffers (lower -b or -n)",
                        self.name
                    ),
                    e,
                )
            } else {
                open_error(&p, e)
            }
        })
    }

    /// Waits until `info` shows `want` (or, for robustness, a later state of the session).
    pub fn wait_state(&self, want: DevState) -> Result<Info, RecordError> {
        let t0 = Instant::now();
        loop {
            let info = self.info()?;
            if info.state == want {
                return Ok(info);
            }
            if t0.elapsed() > STATE_TIMEOUT {
                return Err(RecordError::Timeout {
                    dev: self.name.clone(),
                    root: self.root(),
                    want: want.name(),
                });
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Opens `consumed` for the drain threads.
    pub fn open_consumed(&self) -> Result<File, RecordError> {
        open_write(&self.path(files::CONSUMED))
    }

    pub fn trace_path(&self, cpu: u32) -> PathBuf {
        self.path(&format!("{}{cpu}", files::TRACE_PREFIX))
    }
}

/// Opens a control file for writing without blocking: on a FIFO without reader this fails
/// with ENXIO instead of hanging.
fn open_write(p: &Path) -> Result<File, RecordError> {
    OpenOptions::new()
        .write(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(p)
        .map_err(|e| {
            if e.raw_os_error() == Some(nix::libc::ENXIO) {
                RecordError::NoServer {
                    path: p.to_path_buf(),
                }
            } else {
                open_error(p, e)
            }
        })
}

/// Maps open/mmap errors to the user's problem: not root, lockdown, or plain I/O.
pub fn open_error(p: &Path, e: io::Error) -> RecordError {
    let denied = matches!(
        e.raw_os_error(),
        Some(nix::libc::EPERM) | Some(nix::libc::EACCES)
    );
    if denied {
        if !nix::unistd::geteuid().is_root() {
            return RecordError::NotRoot {
                path: p.to_path_buf(),
            };
        }
        if let Some(mode) = lockdown_mode() {
            return RecordError::Lockdown {
                path: p.to_path_buf(),
                mode,
            };
        }
    }
    RecordError::io(p.display().to_string(), e)
}

/// The active lockdown mode, if the kernel is locked down.
fn lockdown_mode() -> Option<String> {
    let text = fs::read_to_string("/sys/kernel/security/lockdown").ok()?;
    let start = text.find('[')?;
    let end = text[start..].find(']')? + start;
    let mode = &text[start + 1..end];
    (mode != "none").then(|| mode.to_string())
}

// The statfs type field differs in width between architectures.
#[allow(clippy::unnecessary_cast)]
fn is_debugfs(p: &Path) -> bool {
    nix::sys::statfs::statfs(p)
        .map(|s| s.filesystem_type().0 as i64 == DEBUGFS_MAGIC)
        .unwrap_or(false)
}

/// `grtrace -k`: stop and tear down whatever is set up on the device.
pub fn kill(dev: &Device) -> Result<DevState, RecordError> {
    let info = dev.info()?;
    match info.state {
        DevState::Idle => return Ok(DevState::Idle),
        DevState::Running => {
            dev.ctl(&CtlCommand::Stop)?;
            dev.wait_state(DevState::Stopped)?;
        }
        _ => {}
    }
    dev.ctl(&CtlCommand::Teardown)?;
    dev.wait_state(DevState::Idle)?;
    Ok(info.state)
}
