//! A traced device seen from user space: `<root>/grtrace/cardN/`, its files, and how its
//! session is controlled: by ioctl on the card's primary node `/dev/dri/cardN` (the kernel),
//! or by the debugfs-style `ctl` file (the simulator, which has no DRM device).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use grtrace_format::abi::files;
use grtrace_format::ioctl::{self as gio, DrmGrtraceSetup};
use grtrace_format::relay::{CpuState, CtlCommand, DevState, Info};
use grtrace_format::Card;

use crate::error::{RecordError, DEFAULT_ROOT};

/// `statfs` magic of debugfs.
const DEBUGFS_MAGIC: i64 = 0x6462_6720;

/// How long a command may take to show in `info` (immediate on the kernel; the simulator
/// applies commands asynchronously).
const STATE_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the DRM primary nodes are.
pub const DRI_DIR: &str = "/dev/dri";

/// The ioctls of `include/uapi/drm/grtrace.h` (nix computes each architecture's encoding;
/// a unit test checks it against grtrace-format's, which the uapi test checks against the
/// header).
mod sys {
    use grtrace_format::ioctl::{
        DrmGrtraceSetup, DRM_IOCTL_BASE, NR_SETUP, NR_START, NR_STOP, NR_TEARDOWN,
    };
    nix::ioctl_readwrite!(grtrace_setup, DRM_IOCTL_BASE, NR_SETUP, DrmGrtraceSetup);
    nix::ioctl_none!(grtrace_start, DRM_IOCTL_BASE, NR_START);
    nix::ioctl_none!(grtrace_stop, DRM_IOCTL_BASE, NR_STOP);
    nix::ioctl_none!(grtrace_teardown, DRM_IOCTL_BASE, NR_TEARDOWN);
    // DRM_IOCTL_DROP_MASTER = DRM_IO(0x1f)
    nix::ioctl_none!(drm_drop_master, DRM_IOCTL_BASE, 0x1f);
}

/// How a device's session is set up, started, stopped and torn down.
#[derive(Clone, Debug)]
pub enum Control {
    /// `DRM_IOCTL_GRTRACE_*` on the card's primary node, held open while the device is used.
    Ioctl {
        /// `/dev/dri/cardN`.
        node: PathBuf,
        /// The primary node, open.
        fd: Arc<OwnedFd>,
    },
    /// One command per `write()` to `<dir>/ctl`: the simulator, or a card without a DRM node
    /// here (the same transitions; the kernel keeps the file for shells and debugging).
    CtlFile,
}

#[derive(Clone, Debug)]
/// A card's grtrace directory and how its session is controlled.
pub struct Device {
    /// The card (`card0`).
    pub card: Card,
    /// `<root>/grtrace/cardN`.
    pub dir: PathBuf,
    /// Ioctls or the `ctl` file.
    pub control: Control,
}

