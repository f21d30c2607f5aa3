//! The relay transport of FORMAT.md §7, shared byte for byte by the recorder (consumer) and
//! the simulator (producer, a model of the kernel writer).
//!
//! * [`SubbufHeader`]: the 32-byte sub-buffer header, read and written in place with the
//!   acquire/release atomics the protocol requires.
//! * [`RelayProducer`]: the kernel writer's algorithm (reserve, commit, switch with
//!   no-overwrite refusal, flush). The simulator runs it; the kernel implements the same in C.
//! * [`DrainCursor`]: the consumer algorithm of §7.2, one per CPU.
//! * [`Info`], [`CpuState`], [`CtlCommand`], [`consumed_line`]: the text files of §7.1.
//!
//! Sub-buffer headers are in the host byte order (the kernel writes them natively).

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::abi::subbuf;

/// A window onto one relay buffer (`n_subbufs × subbuf_size` bytes) in a shared mapping.
///
/// It holds a raw pointer because another process (the kernel or the simulator) writes the
/// memory concurrently: the bytes are never exposed as a Rust slice that could change under it.
#[derive(Clone, Copy, Debug)]
pub struct RelayBuf {
    base: *mut u8,
    subbuf_size: usize,
    n_subbufs: usize,
}

// SAFETY: RelayBuf is a pointer into a shared mapping; all header accesses are atomics and all
// record bytes are accessed under the protocol's happens-before (commit release / acquire).
unsafe impl Send for RelayBuf {}
unsafe impl Sync for RelayBuf {}

impl RelayBuf {
    /// # Safety
    /// `base` must point to at least `subbuf_size * n_subbufs` bytes that stay mapped while the
    /// value (or a copy) is used, be 8-byte aligned, and `subbuf_size` must be a multiple of 8
    /// and at least the header size. A read-only mapping may only be used with read methods.
    pub unsafe fn new(base: *mut u8, subbuf_size: usize, n_subbufs: usize) -> RelayBuf {
        assert!((base as usize).is_multiple_of(8) && subbuf_size.is_multiple_of(8));
        assert!(subbuf_size >= subbuf::HEADER_SIZE && n_subbufs > 0);
        RelayBuf {
            base,
            subbuf_size,
            n_subbufs,
        }
    }

    pub fn subbuf_size(&self) -> usize {
        self.subbuf_size
    }
    pub fn n_subbufs(&self) -> usize {
        self.n_subbufs
    }

    /// The header of the sub-buffer that holds absolute sub-buffer number `seq`.
    pub fn header(&self, seq: u64) -> SubbufHeader {
        let slot = (seq % self.n_subbufs as u64) as usize;
        SubbufHeader {
            // SAFETY: slot < n_subbufs, so the header lies inside the buffer (RelayBuf::new).
            base: unsafe { self.base.add(slot * self.subbuf_size) },
        }
    }

    /// Copies `len` bytes at `off` (from the start of the sub-buffer of `seq`) to `out`.
    /// The caller has acquire-loaded a `commit` covering the range.
    pub fn copy_out(&self, seq: u64, off: usize, len: usize, out: &mut Vec<u8>) {
        assert!(off + len <= self.subbuf_size);
        let start = out.len();
        out.reserve(len);
        let slot = (seq % self.n_subbufs as u64) as usize;
        // SAFETY: the range is inside the buffer (asserted), the destination has `len` spare
        // bytes (reserved), and the writer does not touch bytes below a published commit until
        // the sub-buffer is consumed.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.base.add(slot * self.subbuf_size + off),
                out.as_mut_ptr().add(start),
                len,
            );
            out.set_len(start + len);
        }
    }

    /// Mutable bytes of a sub-buffer range, for the producer only.
    ///
    /// # Safety
    /// The buffer must be mapped writable and the caller must be the only writer of the range,
    /// which no consumer reads before the producer publishes it with a commit.
    #[allow(clippy::mut_from_ref)]
    unsafe fn bytes_mut(&self, seq: u64, off: usize, len: usize) -> &mut [u8] {
        let slot = (seq % self.n_subbufs as u64) as usize;
        std::slice::from_raw_parts_mut(self.base.add(slot * self.subbuf_size + off), len)
    }
}

/// The header at the start of one sub-buffer (FORMAT.md §7.2), accessed in place.
#[derive(Clone, Copy, Debug)]
pub struct SubbufHeader {
    base: *mut u8,
}

