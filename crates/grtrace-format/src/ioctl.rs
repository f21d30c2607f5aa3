//! The session-control ioctls on a card's primary node (`/dev/dri/cardN`), exactly as the
//! kernel's uapi header `include/uapi/drm/grtrace.h` declares them (FORMAT.md §7.1).
//!
//! Four DRM core ioctls, root only, refused on render nodes: `SETUP` takes a
//! [`DrmGrtraceSetup`], `START`, `STOP` and `TEARDOWN` take nothing. They make the same
//! transitions with the same errnos as the debugfs `ctl` file's `setup`/`start`/`stop`/
//! `teardown`, which the simulator keeps (it has no DRM device). `tests/uapi_layout.rs`
//! compiles the header against these definitions.

/// `DRM_IOCTL_BASE`, the ioctl type of every DRM ioctl.
pub const DRM_IOCTL_BASE: u8 = b'd';

/// `_IOC_NR` of `DRM_IOCTL_GRTRACE_SETUP`: the first core number after Linux 6.12's last
/// (`DRM_IOCTL_MODE_CLOSEFB`, 0xD0), with room for the core's own next ones.
pub const NR_SETUP: u8 = 0xE0;
/// `_IOC_NR` of `DRM_IOCTL_GRTRACE_START`.
pub const NR_START: u8 = 0xE1;
/// `_IOC_NR` of `DRM_IOCTL_GRTRACE_STOP`.
pub const NR_STOP: u8 = 0xE2;
/// `_IOC_NR` of `DRM_IOCTL_GRTRACE_TEARDOWN`.
pub const NR_TEARDOWN: u8 = 0xE3;

/// `struct drm_grtrace_setup`'s `flags`: which filters are set.
pub mod setup_flag {
    /// `GRTRACE_SETUP_PID`: `pid` filters (user-context events of other processes drop).
    pub const PID: u32 = 1 << 0;
    /// `GRTRACE_SETUP_CTX`: `ctx` filters.
    pub const CTX: u32 = 1 << 1;
    /// `GRTRACE_SETUP_RING`: `ring` filters.
    pub const RING: u32 = 1 << 2;
    /// `GRTRACE_SETUP_KNOWN`: any other bit is refused with `EINVAL`.
    pub const KNOWN: u32 = 0x7;
}

/// Field offsets of `struct drm_grtrace_setup`.
pub mod setup_off {
    /// `subbuf_size` (in).
    pub const SUBBUF_SIZE: usize = 0;
    /// `n_subbufs` (in).
    pub const N_SUBBUFS: usize = 4;
    /// `events` (in): bit `1 << code` selects an event, 0 selects every event.
    pub const EVENTS: usize = 8;
    /// `flags` (in): [`super::setup_flag`].
    pub const FLAGS: usize = 16;
    /// `pid` (in).
    pub const PID: usize = 20;
    /// `ctx` (in).
    pub const CTX: usize = 24;
    /// `ring` (in).
    pub const RING: usize = 28;
    /// `session` (out): the session id `info` shows.
    pub const SESSION: usize = 32;
    /// `sizeof(struct drm_grtrace_setup)`.
    pub const SIZE: usize = 40;
}

/// `struct drm_grtrace_setup`, the argument of `DRM_IOCTL_GRTRACE_SETUP` (host byte order,
/// no pointers, the same layout for 32- and 64-bit callers).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DrmGrtraceSetup {
    /// Bytes per sub-buffer: 4 KiB to 64 MiB, a multiple of 8.
    pub subbuf_size: u32,
    /// Sub-buffers per CPU: 2 to 4096.
    pub n_subbufs: u32,
    /// Event mask (`1 << code`); 0 selects every event, as `BLKTRACESETUP`'s `act_mask`.
    pub events: u64,
    /// [`setup_flag`] bits: which of `pid`, `ctx`, `ring` filter.
    pub flags: u32,
    /// Process filter, with [`setup_flag::PID`].
    pub pid: u32,
    /// Context filter, with [`setup_flag::CTX`].
    pub ctx: u32,
    /// Ring filter, with [`setup_flag::RING`].
    pub ring: u32,
    /// Out: the id of the session the kernel created.
    pub session: u64,
}

const _: () = assert!(std::mem::size_of::<DrmGrtraceSetup>() == setup_off::SIZE);

