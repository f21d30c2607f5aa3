//! Surviving a mapped file that shrinks while it is read.
//!
//! Reading a page of a `MAP_SHARED` file mapping that lies past the file's current end raises
//! `SIGBUS`, which kills the process with no message. Another process may truncate a trace
//! while we read it (a recorder restarted on the same base name, a user's `> run.grtrace.0`).
//! The mapped ranges of trace inputs are registered here; a `SIGBUS` inside one replaces the
//! faulting page with a private page of zeros (`mmap(MAP_FIXED | MAP_ANONYMOUS)`, a plain
//! system call, safe in a signal handler) and returns, so the faulting read sees zeros. A
//! record header of zeros never parses (size 0), so the reader stops there with an error, and
//! [`Registration::shrunk`] and the file's new length turn that error into one line naming the
//! file and the byte where it ended. A `SIGBUS` outside every registered range restores the
//! previous disposition and returns, so the access faults again exactly as it would have
//! without us.

use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::Once;

/// Mappings that can be protected at once; `register` returns None past this (the caller
/// then reads the file instead of mapping it). Half the kernel's default `vm.max_map_count`;
/// the table is zero-initialised static memory, resident only where used.
pub const SLOTS: usize = 32768;

struct Slot {
    /// 0 = free; claimed by compare-exchange before `start`/`len` are written.
    claimed: AtomicUsize,
    start: AtomicUsize,
    len: AtomicUsize,
    /// 1 + offset of the first faulting page, 0 if none.
    fault: AtomicUsize,
}

#[allow(clippy::declare_interior_mutable_const)]
const FREE: Slot = Slot {
    claimed: AtomicUsize::new(0),
    start: AtomicUsize::new(0),
    len: AtomicUsize::new(0),
    fault: AtomicUsize::new(0),
};
static TABLE: [Slot; SLOTS] = [FREE; SLOTS];
static PAGE: AtomicUsize = AtomicUsize::new(4096);
/// The disposition before ours (leaked once at install).
static PREVIOUS: AtomicPtr<libc::sigaction> = AtomicPtr::new(std::ptr::null_mut());
static INSTALL: Once = Once::new();
/// Where the search for a free slot starts (just after the last one taken), so that opening
/// thousands of files costs a step each, not a scan each.
static NEXT: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_sigbus(_sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for an SA_SIGINFO handler; si_addr is the
    // faulting address for SIGBUS.
    let addr = unsafe { (*info).si_addr() } as usize;
    let page = PAGE.load(Ordering::Relaxed);
    for slot in TABLE.iter() {
        let start = slot.start.load(Ordering::Acquire);
        if start == 0 || addr < start || addr >= start + slot.len.load(Ordering::Acquire) {
            continue;
        }
        let at = addr & !(page - 1);
        // SAFETY: `at` is a page inside a live registered read-only mapping (a registration
        // is dropped before its mapping); replacing that page with a private zero page only
        // changes what the reader sees there, which the reader then reports as damage.
        let p = unsafe {
            libc::mmap(
                at as *mut libc::c_void,
                page,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_FIXED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p != libc::MAP_FAILED {
            let off = at.saturating_sub(start);
            let _ = slot
                .fault
                .compare_exchange(0, off + 1, Ordering::AcqRel, Ordering::Acquire);
            return;
        }
        break;
    }
    // Not ours (or the page could not be replaced): fault again under the old disposition.
    let prev = PREVIOUS.load(Ordering::Acquire);
    // SAFETY: `prev` is null or the leaked, never freed copy of the previous sigaction.
    unsafe {
        if prev.is_null() {
            libc::signal(libc::SIGBUS, libc::SIG_DFL);
        } else {
            libc::sigaction(libc::SIGBUS, prev, std::ptr::null_mut());
        }
    }
}

fn install() {
    INSTALL.call_once(|| {
        // SAFETY: plain libc calls with valid pointers; the handler only uses atomics and
        // async-signal-safe system calls (mmap, sigaction).
        unsafe {
            let ps = libc::sysconf(libc::_SC_PAGESIZE);
            if ps > 0 {
                PAGE.store(ps as usize, Ordering::Relaxed);
            }
            let mut old: libc::sigaction = std::mem::zeroed();
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_sigbus as *const () as usize;
            act.sa_flags = libc::SA_SIGINFO | libc::SA_NODEFER;
            libc::sigemptyset(&mut act.sa_mask);
            if libc::sigaction(libc::SIGBUS, &act, &mut old) == 0 {
                PREVIOUS.store(Box::into_raw(Box::new(old)), Ordering::Release);
            }
        }
    });
}

/// A registered mapping; dropping it unregisters (drop it before unmapping).
pub struct Registration {
    slot: &'static Slot,
}

impl Registration {
    /// Registers `[ptr, ptr + len)` and installs the handler (once). None when every slot is
    /// taken.
    pub fn new(ptr: *const u8, len: usize) -> Option<Registration> {
        if len == 0 {
            return None;
        }
        install();
        let from = NEXT.load(Ordering::Relaxed) % SLOTS;
        let i = (from..SLOTS).chain(0..from).find(|&i| {
            TABLE[i]
                .claimed
                .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        })?;
        NEXT.store(i + 1, Ordering::Relaxed);
        let slot = &TABLE[i];
        slot.fault.store(0, Ordering::Relaxed);
        slot.len.store(len, Ordering::Release);
        slot.start.store(ptr as usize, Ordering::Release);
        Some(Registration { slot })
    }

    /// Offset of the first page that faulted (the file shrank under it), if any.
    pub fn shrunk(&self) -> Option<u64> {
        match self.slot.fault.load(Ordering::Acquire) {
            0 => None,
            n => Some(n as u64 - 1),
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.slot.start.store(0, Ordering::Release);
        self.slot.len.store(0, Ordering::Release);
        self.slot.claimed.store(0, Ordering::Release);
    }
}