impl SubbufHeader {
    fn u32_at(&self, off: usize) -> &AtomicU32 {
        // SAFETY: `base` is an 8-aligned header start inside a live mapping (RelayBuf::new);
        // every u32 field offset is 4-aligned. Atomic loads are sound on read-only mappings.
        unsafe { &*(self.base.add(off) as *const AtomicU32) }
    }
    fn u64_at(&self, off: usize) -> &AtomicU64 {
        // SAFETY: as above; `subbuf_seq` is at offset 8, so it is 8-aligned.
        unsafe { &*(self.base.add(off) as *const AtomicU64) }
    }

    pub fn magic(&self) -> u32 {
        self.u32_at(subbuf::OFF_MAGIC).load(Ordering::Relaxed)
    }
    /// `version` (low half) and `header_size` (high half) share one u32 word.
    pub fn version_and_header_size(&self) -> (u16, u16) {
        let w = self.u32_at(subbuf::OFF_VERSION).load(Ordering::Relaxed);
        let b = w.to_ne_bytes();
        (
            u16::from_ne_bytes([b[0], b[1]]),
            u16::from_ne_bytes([b[2], b[3]]),
        )
    }
    /// Acquire load: seeing the expected value makes the rest of the header visible.
    pub fn seq_acquire(&self) -> u64 {
        self.u64_at(subbuf::OFF_SUBBUF_SEQ).load(Ordering::Acquire)
    }
    pub fn commit_acquire(&self) -> u32 {
        self.u32_at(subbuf::OFF_COMMIT).load(Ordering::Acquire)
    }
    pub fn flags_acquire(&self) -> u32 {
        self.u32_at(subbuf::OFF_FLAGS).load(Ordering::Acquire)
    }
    pub fn padding(&self) -> u32 {
        self.u32_at(subbuf::OFF_PADDING).load(Ordering::Relaxed)
    }
    pub fn lost(&self) -> u32 {
        self.u32_at(subbuf::OFF_LOST).load(Ordering::Relaxed)
    }

    /// Producer: starts a sub-buffer. Every field first, `subbuf_seq` last with release, so a
    /// consumer that sees `seq` sees a consistent header.
    pub fn start(&self, seq: u64, lost: u32) {
        let vh = {
            let v = subbuf::VERSION.to_ne_bytes();
            let h = (subbuf::HEADER_SIZE as u16).to_ne_bytes();
            u32::from_ne_bytes([v[0], v[1], h[0], h[1]])
        };
        self.u32_at(subbuf::OFF_MAGIC)
            .store(subbuf::MAGIC, Ordering::Relaxed);
        self.u32_at(subbuf::OFF_VERSION)
            .store(vh, Ordering::Relaxed);
        self.u32_at(subbuf::OFF_COMMIT)
            .store(subbuf::HEADER_SIZE as u32, Ordering::Relaxed);
        self.u32_at(subbuf::OFF_PADDING).store(0, Ordering::Relaxed);
        self.u32_at(subbuf::OFF_LOST).store(lost, Ordering::Relaxed);
        self.u32_at(subbuf::OFF_FLAGS).store(0, Ordering::Relaxed);
        self.u64_at(subbuf::OFF_SUBBUF_SEQ)
            .store(seq, Ordering::Release);
    }
    /// Producer: publishes bytes `[0, commit)` (records are complete before this store).
    pub fn commit_release(&self, commit: u32) {
        self.u32_at(subbuf::OFF_COMMIT)
            .store(commit, Ordering::Release);
    }
    /// Producer: the switch away. `padding` first, then `FINAL` with release.
    pub fn finalize(&self, padding: u32) {
        self.u32_at(subbuf::OFF_PADDING)
            .store(padding, Ordering::Relaxed);
        self.u32_at(subbuf::OFF_FLAGS)
            .store(subbuf::FLAG_FINAL, Ordering::Release);
    }
}

/// Counters of one CPU's buffer that the `state` file shows, shared between the producer and
/// whoever serves `state` and `consumed`.
#[derive(Debug, Default)]
pub struct CpuCounters {
    /// Sub-buffers switched away from (= absolute number of the current sub-buffer).
    pub produced: AtomicU64,
    /// Sub-buffers the consumer released through `consumed`.
    pub consumed: AtomicU64,
    /// Records refused since the last sub-buffer switch.
    pub lost_pending: AtomicU64,
}

impl CpuCounters {
    /// Applies a `consumed` write: relay clamps the delta to what was produced.
    pub fn consume(&self, n: u64) {
        let produced = self.produced.load(Ordering::Acquire);
        let _ = self
            .consumed
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| {
                Some((c + n).min(produced))
            });
    }
}