#[cfg(feature = "relay")]
impl DrmGrtraceSetup {
    /// The request for a geometry and the ctl file's filters (`None` = not filtered). An
    /// event mask of 0 would select every event on the ioctl, while `events=0` on the ctl file
    /// selects none; the recorder never asks for an empty mask (it refuses `-a` without events).
    pub fn new(subbuf_size: u32, n_subbufs: u32, filters: &crate::relay::Filters) -> Self {
        let mut s = DrmGrtraceSetup {
            subbuf_size,
            n_subbufs,
            events: filters.events.unwrap_or(0),
            ..DrmGrtraceSetup::default()
        };
        if let Some(p) = filters.pid {
            s.flags |= setup_flag::PID;
            s.pid = p;
        }
        if let Some(c) = filters.ctx {
            s.flags |= setup_flag::CTX;
            s.ctx = c;
        }
        if let Some(r) = filters.ring {
            s.flags |= setup_flag::RING;
            s.ring = r;
        }
        s
    }
}

// `_IOC` encoding: the asm-generic one (x86, arm, arm64, riscv, s390, loongarch) and the one
// of powerpc, mips and sparc (3 direction bits, 13 size bits).
#[cfg(not(any(
    target_arch = "powerpc",
    target_arch = "powerpc64",
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "sparc",
    target_arch = "sparc64"
)))]
mod ioc {
    pub const NONE: u32 = 0;
    pub const WRITE: u32 = 1;
    pub const READ: u32 = 2;
    pub const SIZE_BITS: u32 = 14;
}
#[cfg(any(
    target_arch = "powerpc",
    target_arch = "powerpc64",
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "sparc",
    target_arch = "sparc64"
))]
mod ioc {
    pub const NONE: u32 = 1;
    pub const WRITE: u32 = 4;
    pub const READ: u32 = 2;
    pub const SIZE_BITS: u32 = 13;
}

/// `_IOC(dir, DRM_IOCTL_BASE, nr, size)`.
const fn drm_ioc(dir: u32, nr: u8, size: usize) -> u32 {
    assert!(size < (1 << ioc::SIZE_BITS));
    (dir << (16 + ioc::SIZE_BITS))
        | ((size as u32) << 16)
        | ((DRM_IOCTL_BASE as u32) << 8)
        | nr as u32
}

/// `DRM_IOCTL_GRTRACE_SETUP` = `DRM_IOWR(0xE0, struct drm_grtrace_setup)`.
pub const DRM_IOCTL_GRTRACE_SETUP: u32 = drm_ioc(ioc::READ | ioc::WRITE, NR_SETUP, setup_off::SIZE);
/// `DRM_IOCTL_GRTRACE_START` = `DRM_IO(0xE1)`.
pub const DRM_IOCTL_GRTRACE_START: u32 = drm_ioc(ioc::NONE, NR_START, 0);
/// `DRM_IOCTL_GRTRACE_STOP` = `DRM_IO(0xE2)`.
pub const DRM_IOCTL_GRTRACE_STOP: u32 = drm_ioc(ioc::NONE, NR_STOP, 0);
/// `DRM_IOCTL_GRTRACE_TEARDOWN` = `DRM_IO(0xE3)`.
pub const DRM_IOCTL_GRTRACE_TEARDOWN: u32 = drm_ioc(ioc::NONE, NR_TEARDOWN, 0);

/// Major number of DRM character devices (`DRM_MAJOR`).
pub const DRM_MAJOR: u32 = 226;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setup_struct_layout() {
        let s = DrmGrtraceSetup::default();
        let base = &s as *const _ as usize;
        assert_eq!(
            &s.n_subbufs as *const _ as usize - base,
            setup_off::N_SUBBUFS
        );
        assert_eq!(&s.events as *const _ as usize - base, setup_off::EVENTS);
        assert_eq!(&s.flags as *const _ as usize - base, setup_off::FLAGS);
        assert_eq!(&s.ring as *const _ as usize - base, setup_off::RING);
        assert_eq!(&s.session as *const _ as usize - base, setup_off::SESSION);
    }

    #[cfg(feature = "relay")]
    #[test]
    fn filters_become_flags() {
        use crate::relay::Filters;
        let s = DrmGrtraceSetup::new(4096, 2, &Filters::default());
        assert_eq!((s.events, s.flags), (0, 0));
        let f = Filters {
            events: Some(0x84),
            pid: Some(7),
            ctx: None,
            ring: Some(0),
        };
        let s = DrmGrtraceSetup::new(8192, 4, &f);
        assert_eq!((s.subbuf_size, s.n_subbufs, s.events), (8192, 4, 0x84));
        assert_eq!(s.flags, setup_flag::PID | setup_flag::RING);
        assert_eq!((s.pid, s.ctx, s.ring), (7, 0, 0));
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn x86_64_numbers() {
        // DRM_IOWR(0xE0, 40 bytes) and DRM_IO(0xE1) as x86_64 gcc computes them
        assert_eq!(DRM_IOCTL_GRTRACE_SETUP, 0xc028_64e0);
        assert_eq!(DRM_IOCTL_GRTRACE_START, 0x0000_64e1);
        assert_eq!(DRM_IOCTL_GRTRACE_TEARDOWN, 0x0000_64e3);
    }
}