impl Device {
    /// Finds the device, with a useful error for each way it can be missing.
    pub fn find(root: &Path, card: Card) -> Result<Device, RecordError> {
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
        let dir = top.join(card.to_string());
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
                card,
                root: root.to_path_buf(),
                available,
            });
        }
        let mut dev = Device {
            card,
            dir,
            control: Control::CtlFile,
        };
        // a simulator tree never drives a real card, even on a machine that has one
        if !dev.info()?.simulated {
            if let Some(node) = drm_primary_node(Path::new(DRI_DIR), card) {
                dev.control = Control::Ioctl {
                    fd: Arc::new(open_primary(&node)?),
                    node,
                };
            }
        }
        Ok(dev)
    }

    /// How the session is controlled, for the user: `ioctl on /dev/dri/card0` or the file.
    pub fn control_desc(&self) -> String {
        match &self.control {
            Control::Ioctl { node, .. } => format!("ioctl on {}", node.display()),
            Control::CtlFile => format!("{}", self.path(files::CTL).display()),
        }
    }

    /// The debugfs root (or grtsim root) the device was found under.
    pub fn root(&self) -> PathBuf {
        self.dir
            .parent()
            .and_then(Path::parent)
            .map_or_else(|| PathBuf::from(DEFAULT_ROOT), Path::to_path_buf)
    }

    /// A file of the device's directory.
    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }

    /// The device's `info` file, parsed.
    pub fn info(&self) -> Result<Info, RecordError> {
        let p = self.path(files::INFO);
        let text = fs::read_to_string(&p).map_err(|e| open_error(&p, e))?;
        Info::parse(&text).map_err(|msg| RecordError::Protocol {
            dev: self.card.to_string(),
            msg,
        })
    }

    /// The per-CPU `state` file, parsed.
    pub fn state(&self) -> Result<Vec<CpuState>, RecordError> {
        let p = self.path(files::STATE);
        let text = fs::read_to_string(&p).map_err(|e| open_error(&p, e))?;
        CpuState::parse_all(&text).map_err(|msg| RecordError::Protocol {
            dev: self.card.to_string(),
            msg,
        })
    }

    /// The `dropped` counter: records the kernel could not write.
    pub fn dropped(&self) -> Result<u64, RecordError> {
        let p = self.path(files::DROPPED);
        let text = fs::read_to_string(&p).map_err(|e| open_error(&p, e))?;
        text.trim().parse().map_err(|_| RecordError::Protocol {
            dev: self.card.to_string(),
            msg: format!("dropped: bad value `{}`", text.trim()),
        })
    }

    /// Sends one command: an ioctl on the primary node, or one `write()` to `ctl`. Both
    /// fail with the same errnos, mapped to the same errors.
    pub fn ctl(&self, cmd: &CtlCommand) -> Result<(), RecordError> {
        match &self.control {
            Control::Ioctl { node, fd } => {
                ioctl_command(fd, cmd).map_err(|e| self.command_error(cmd, node, e.into()))
            }
            Control::CtlFile => {
                let p = self.path(files::CTL);
                let mut f = open_write(&p)?;
                let line = format!("{cmd}\n");
                f.write_all(line.as_bytes())
                    .map_err(|e| self.command_error(cmd, &p, e))
            }
        }
    }

    fn command_error(&self, cmd: &CtlCommand, p: &Path, e: io::Error) -> RecordError {
        match e.raw_os_error() {
            Some(nix::libc::EBUSY) => RecordError::Busy {
                card: self.card,
                root: self.root(),
            },
            Some(nix::libc::EINVAL) => RecordError::Protocol {
                dev: self.card.to_string(),
                msg: format!("the kernel refused `{cmd}` (check -b/-n ranges and filters)"),
            },
            Some(nix::libc::ENOMEM) => RecordError::io(
                format!(
                    "{}: `{cmd}`: not enough kernel memory for the relay buffers (lower -b or -n)",
                    self.card
                ),
                e,
            ),
            _ => open_error(p, e),
        }
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
                    card: self.card,
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

    /// The relay buffer file of `cpu` (`trace<cpu>`).
    pub fn trace_path(&self, cpu: u32) -> PathBuf {
        self.path(&format!("{}{cpu}", files::TRACE_PREFIX))
    }
}

/// One command as a `DRM_IOCTL_GRTRACE_*` ioctl.
fn ioctl_command(fd: &OwnedFd, cmd: &CtlCommand) -> nix::Result<()> {
    let fd = fd.as_raw_fd();
    // SAFETY: `fd` is an open DRM primary node; SETUP reads and writes exactly one
    // `struct drm_grtrace_setup` (the layout the uapi test checks), the others take no argument.
    unsafe {
        match *cmd {
            CtlCommand::Setup {
                subbuf_size,
                n_subbufs,
                filters,
            } => {
                // out-of-range sizes become values the kernel refuses, never truncated ones
                let size = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
                let mut req = DrmGrtraceSetup::new(size(subbuf_size), size(n_subbufs), &filters);
                sys::grtrace_setup(fd, &mut req).map(drop)
            }
            CtlCommand::Start => sys::grtrace_start(fd).map(drop),
            CtlCommand::Stop => sys::grtrace_stop(fd).map(drop),
            CtlCommand::Teardown => sys::grtrace_teardown(fd).map(drop),
            _ => Err(nix::errno::Errno::EINVAL),
        }
    }
}