/// The kernel writer of FORMAT.md §7.2 for one CPU, in no-overwrite mode.
///
/// `reserve` + fill + `commit` is what the kernel does with IRQs off per record; the simulator
/// may commit only every few records to model a commit that lags behind written bytes.
pub struct RelayProducer<'a> {
    buf: RelayBuf,
    counters: &'a CpuCounters,
    dropped: &'a AtomicU64,
    /// Absolute number of the current sub-buffer.
    seq: u64,
    /// Write offset in the current sub-buffer; `None` while a switch is refused.
    offset: Option<usize>,
    /// Highest offset stored as `commit`.
    committed: usize,
    lost_pending: u32,
}

impl<'a> RelayProducer<'a> {
    /// Starts sub-buffer 0. `buf` must be writable.
    pub fn new(
        buf: RelayBuf,
        counters: &'a CpuCounters,
        dropped: &'a AtomicU64,
    ) -> RelayProducer<'a> {
        buf.header(0).start(0, 0);
        counters.produced.store(0, Ordering::Release);
        RelayProducer {
            buf,
            counters,
            dropped,
            seq: 0,
            offset: Some(subbuf::HEADER_SIZE),
            committed: subbuf::HEADER_SIZE,
            lost_pending: 0,
        }
    }

    /// Reserves `len` bytes (a whole record, multiple of 8) and returns them for filling, or
    /// `None` when the buffer is full: the record is then counted as lost (`lost`, `dropped`).
    pub fn reserve(&mut self, len: usize) -> Option<&mut [u8]> {
        debug_assert!(len.is_multiple_of(8) && len + subbuf::HEADER_SIZE <= self.buf.subbuf_size);
        let fits = matches!(self.offset, Some(off) if off + len <= self.buf.subbuf_size);
        if !fits && !self.switch() {
            self.lost_pending += 1;
            self.counters
                .lost_pending
                .store(self.lost_pending as u64, Ordering::Relaxed);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let off = self.offset.expect("switch succeeded");
        self.offset = Some(off + len);
        // SAFETY: [off, off+len) is inside the current sub-buffer, beyond the published commit,
        // and this producer is its only writer.
        Some(unsafe { self.buf.bytes_mut(self.seq, off, len) })
    }

    /// Publishes every reserved record (release store of `commit`).
    pub fn commit(&mut self) {
        if let Some(off) = self.offset {
            if off != self.committed {
                self.buf.header(self.seq).commit_release(off as u32);
                self.committed = off;
            }
        }
    }

    /// Bytes reserved but not yet committed (the lag a consumer may observe).
    pub fn uncommitted(&self) -> usize {
        self.offset.map_or(0, |o| o - self.committed)
    }

    /// Finishes the current sub-buffer (if one is open) and tries to start the next one, as
    /// relay's `relay_switch_subbuf` + grtrace's `subbuf_start` callback do. Returns whether a
    /// new sub-buffer was started.
    fn switch(&mut self) -> bool {
        if let Some(off) = self.offset {
            self.commit();
            let hdr = self.buf.header(self.seq);
            hdr.finalize((self.buf.subbuf_size - off) as u32);
            self.seq += 1;
            self.offset = None;
            self.counters.produced.store(self.seq, Ordering::Release);
        }
        let consumed = self.counters.consumed.load(Ordering::Acquire);
        if self.seq - consumed >= self.buf.n_subbufs as u64 {
            return false; // no-overwrite: refuse the switch, the slot is not consumed yet
        }
        self.buf.header(self.seq).start(self.seq, self.lost_pending);
        self.lost_pending = 0;
        self.counters.lost_pending.store(0, Ordering::Relaxed);
        self.offset = Some(subbuf::HEADER_SIZE);
        self.committed = subbuf::HEADER_SIZE;
        true
    }

    /// The stop-time flush (`relay_flush`): commit, switch away from the current sub-buffer so
    /// it is `FINAL`, and start the next one if there is room (carrying pending losses).
    pub fn flush(&mut self) {
        self.commit();
        self.switch();
    }
}

/// What one step of the consumer found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// Absolute sub-buffer number.
    pub seq: u64,
    /// `lost` of the sub-buffer header, reported on the first visit only (else 0).
    pub lost: u32,
    /// New record bytes: `[off, off + len)` of the sub-buffer (len may be 0).
    pub off: usize,
    pub len: usize,
    /// The sub-buffer is `FINAL` and fully read: the consumer may release it.
    pub finished: bool,
}

/// A sub-buffer header that breaks the protocol (the data of that CPU cannot be trusted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RelayError {
    BadHeader {
        seq: u64,
        version: u16,
        header_size: u16,
    },
    BadCommit {
        seq: u64,
        commit: u32,
        cursor: usize,
    },
}

impl fmt::Display for RelayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RelayError::BadHeader {
                seq,
                version,
                header_size,
            } => write!(
                f,
                "sub-buffer {seq}: unsupported header version {version} size {header_size}"
            ),
            RelayError::BadCommit {
                seq,
                commit,
                cursor,
            } => write!(
                f,
                "sub-buffer {seq}: commit {commit} is outside the sub-buffer or behind {cursor}"
            ),
        }
    }
}

impl std::error::Error for RelayError {}

/// The consumer algorithm of FORMAT.md §7.2 for one CPU.
#[derive(Clone, Debug)]
pub struct DrainCursor {
    /// Absolute number of the next sub-buffer to read.
    pub expected: u64,
    /// Read offset inside it; 0 = not visited yet.
    cursor: usize,
}

impl DrainCursor {
    /// Starts at `consumed` from the `state` file.
    pub fn new(consumed: u64) -> DrainCursor {
        DrainCursor {
            expected: consumed,
            cursor: 0,
        }
    }

    /// One step: `Ok(None)` when nothing new is there. Call again after a finished region.
    pub fn step(&mut self, buf: &RelayBuf) -> Result<Option<Region>, RelayError> {
        let seq = self.expected;
        let hdr = buf.header(seq);
        if hdr.magic() != subbuf::MAGIC || hdr.seq_acquire() != seq {
            return Ok(None);
        }
        let mut lost = 0;
        if self.cursor == 0 {
            let (version, header_size) = hdr.version_and_header_size();
            let hs = header_size as usize;
            if version != subbuf::VERSION || hs < subbuf::HEADER_SIZE || !hs.is_multiple_of(8) {
                return Err(RelayError::BadHeader {
                    seq,
                    version,
                    header_size,
                });
            }
            self.cursor = hs;
            lost = hdr.lost();
        }
        // Flags before commit: once FINAL is seen, the commit read after it is the last one.
        let flags = hdr.flags_acquire();
        let commit = hdr.commit_acquire();
        let c = commit as usize;
        if c < self.cursor || c > buf.subbuf_size() || !c.is_multiple_of(8) {
            return Err(RelayError::BadCommit {
                seq,
                commit,
                cursor: self.cursor,
            });
        }
        let region = Region {
            seq,
            lost,
            off: self.cursor,
            len: c - self.cursor,
            finished: flags & subbuf::FLAG_FINAL != 0,
        };
        self.cursor = c;
        if region.finished {
            self.expected += 1;
            self.cursor = 0;
        } else if region.len == 0 && lost == 0 {
            return Ok(None);
        }
        Ok(Some(region))
    }
}

/// `"<cpu> <n>\n"`: the line written to `consumed`.
pub fn consumed_line(cpu: u32, n: u64) -> String {
    format!("{cpu} {n}\n")
}

/// Parses one `consumed` line.
pub fn parse_consumed_line(line: &str) -> Option<(u32, u64)> {
    let mut it = line.split_whitespace();
    let cpu = it.next()?.parse().ok()?;
    let n = it.next()?.parse().ok()?;
    it.next().is_none().then_some((cpu, n))
}

/// Device state as `info` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DevState {
    Idle,
    Setup,
    Running,
    Stopped,
}

impl DevState {
    pub fn name(self) -> &'static str {
        match self {
            DevState::Idle => "idle",
            DevState::Setup => "setup",
            DevState::Running => "running",
            DevState::Stopped => "stopped",
        }
    }
    pub fn from_name(s: &str) -> Option<DevState> {
        Some(match s {
            "idle" => DevState::Idle,
            "setup" => DevState::Setup,
            "running" => DevState::Running,
            "stopped" => DevState::Stopped,
            _ => return None,
        })
    }
}

/// The `info` file (FORMAT.md §7.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Info {
    pub version: String,
    pub card: u32,
    pub driver: String,
    pub state: DevState,
    pub subbuf_size: usize,
    pub n_subbufs: usize,
    pub subbuf_header: usize,
    pub cpus: Vec<u32>,
    pub clock: u32,
    pub session: u64,
    pub anchor_realtime_ns: u64,
    pub anchor_clock_ns: u64,
    pub little_endian: bool,
    /// `simulated 1`: written by grtsim only (sets the stream header's SIMULATED flag).
    pub simulated: bool,
}