/// `<dri>/cardN` if it is the DRM primary node of card N: a character device of the DRM
/// major whose minor is N (primary nodes are minors 0-63, render nodes start at 128).
pub fn drm_primary_node(dri: &Path, card: Card) -> Option<PathBuf> {
    let n = u64::from(card.number());
    let node = dri.join(card.to_string());
    let meta = fs::metadata(&node).ok()?;
    let rdev = meta.rdev();
    let is_drm = meta.file_type().is_char_device()
        && nix::sys::stat::major(rdev) == u64::from(gio::DRM_MAJOR)
        && nix::sys::stat::minor(rdev) == n;
    is_drm.then_some(node)
}

/// Opens the primary node for the control ioctls. The first opener of a primary node
/// becomes DRM master when none exists; the recorder needs no master and must not keep a
/// compositor or a KMS workload from getting it, so it drops it at once (an error just means
/// it was not master).
fn open_primary(node: &Path) -> Result<OwnedFd, RecordError> {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(nix::libc::O_CLOEXEC)
        .open(node)
        .map_err(|e| open_error(node, e))?;
    // SAFETY: DRM_IOCTL_DROP_MASTER takes no argument; `f` is open.
    let _ = unsafe { sys::drm_drop_master(f.as_raw_fd()) };
    Ok(OwnedFd::from(f))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    // the request type is c_ulong on glibc and c_int on musl
    #[allow(clippy::unnecessary_cast)]
    fn nix_encodes_the_ioctls_as_the_uapi_header() {
        let size = std::mem::size_of::<DrmGrtraceSetup>();
        let setup = nix::request_code_readwrite!(gio::DRM_IOCTL_BASE, gio::NR_SETUP, size);
        assert_eq!(setup as u64, u64::from(gio::DRM_IOCTL_GRTRACE_SETUP));
        for (nr, code) in [
            (gio::NR_START, gio::DRM_IOCTL_GRTRACE_START),
            (gio::NR_STOP, gio::DRM_IOCTL_GRTRACE_STOP),
            (gio::NR_TEARDOWN, gio::DRM_IOCTL_GRTRACE_TEARDOWN),
        ] {
            let c = nix::request_code_none!(gio::DRM_IOCTL_BASE, nr);
            assert_eq!(c as u64, u64::from(code));
        }
    }

    #[test]
    fn only_a_drm_char_device_with_the_cards_minor_is_a_primary_node() {
        let dir = std::env::temp_dir().join(format!("grtrace-dri-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        // a regular file and a character device of another major are not DRM nodes
        fs::write(dir.join("card0"), b"").unwrap();
        assert_eq!(drm_primary_node(&dir, Card(0)), None);
        std::os::unix::fs::symlink("/dev/null", dir.join("card1")).unwrap();
        assert_eq!(drm_primary_node(&dir, Card(1)), None);
        let _ = fs::remove_dir_all(&dir);
        assert_eq!(drm_primary_node(&dir, Card(0)), None);
        // a real one, where this machine has it
        if let Ok(meta) = fs::metadata("/dev/dri/card0") {
            let drm = meta.file_type().is_char_device()
                && nix::sys::stat::major(meta.rdev()) == 226
                && nix::sys::stat::minor(meta.rdev()) == 0;
            assert_eq!(drm_primary_node(Path::new(DRI_DIR), Card(0)).is_some(), drm);
        }
    }
}