impl Info {
    /// The byte order of the device's records (`little_endian`).
    pub fn endian(&self) -> crate::Endian {
        if self.little_endian {
            crate::Endian::Little
        } else {
            crate::Endian::Big
        }
    }

    /// Parses `info`. Unknown keys are ignored; `#` starts a comment.
    pub fn parse(text: &str) -> Result<Info, String> {
        let mut info = Info {
            version: String::new(),
            card: 0,
            driver: String::new(),
            state: DevState::Idle,
            subbuf_size: 0,
            n_subbufs: 0,
            subbuf_header: subbuf::HEADER_SIZE,
            cpus: Vec::new(),
            clock: crate::abi::CLOCK_MONOTONIC,
            session: 0,
            anchor_realtime_ns: 0,
            anchor_clock_ns: 0,
            little_endian: cfg!(target_endian = "little"),
            simulated: false,
        };
        let mut seen_state = false;
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("");
            let mut it = line.split_whitespace();
            let Some(key) = it.next() else { continue };
            let vals: Vec<&str> = it.collect();
            let one = || -> Result<&str, String> {
                vals.first()
                    .copied()
                    .ok_or_else(|| format!("info: `{key}` has no value"))
            };
            fn num<T: FromStr>(key: &str, s: &str) -> Result<T, String> {
                s.parse()
                    .map_err(|_| format!("info: `{key}` has a bad value `{s}`"))
            }
            match key {
                "version" => info.version = one()?.to_string(),
                "card" => info.card = num(key, one()?)?,
                "driver" => info.driver = one()?.to_string(),
                "state" => {
                    info.state = DevState::from_name(one()?)
                        .ok_or_else(|| format!("info: unknown state `{}`", vals[0]))?;
                    seen_state = true;
                }
                "subbuf_size" => info.subbuf_size = num(key, one()?)?,
                "n_subbufs" => info.n_subbufs = num(key, one()?)?,
                "subbuf_header" => info.subbuf_header = num(key, one()?)?,
                "cpus" => {
                    info.cpus = parse_cpu_list(&vals.join(""))
                        .ok_or_else(|| format!("info: bad cpu list `{}`", vals.join(" ")))?
                }
                "clock" => info.clock = num(key, one()?)?,
                "session" => info.session = num(key, one()?)?,
                "anchor" => {
                    info.anchor_realtime_ns = num(key, one()?)?;
                    info.anchor_clock_ns = num(key, vals.get(1).copied().unwrap_or("0"))?;
                }
                "byte_order" => info.little_endian = one()? == "little",
                "simulated" => info.simulated = one()? != "0",
                _ => {}
            }
        }
        if !seen_state {
            return Err("info: no `state` line".into());
        }
        if !info.version.starts_with("1.") {
            return Err(format!(
                "info: unsupported protocol version `{}`",
                info.version
            ));
        }
        Ok(info)
    }
}

impl fmt::Display for Info {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cpus: Vec<String> = self.cpus.iter().map(|c| c.to_string()).collect();
        writeln!(f, "version {}", self.version)?;
        writeln!(f, "card {}", self.card)?;
        writeln!(f, "driver {}", self.driver)?;
        writeln!(f, "state {}", self.state.name())?;
        writeln!(f, "subbuf_size {}", self.subbuf_size)?;
        writeln!(f, "n_subbufs {}", self.n_subbufs)?;
        writeln!(f, "subbuf_header {}", self.subbuf_header)?;
        writeln!(f, "cpus {}", cpus.join(","))?;
        writeln!(f, "clock {}", self.clock)?;
        writeln!(f, "session {}", self.session)?;
        writeln!(
            f,
            "anchor {} {}",
            self.anchor_realtime_ns, self.anchor_clock_ns
        )?;
        writeln!(
            f,
            "byte_order {}",
            if self.little_endian { "little" } else { "big" }
        )?;
        if self.simulated {
            writeln!(f, "simulated 1")?;
        }
        Ok(())
    }
}

/// Most CPUs a CPU list may name (Linux's NR_CPUS is at most 8192 today).
const MAX_LISTED_CPUS: u32 = 65536;

/// Parses `0,1` or `0-3,8` (empty = no CPUs); None past 65536 CPUs in all.
pub fn parse_cpu_list(s: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
                if b < a || b - a > MAX_LISTED_CPUS {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().ok()?),
        }
        // Many ranges add up too: the list is bounded as a whole, not only per range.
        if out.len() > MAX_LISTED_CPUS as usize {
            return None;
        }
    }
    Some(out)
}

/// One line of `state`: `<cpu> <produced> <consumed> <lost_pending>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuState {
    pub cpu: u32,
    pub produced: u64,
    pub consumed: u64,
    pub lost_pending: u64,
}

impl CpuState {
    pub fn parse_all(text: &str) -> Result<Vec<CpuState>, String> {
        let mut out = Vec::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let v: Vec<u64> = line
                .split_whitespace()
                .map(|t| t.parse::<u64>())
                .collect::<Result<_, _>>()
                .map_err(|_| format!("state: bad line `{line}`"))?;
            if v.len() != 4 || v[0] > u32::MAX as u64 {
                return Err(format!("state: bad line `{line}`"));
            }
            out.push(CpuState {
                cpu: v[0] as u32,
                produced: v[1],
                consumed: v[2],
                lost_pending: v[3],
            });
        }
        Ok(out)
    }
}

impl fmt::Display for CpuState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} {} {} {}",
            self.cpu, self.produced, self.consumed, self.lost_pending
        )
    }
}

/// Kernel-side filters of `setup`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Filters {
    pub events: Option<u64>,
    pub pid: Option<u32>,
    pub ctx: Option<u32>,
    pub ring: Option<u32>,
}

impl Filters {
    /// Whether a record passes (notes other than events pass the event mask).
    #[inline]
    pub fn admits(&self, rtype: u16, code: u16, pid: u32, ctx: u32, ring: u32) -> bool {
        if rtype != crate::abi::rtype::EVENT {
            return true;
        }
        self.events
            .is_none_or(|m| code < 64 && m & (1u64 << code) != 0)
            && self.pid.is_none_or(|p| p == pid)
            && self.ctx.is_none_or(|c| c == ctx)
            && self.ring.is_none_or(|r| r == ring)
    }
}

/// A command written to `ctl`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CtlCommand {
    Setup {
        subbuf_size: usize,
        n_subbufs: usize,
        filters: Filters,
    },
    Start,
    Stop,
    Teardown,
}

impl fmt::Display for CtlCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CtlCommand::Setup {
                subbuf_size,
                n_subbufs,
                filters,
            } => {
                write!(f, "setup subbuf_size={subbuf_size} n_subbufs={n_subbufs}")?;
                if let Some(m) = filters.events {
                    write!(f, " events={m:x}")?;
                }
                if let Some(p) = filters.pid {
                    write!(f, " pid={p}")?;
                }
                if let Some(c) = filters.ctx {
                    write!(f, " ctx={c}")?;
                }
                if let Some(r) = filters.ring {
                    write!(f, " ring={r}")?;
                }
                Ok(())
            }
            CtlCommand::Start => f.write_str("start"),
            CtlCommand::Stop => f.write_str("stop"),
            CtlCommand::Teardown => f.write_str("teardown"),
        }
    }
}

/// Whether `setup` may ask for sub-buffers of `size` bytes (the kernel's range, a multiple
/// of the record alignment).
pub fn subbuf_size_ok(size: usize) -> bool {
    (subbuf::MIN_SUBBUF_SIZE..=subbuf::MAX_SUBBUF_SIZE).contains(&size)
        && size.is_multiple_of(crate::abi::RECORD_ALIGN)
}

/// Whether `setup` may ask for `n` sub-buffers (the kernel's range).
pub fn n_subbufs_ok(n: usize) -> bool {
    (subbuf::MIN_N_SUBBUFS..=subbuf::MAX_N_SUBBUFS).contains(&n)
}

impl FromStr for CtlCommand {
    type Err = String;
    fn from_str(s: &str) -> Result<CtlCommand, String> {
        let mut it = s.split_whitespace();
        let cmd = it.next().ok_or("empty command")?;
        let cmd = match cmd {
            "start" => CtlCommand::Start,
            "stop" => CtlCommand::Stop,
            "teardown" => CtlCommand::Teardown,
            "setup" => {
                let (mut size, mut n, mut filters) = (None, None, Filters::default());
                for arg in it.by_ref() {
                    let (k, v) = arg
                        .split_once('=')
                        .ok_or_else(|| format!("setup: bad argument `{arg}`"))?;
                    let bad = || format!("setup: bad value in `{arg}`");
                    match k {
                        "subbuf_size" => size = Some(v.parse().map_err(|_| bad())?),
                        "n_subbufs" => n = Some(v.parse().map_err(|_| bad())?),
                        "events" => {
                            let v = v.trim_start_matches("0x");
                            filters.events = Some(u64::from_str_radix(v, 16).map_err(|_| bad())?)
                        }
                        "pid" => filters.pid = Some(v.parse().map_err(|_| bad())?),
                        "ctx" => filters.ctx = Some(v.parse().map_err(|_| bad())?),
                        "ring" => filters.ring = Some(v.parse().map_err(|_| bad())?),
                        _ => return Err(format!("setup: unknown argument `{k}`")),
                    }
                }
                let (subbuf_size, n_subbufs) = (
                    size.ok_or("setup: subbuf_size missing")?,
                    n.ok_or("setup: n_subbufs missing")?,
                );
                if !subbuf_size_ok(subbuf_size) || !n_subbufs_ok(n_subbufs) {
                    return Err("setup: sub-buffer size or count out of range".into());
                }
                CtlCommand::Setup {
                    subbuf_size,
                    n_subbufs,
                    filters,
                }
            }
            other => return Err(format!("unknown command `{other}`")),
        };
        if it.next().is_some() {
            return Err(format!("`{cmd}` takes no arguments"));
        }
        Ok(cmd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    fn buffer(subbuf_size: usize, n: usize) -> (Vec<u64>, RelayBuf) {
        let mut mem = vec![0u64; subbuf_size * n / 8];
        // SAFETY: the Vec outlives every use in the test and is 8-aligned.
        let buf = unsafe { RelayBuf::new(mem.as_mut_ptr() as *mut u8, subbuf_size, n) };
        (mem, buf)
    }

    fn record(out: &mut [u8], v: u64) {
        out.fill(0);
        let len = out.len() as u16;
        out[2..4].copy_from_slice(&len.to_ne_bytes());
        out[8..16].copy_from_slice(&v.to_ne_bytes());
    }

    /// Producer and consumer on two threads: every value arrives once, in order, or is
    /// counted as lost; lost counts equal `dropped`.
    #[test]
    fn concurrent_producer_and_consumer_agree() {
        let (_mem, buf) = buffer(4096, 4);
        let counters = Arc::new(CpuCounters::default());
        let dropped = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        const N: u64 = 200_000;
        let prod = {
            let (counters, dropped, done) = (counters.clone(), dropped.clone(), done.clone());
            std::thread::spawn(move || {
                let mut p = RelayProducer::new(buf, &counters, &dropped);
                let mut written = Vec::new();
                for v in 0..N {
                    let len = if v % 7 == 0 { 72 } else { 40 };
                    if let Some(r) = p.reserve(len) {
                        record(r, v);
                        written.push(v);
                    }
                    if v % 3 == 0 {
                        p.commit();
                    }
                }
                p.flush();
                done.store(true, Ordering::Release);
                written
            })
        };
        let mut cur = DrainCursor::new(0);
        let (mut got, mut lost, mut out) = (Vec::new(), 0u64, Vec::new());
        loop {
            let finished_producer = done.load(Ordering::Acquire);
            let mut progressed = false;
            while let Some(r) = cur.step(&buf).unwrap() {
                progressed = true;
                lost += r.lost as u64;
                out.clear();
                buf.copy_out(r.seq, r.off, r.len, &mut out);
                let mut o = 0;
                while o < out.len() {
                    let size = u16::from_ne_bytes([out[o + 2], out[o + 3]]) as usize;
                    got.push(u64::from_ne_bytes(out[o + 8..o + 16].try_into().unwrap()));
                    o += size;
                }
                assert_eq!(o, out.len(), "regions hold whole records");
                if r.finished {
                    counters.consume(1);
                }
            }
            if finished_producer && !progressed {
                break;
            }
        }
        let written = prod.join().unwrap();
        lost += counters.lost_pending.load(Ordering::Relaxed);
        assert_eq!(got, written);
        assert_eq!(lost, dropped.load(Ordering::Relaxed));
        assert_eq!(got.len() as u64 + lost, N);
        assert!(lost > 0, "a 16 KiB buffer must overflow at this speed");
    }

    #[test]
    fn refused_switch_carries_lost_into_next_header() {
        let (_mem, buf) = buffer(4096, 2);
        let counters = CpuCounters::default();
        let dropped = AtomicU64::new(0);
        let mut p = RelayProducer::new(buf, &counters, &dropped);
        let per_subbuf = (4096 - 32) / 64;
        for _ in 0..per_subbuf * 2 + 5 {
            if let Some(r) = p.reserve(64) {
                record(r, 1);
            }
            p.commit();
        }
        assert_eq!(dropped.load(Ordering::Relaxed), 5);
        assert_eq!(counters.lost_pending.load(Ordering::Relaxed), 5);
        assert_eq!(counters.produced.load(Ordering::Relaxed), 2);
        // Consume one sub-buffer: the next write starts sub-buffer 2 in slot 0 with lost = 5.
        counters.consume(1);
        p.reserve(64).map(|r| record(r, 2)).unwrap();
        p.commit();
        let h = buf.header(2);
        assert_eq!((h.seq_acquire(), h.lost(), h.commit_acquire()), (2, 5, 96));
        assert_eq!(buf.header(1).flags_acquire(), subbuf::FLAG_FINAL);
        assert_eq!(
            buf.header(1).padding() as usize + (32 + per_subbuf * 64),
            4096
        );
    }

    #[test]
    fn cursor_waits_for_the_expected_sequence_and_commit() {
        let (_mem, buf) = buffer(4096, 2);
        let mut cur = DrainCursor::new(0);
        assert_eq!(cur.step(&buf).unwrap(), None, "zeroed buffer: nothing yet");
        let counters = CpuCounters::default();
        let dropped = AtomicU64::new(0);
        let mut p = RelayProducer::new(buf, &counters, &dropped);
        assert_eq!(cur.step(&buf).unwrap(), None, "header only");
        record(p.reserve(40).unwrap(), 9);
        assert_eq!(cur.step(&buf).unwrap(), None, "written but not committed");
        p.commit();
        let r = cur.step(&buf).unwrap().unwrap();
        assert_eq!((r.off, r.len, r.finished), (32, 40, false));
        p.flush();
        let r = cur.step(&buf).unwrap().unwrap();
        assert_eq!((r.off, r.len, r.finished), (72, 0, true));
        assert_eq!(cur.expected, 1);
    }

    #[test]
    fn text_files_round_trip() {
        let info = Info {
            version: "1.0".into(),
            card: 1,
            driver: "virtio_gpu".into(),
            state: DevState::Running,
            subbuf_size: 262144,
            n_subbufs: 8,
            subbuf_header: 32,
            cpus: vec![0, 1, 2, 3],
            clock: 1,
            session: 1234567890,
            anchor_realtime_ns: 1763740000123456789,
            anchor_clock_ns: 123456789,
            little_endian: true,
            simulated: true,
        };
        assert_eq!(Info::parse(&info.to_string()).unwrap(), info);
        let doc = "version 1.0\ncard 0\ndriver virtio_gpu\nstate setup            # idle\n\
                   subbuf_size 262144\nn_subbufs 8\nsubbuf_header 32\ncpus 0,1\nclock 1\n\
                   session 1234567890\nanchor 1763740000123456789 123456789\nbyte_order little\n\
                   future_key 7\n";
        let parsed = Info::parse(doc).unwrap();
        assert_eq!(parsed.state, DevState::Setup);
        assert_eq!(parsed.cpus, vec![0, 1]);
        assert_eq!(parse_cpu_list("0-2,5"), Some(vec![0, 1, 2, 5]));
        // Bounded as a whole: many large ranges do not add up to millions of CPUs.
        assert_eq!(parse_cpu_list(&["0-65535"; 64].join(",")), None);
        assert_eq!(parse_cpu_list("0-65535").map(|v| v.len()), Some(65536));
        let st = CpuState {
            cpu: 1,
            produced: 9,
            consumed: 7,
            lost_pending: 3,
        };
        assert_eq!(CpuState::parse_all(&st.to_string()).unwrap(), vec![st]);
        let setup = CtlCommand::Setup {
            subbuf_size: 65536,
            n_subbufs: 4,
            filters: Filters {
                events: Some(0xc0),
                pid: Some(42),
                ctx: None,
                ring: Some(1),
            },
        };
        assert_eq!(
            setup.to_string(),
            "setup subbuf_size=65536 n_subbufs=4 events=c0 pid=42 ring=1"
        );
        assert_eq!(setup.to_string().parse::<CtlCommand>().unwrap(), setup);
        assert_eq!("stop\n".parse::<CtlCommand>().unwrap(), CtlCommand::Stop);
        assert!("setup subbuf_size=100 n_subbufs=4"
            .parse::<CtlCommand>()
            .is_err());
        assert_eq!(parse_consumed_line(&consumed_line(3, 2)), Some((3, 2)));
    }
}
