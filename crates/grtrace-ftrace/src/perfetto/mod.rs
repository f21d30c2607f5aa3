//! Perfetto traces (`.perfetto-trace`, `.pftrace`) as import input: the ftrace events of
//! their `FtraceEventBundle`s, rebuilt as binary records of the kernel's own formats (the
//! fixtures' formats, as text input is) and mapped by the same [`Mapper`] as trace.dat and
//! text, so everything IMPORT.md says holds for them too.
//!
//! A trace is read in two passes over the mapped file, both zero-copy ([`wire`]):
//!
//! 1. **Index**: every packet is visited once; ftrace bundles are listed per (packet
//!    sequence, CPU) stream, each stream in its own time order; `compressed_packets` are
//!    inflated to be indexed, and kept for the merge up to [`RESIDENT_INFLATED`] bytes (the
//!    others are dropped and inflated again when the merge reaches them); clock snapshots, `ftrace_stats`, the
//!    processes' names and the generic events' descriptors are kept; the events present
//!    choose the formats (as a trace.dat carries those of the events it recorded).
//! 2. **Merge**: the streams are merged by time, as [`crate::import::run`] merges a
//!    trace.dat's CPUs, and each event is mapped. A compressed packet is dropped once all
//!    its bundles are read, so past the budget memory holds only the packets the streams'
//!    heads are in.
//!
//! Times: ftrace's `boot` clock is Perfetto's default; bundles of another ftrace clock are
//! put on boot by their `ftrace_timestamp` / `boot_timestamp` pairs. When the trace has
//! `ClockSnapshot`s of BOOTTIME and MONOTONIC, events are put on CLOCK_MONOTONIC (the
//! clock grtrace recordings use), piecewise by the latest snapshot, so imports line up
//! with grtrace recordings of the same machine; else they stay on BOOTTIME.

pub mod schema;
pub mod wire;
pub mod writer;

use std::collections::HashMap;
use std::io::Read;

use grtrace_format::Endian;

use crate::format::{EventFormat, Loc};
use crate::import::ImportError;
use crate::map::{Mapper, Sink};
use crate::tracedat::DatError;
use schema::{bundle, clock, event, generic, packet, stats};
use wire::{Fields, Val, WireError};

/// Most bytes one `compressed_packets` may inflate to (Perfetto's are well under a MiB):
/// more is taken for damage, not allocated.
pub const MAX_INFLATED: usize = 1 << 28;

/// Most inflated bytes the index keeps for the merge (so that a compressed packet is not
/// inflated twice); packets past it are inflated again when the merge reaches them.
pub const RESIDENT_INFLATED: usize = 64 << 20;

/// Most distinct event names kept for the summary; further names count as one row.
const MAX_NAMES: usize = 1024;

/// Typed events' proto field numbers are below this (schema::TYPED: 1 to 9).
const MAX_TYPED_FIELD: usize = 16;

/// Longest string field put in a rebuilt record (a `__data_loc` holds 16 bits of offset).
const MAX_STR: usize = 4096;

/// Whether `data` is a Perfetto trace: a `Trace` whose first packets (up to four, or all
/// there are) are well-formed length-delimited `TracePacket`s (field 1). Decided by
/// content, not by file name; text and trace.dat never parse so.
pub fn looks_like_perfetto(data: &[u8]) -> bool {
    let mut f = Fields::new(data);
    let mut n = 0;
    while n < 4 {
        match f.next_field() {
            Ok(Some((schema::TRACE_PACKET, Val::Len(p)))) => {
                let mut pf = Fields::new(p);
                loop {
                    match pf.next_field() {
                        Ok(Some(_)) => {}
                        Ok(None) => break,
                        Err(_) => return false,
                    }
                }
                n += 1;
            }
            Ok(None) => return n > 0,
            // Damage after a good first packet is the trace's damage, reported by the import.
            Ok(Some(_)) | Err(_) => return n > 0,
        }
    }
    true
}

/// A bundle of one stream: where its bytes are.
#[derive(Clone, Copy, Debug)]
struct BundleRef {
    /// `u32::MAX`: the file; else the index of the compressed packet holding it.
    blob: u32,
    /// A loss before its first event (`lost_events`, or `previous_packet_dropped`).
    lost: bool,
    off: usize,
    len: usize,
    /// Added to its event times to put them on BOOTTIME.
    delta: i64,
}

/// A `compressed_packets` payload: file range, and its inflated bytes while in use.
struct Blob {
    at: usize,
    len: usize,
    /// Bundles in it not read yet.
    left: u32,
    data: Option<Vec<u8>>,
}

/// The bundles of one (sequence, CPU) in order.
struct Stream {
    cpu: u32,
    bundles: Vec<BundleRef>,
    /// `(ftrace clock, delta)` of the last bundle that had a clock sync pair.
    sync: Option<i64>,
}

/// A generic event's descriptor (Perfetto v50+): its fields by number.
struct Descriptor {
    name: String,
    /// (field number, name, string?, zigzag?)
    fields: Vec<(u32, String, bool, bool)>,
}

/// What the index found, for the note and the summary.
#[derive(Clone, Debug, Default)]
pub struct Info {
    /// Packets read (compressed ones counted inside).
    pub packets: u64,
    pub compressed_packets: u64,
    /// CPUs that had bundles.
    pub cpus: Vec<u32>,
    /// sched_switch / sched_waking events in the compact encoding (no GPU data): skipped.
    pub compact_sched: u64,
    /// Packets of other data sources, by kind (track_event, process_tree, sys_stats...).
    pub other_packets: Vec<(String, u64)>,
    /// Clock snapshots with both BOOTTIME and MONOTONIC.
    pub snapshots: usize,
    /// `mono`, `boot`, or the ftrace clock the events were left on.
    pub clock: &'static str,
    /// How the events came to be on `clock`.
    pub clock_how: String,
    /// Events lost per CPU by `ftrace_stats` (end minus start: overrun + dropped).
    pub stats_lost: Vec<(u32, u64)>,
    /// Bundles marked with a loss (`lost_events` / `previous_packet_dropped`).
    pub lost_bundles: u64,
    /// Events skipped by name (not GPU tracepoints, or ones with no known format).
    pub skipped: Vec<(String, u64)>,
}

/// How to rebuild one event's record: a format and where the proto fields go.
struct Builder {
    /// Index into `formats`.
    fmt: usize,
    fixed: usize,
    type_loc: Loc,
    pid_loc: Loc,
    /// Typed events: kernel field by proto field number (size 0: none).
    by_number: [Loc; MAX_TYPED_FIELD],
}

/// A Perfetto trace being imported.
pub struct PerfettoImport<'a> {
    data: &'a [u8],
    blobs: Vec<Blob>,
    streams: Vec<Stream>,
    descriptors: HashMap<u32, Descriptor>,
    /// (boot, mono) of each clock snapshot, by boot time.
    snapshots: Vec<(u64, u64)>,
    formats: Vec<EventFormat>,
    /// Typed event field number -> builder index (u32::MAX: none).
    typed: Vec<u32>,
    /// Event name -> builders of its format variants.
    by_name: HashMap<String, Vec<usize>>,
    builders: Vec<Builder>,
    /// pid -> task name from `process_tree`.
    comms: Vec<(u32, String)>,
    /// Damage that stopped the index: reported after everything before it was imported.
    damage: Option<DatError>,
    /// The events on `info.clock` need MONOTONIC conversion by `snapshots`.
    to_mono: bool,
    pub info: Info,
    pub mapper: Mapper,
    release: Option<&'a dyn Fn(usize, usize)>,
    skipped: HashMap<String, u64>,
    /// Skipped typed events by field number (few distinct: a list).
    skipped_fields: Vec<(u32, u64)>,
    buf: Vec<u8>,
}

fn damage(at: usize, msg: impl Into<String>) -> DatError {
    DatError {
        offset: at as u64,
        msg: msg.into(),
    }
}

/// The inflated bytes of a zlib `compressed_packets` payload, at most [`MAX_INFLATED`].
fn inflate(z: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity((z.len() * 4).min(MAX_INFLATED));
    let mut d = flate2::read::ZlibDecoder::new(z).take(MAX_INFLATED as u64 + 1);
    d.read_to_end(&mut out)
        .map_err(|e| format!("compressed_packets: zlib: {e}"))?;
    if out.len() > MAX_INFLATED {
        return Err(format!(
            "compressed_packets inflates to more than {} MiB",
            MAX_INFLATED >> 20
        ));
    }
    Ok(out)
}

/// Where a packet list is: the file (`blob` u32::MAX; positions are file offsets) or the
/// inflated bytes of the compressed packet at file offset `file_at`.
#[derive(Clone, Copy)]
struct Where {
    blob: u32,
    file_at: usize,
}

impl Where {
    /// Damage at `pos` of the list.
    fn err(&self, pos: usize, msg: String) -> DatError {
        if self.blob == u32::MAX {
            damage(pos, msg)
        } else {
            damage(
                self.file_at,
                format!("compressed packet, byte {pos} of its inflated data: {msg}"),
            )
        }
    }
}

/// State of the index pass over one packet list (the file, or an inflated blob).
struct Indexer<'r> {
    streams: Vec<Stream>,
    by_key: HashMap<(u32, u32), usize>,
    descriptors: HashMap<u32, Descriptor>,
    snapshots: Vec<(u64, u64)>,
    typed_seen: Vec<bool>,
    names: Vec<String>,
    info: Info,
    other: HashMap<u32, u64>,
    stats_start: HashMap<u32, u64>,
    stats_end: HashMap<u32, u64>,
    /// Sequences whose next bundle follows dropped packets.
    dropped: Vec<u32>,
    ftrace_clock: Option<u64>,
    unsynced: u64,
    /// Inflated bytes kept from the index for the merge.
    resident: usize,
    /// Drops file ranges already read from the mapping (see [`PerfettoImport::new_releasing`]).
    release: Option<&'r dyn Fn(usize, usize)>,
    released: usize,
    comms: Vec<(u32, String)>,
}

/// Names of packet kinds the summary counts as skipped.
fn packet_kind(field: u32) -> String {
    match field {
        2 => "process_tree".into(),
        5 => "chrome_events".into(),
        7 => "sys_stats".into(),
        9 => "process_stats".into(),
        11 => "track_event".into(),
        33 => "trace_config".into(),
        35 => "trace_stats".into(),
        36 => "synchronization_marker".into(),
        45 => "system_info".into(),
        60 => "track_descriptor".into(),
        66 => "perf_sample".into(),
        n => format!("packet field {n}"),
    }
}

/// `TracePacket` fields that describe the packet, not its content.
fn is_meta(field: u32) -> bool {
    matches!(field, 3 | 8 | 10 | 12 | 13 | 41 | 42 | 58 | 59 | 79 | 87)
}

impl Indexer<'_> {
    fn stream(&mut self, seq: u32, cpu: u32) -> usize {
        if let Some(&i) = self.by_key.get(&(seq, cpu)) {
            return i;
        }
        let i = self.streams.len();
        self.streams.push(Stream {
            cpu,
            bundles: Vec::new(),
            sync: None,
        });
        self.by_key.insert((seq, cpu), i);
        i
    }

    /// Indexes the packets of `list` (a `Trace`): the file, or the inflated bytes of
    /// compressed packet `w.blob`.
    fn packets(&mut self, list: &[u8], w: Where, blobs: &mut Vec<Blob>) -> Result<(), DatError> {
        let mut f = Fields::new(list);
        loop {
            let at = f.pos();
            let (n, v) = match f.next_field() {
                Ok(Some(x)) => x,
                Ok(None) => return Ok(()),
                Err(e) => return Err(w.err(e.at, format!("Perfetto trace: {}", e.msg))),
            };
            match (n, v) {
                (schema::TRACE_PACKET, Val::Len(p)) => {
                    let p_off = p.as_ptr() as usize - list.as_ptr() as usize;
                    self.packet(list, p, p_off, w, blobs)?;
                    if w.blob == u32::MAX {
                        self.released = release_upto(self.release, self.released, f.pos());
                    }
                }
                (schema::TRACE_PACKET, _) => {
                    return Err(w.err(at, "a TracePacket that is not a message".into()))
                }
                _ => {}
            }
        }
    }

    /// One packet `p`, at `p_off` in `list`.
    fn packet(
        &mut self,
        list: &[u8],
        p: &[u8],
        p_off: usize,
        w: Where,
        blobs: &mut Vec<Blob>,
    ) -> Result<(), DatError> {
        self.info.packets += 1;
        let rel = |e: WireError| w.err(p_off + e.at, format!("TracePacket: {}", e.msg));
        let mut seq = 0u32;
        let mut dropped = false;
        let mut ftrace: Option<&[u8]> = None;
        let mut content = None;
        let mut f = Fields::new(p);
        while let Some((n, v)) = f.next_field().map_err(rel)? {
            match (n, v) {
                (packet::TRUSTED_PACKET_SEQUENCE_ID, v) => seq = v.int() as u32,
                (packet::PREVIOUS_PACKET_DROPPED, v) => dropped |= v.int() != 0,
                (packet::FTRACE_EVENTS, Val::Len(b)) => ftrace = Some(b),
                (packet::COMPRESSED_PACKETS, Val::Len(z)) => {
                    let z_off = z.as_ptr() as usize - list.as_ptr() as usize;
                    if w.blob != u32::MAX {
                        return Err(
                            w.err(z_off, "compressed packet inside a compressed packet".into())
                        );
                    }
                    let inner = inflate(z).map_err(|m| w.err(z_off, m))?;
                    self.info.compressed_packets += 1;
                    let id = blobs.len() as u32;
                    blobs.push(Blob {
                        at: z_off,
                        len: z.len(),
                        left: 0,
                        data: None,
                    });
                    let iw = Where {
                        blob: id,
                        file_at: z_off,
                    };
                    self.packets(&inner, iw, blobs)?;
                    // Kept for the merge while the budget lasts (inflating is most of the
                    // cost of a compressed trace); the rest is inflated again there.
                    if self.resident + inner.len() <= RESIDENT_INFLATED {
                        self.resident += inner.len();
                        blobs[id as usize].data = Some(inner);
                    }
                }
                (packet::CLOCK_SNAPSHOT, Val::Len(b)) => self.snapshot(b).map_err(rel)?,
                (packet::FTRACE_STATS, Val::Len(b)) => self.ftrace_stats(b).map_err(rel)?,
                (2, Val::Len(b)) => {
                    self.process_tree(b).map_err(rel)?;
                    content = Some(2);
                }
                (n, _) if !is_meta(n) => content = Some(n),
                _ => {}
            }
        }
        if dropped && !self.dropped.contains(&seq) {
            self.dropped.push(seq);
        }
        if let Some(b) = ftrace {
            let b_off = b.as_ptr() as usize - list.as_ptr() as usize;
            self.bundle(b, b_off, w, blobs, seq)?;
        } else if let Some(n) = content {
            *self.other.entry(n).or_insert(0) += 1;
        }
        Ok(())
    }

    /// One bundle `b`, at `off` in its list.
    fn bundle(
        &mut self,
        b: &[u8],
        off: usize,
        w: Where,
        blobs: &mut [Blob],
        seq: u32,
    ) -> Result<(), DatError> {
        let rel = |e: WireError| w.err(off + e.at, format!("FtraceEventBundle: {}", e.msg));
        let mut cpu = 0u32;
        let mut lost = false;
        let mut clock_kind = schema::ftrace_clock::UNSPECIFIED;
        let (mut fts, mut bts) = (None, None);
        let mut f = Fields::new(b);
        while let Some((n, v)) = f.next_field().map_err(rel)? {
            match (n, v) {
                (bundle::CPU, v) => cpu = v.int() as u32,
                (bundle::LOST_EVENTS, v) => lost |= v.int() != 0,
                (bundle::FTRACE_CLOCK, v) => clock_kind = v.int(),
                (bundle::FTRACE_TIMESTAMP, v) => fts = Some(v.int() as i64),
                (bundle::BOOT_TIMESTAMP, v) => bts = Some(v.int() as i64),
                (bundle::EVENT, Val::Len(e)) => self.event_kind(e).map_err(rel)?,
                (bundle::COMPACT_SCHED, Val::Len(c)) => {
                    let mut cf = Fields::new(c);
                    while let Some((n, v)) = cf.next_field().map_err(rel)? {
                        if let (
                            bundle::COMPACT_SWITCH_TIMESTAMP | bundle::COMPACT_WAKING_TIMESTAMP,
                            Val::Len(x),
                        ) = (n, v)
                        {
                            self.info.compact_sched += wire::packed_count(x);
                        }
                    }
                }
                (bundle::GENERIC_EVENT_DESCRIPTORS, Val::Len(d)) => {
                    self.descriptor(d).map_err(rel)?
                }
                _ => {}
            }
        }
        if cpu >= crate::tracedat::MAX_CPUS {
            return Err(w.err(off, format!("FtraceEventBundle of CPU {cpu}")));
        }
        let si = self.stream(seq, cpu);
        let st = &mut self.streams[si];
        let delta = if clock_kind == schema::ftrace_clock::UNSPECIFIED {
            0
        } else {
            self.ftrace_clock = Some(clock_kind);
            if let (Some(f), Some(b)) = (fts, bts) {
                st.sync = Some(b - f);
            }
            match st.sync {
                Some(d) => d,
                None => {
                    self.unsynced += 1;
                    0
                }
            }
        };
        if let Some(i) = self.dropped.iter().position(|&s| s == seq) {
            self.dropped.swap_remove(i);
            lost = true;
        }
        if lost {
            self.info.lost_bundles += 1;
        }
        if w.blob != u32::MAX {
            blobs[w.blob as usize].left += 1;
        }
        st.bundles.push(BundleRef {
            blob: w.blob,
            lost,
            off,
            len: b.len(),
            delta,
        });
        Ok(())
    }

    /// Notes which event an `FtraceEvent` is (for the formats).
    fn event_kind(&mut self, e: &[u8]) -> Result<(), WireError> {
        let mut f = Fields::new(e);
        while let Some((n, v)) = f.next_field()? {
            match (n, v) {
                (event::GENERIC, Val::Len(g)) => {
                    if let Ok(Some((generic::EVENT_NAME, Val::Len(name)))) =
                        Fields::new(g).next_field()
                    {
                        self.name(name);
                    }
                }
                (n, Val::Len(_)) if (n as usize) < self.typed_seen.len() => {
                    self.typed_seen[n as usize] = true
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn name(&mut self, name: &[u8]) {
        if self.names.len() < MAX_NAMES && !self.names.iter().any(|n| n.as_bytes() == name) {
            self.names.push(String::from_utf8_lossy(name).into_owned());
        }
    }

    fn descriptor(&mut self, d: &[u8]) -> Result<(), WireError> {
        let mut id = None;
        let mut desc = None;
        let mut f = Fields::new(d);
        while let Some((n, v)) = f.next_field()? {
            match (n, v) {
                (1, v) => id = Some(v.int() as u32),
                (2, Val::Len(b)) => desc = Some(b),
                _ => {}
            }
        }
        let (Some(id), Some(desc)) = (id, desc) else {
            return Ok(());
        };
        if self.descriptors.contains_key(&id) || self.descriptors.len() >= MAX_NAMES {
            return Ok(());
        }
        // google.protobuf.DescriptorProto: name = 1, field = 2 (FieldDescriptorProto:
        // name = 1, number = 3, type = 5).
        let mut name = String::new();
        let mut fields = Vec::new();
        let mut f = Fields::new(desc);
        while let Some((n, v)) = f.next_field()? {
            match (n, v) {
                (1, Val::Len(b)) => name = String::from_utf8_lossy(b).into_owned(),
                (2, Val::Len(fd)) => {
                    let (mut fname, mut num, mut ty) = (String::new(), 0u32, 0u64);
                    let mut ff = Fields::new(fd);
                    while let Some((n, v)) = ff.next_field()? {
                        match (n, v) {
                            (1, Val::Len(b)) => fname = String::from_utf8_lossy(b).into_owned(),
                            (3, v) => num = v.int() as u32,
                            (5, v) => ty = v.int(),
                            _ => {}
                        }
                    }
                    // TYPE_STRING 9, TYPE_BYTES 12; TYPE_SINT32 17, TYPE_SINT64 18.
                    fields.push((num, fname, ty == 9 || ty == 12, ty == 17 || ty == 18));
                }
                _ => {}
            }
        }
        self.name(name.as_bytes());
        self.descriptors.insert(id, Descriptor { name, fields });
        Ok(())
    }

    fn snapshot(&mut self, b: &[u8]) -> Result<(), WireError> {
        let (mut boot, mut mono) = (None, None);
        let mut f = Fields::new(b);
        while let Some((n, v)) = f.next_field()? {
            if let (clock::CLOCKS, Val::Len(c)) = (n, v) {
                let (mut id, mut ts) = (0, 0);
                let mut cf = Fields::new(c);
                while let Some((n, v)) = cf.next_field()? {
                    match n {
                        clock::CLOCK_ID => id = v.int(),
                        clock::TIMESTAMP => ts = v.int(),
                        _ => {}
                    }
                }
                match id {
                    clock::BOOTTIME => boot = Some(ts),
                    clock::MONOTONIC => mono = Some(ts),
                    _ => {}
                }
            }
        }
        if let (Some(b), Some(m)) = (boot, mono) {
            if b >= m {
                self.snapshots.push((b, m));
            }
        }
        Ok(())
    }

    fn ftrace_stats(&mut self, b: &[u8]) -> Result<(), WireError> {
        let mut phase = 0;
        let mut cpus = Vec::new();
        let mut f = Fields::new(b);
        while let Some((n, v)) = f.next_field()? {
            match (n, v) {
                (stats::PHASE, v) => phase = v.int(),
                (stats::CPU_STATS, Val::Len(c)) => {
                    let (mut cpu, mut lost) = (0u32, 0u64);
                    let mut cf = Fields::new(c);
                    while let Some((n, v)) = cf.next_field()? {
                        match n {
                            stats::CPU => cpu = v.int() as u32,
                            stats::OVERRUN | stats::DROPPED_EVENTS => {
                                lost = lost.saturating_add(v.int())
                            }
                            _ => {}
                        }
                    }
                    cpus.push((cpu, lost));
                }
                _ => {}
            }
        }
        let map = match phase {
            stats::PHASE_START => &mut self.stats_start,
            stats::PHASE_END => &mut self.stats_end,
            _ => return Ok(()),
        };
        for (cpu, lost) in cpus {
            if map.len() < crate::tracedat::MAX_CPUS as usize {
                map.insert(cpu, lost);
            }
        }
        Ok(())
    }

    fn process_tree(&mut self, b: &[u8]) -> Result<(), WireError> {
        let mut f = Fields::new(b);
        while let Some((n, v)) = f.next_field()? {
            let Val::Len(m) = v else { continue };
            // Thread: tid 1, name 2; Process: pid 1, cmdline 3 (first = the program).
            let name_field = match n {
                1 => 3,
                2 => 2,
                _ => continue,
            };
            let (mut id, mut name) = (None, None);
            let mut mf = Fields::new(m);
            while let Some((k, v)) = mf.next_field()? {
                match (k, v) {
                    (1, v) => id = Some(v.int() as u32),
                    (k, Val::Len(s)) if k == name_field && name.is_none() => name = Some(s),
                    _ => {}
                }
            }
            if let (Some(id), Some(name)) = (id, name) {
                let name = String::from_utf8_lossy(name);
                let name = if n == 1 {
                    // A command line's program, as the kernel's comm would name it.
                    let base = name.rsplit('/').next().unwrap_or(&name);
                    base.chars().take(15).collect::<String>()
                } else {
                    name.into_owned()
                };
                match self.comms.iter_mut().find(|(p, _)| *p == id) {
                    Some(c) if n == 2 => c.1 = name,
                    Some(_) => {}
                    None => self.comms.push((id, name)),
                }
            }
        }
        Ok(())
    }
}

/// The builder rows of `fmt` for `typed` (the proto -> kernel field table, if typed).
fn builder(formats: &[EventFormat], fmt: usize, typed: Option<&schema::Typed>) -> Builder {
    let f = &formats[fmt];
    let loc = |n: &str| f.field(n).map(|x| x.loc()).unwrap_or_default();
    let mut by_number = [Loc::default(); MAX_TYPED_FIELD];
    for (num, name) in typed.map(|t| t.fields).unwrap_or_default() {
        if let (Some(x), Some(slot)) = (f.field(name), by_number.get_mut(*num as usize)) {
            *slot = x.loc();
        }
    }
    Builder {
        fmt,
        fixed: f.fixed_size(),
        type_loc: loc("common_type"),
        pid_loc: loc("common_pid"),
        by_number,
    }
}

#[inline]
fn put_int(buf: &mut [u8], l: Loc, v: u64) {
    let e = Endian::NATIVE;
    match l.size {
        1 => buf[l.offset] = v as u8,
        2 => e.put_u16(buf, l.offset, v as u16),
        4 => e.put_u32(buf, l.offset, v as u32),
        8 => e.put_u64(buf, l.offset, v),
        _ => {}
    }
}

#[inline]
fn put_str(buf: &mut Vec<u8>, l: Loc, s: &[u8]) {
    let s = &s[..s.len().min(MAX_STR)];
    if l.data_loc || l.rel_loc {
        if l.size != 4 {
            return;
        }
        let off = buf.len();
        buf.extend_from_slice(s);
        buf.push(0);
        let len = s.len() + 1;
        let rel = if l.rel_loc { off - (l.offset + 4) } else { off };
        Endian::NATIVE.put_u32(buf, l.offset, ((len as u32) << 16) | rel as u32);
    } else {
        let n = s.len().min(l.size);
        buf[l.offset..l.offset + n].copy_from_slice(&s[..n]);
    }
}

/// Zigzag-decodes a `sint32` / `sint64` varint.
fn unzigzag(v: u64) -> u64 {
    ((v >> 1) as i64 ^ -((v & 1) as i64)) as u64
}

/// The head of one stream in the merge.
#[derive(Clone, Copy)]
enum Head {
    /// An event at BOOTTIME `t` by `pid`: its payload (`FtraceEvent` field `field`) is at
    /// `off..off+len` of the bundle's source (`len` u32::MAX: it has none).
    Event {
        t: u64,
        pid: u32,
        field: u32,
        off: usize,
        len: usize,
    },
    /// A loss before the stream's next event, at `t`.
    Lost {
        t: u64,
    },
    End,
}

/// A stream's read position.
struct Cursor {
    stream: usize,
    cpu: u32,
    bundle: usize,
    /// Next field of the current bundle (absolute offset in its source), and its end.
    pos: usize,
    end: usize,
    /// Whether the current bundle's loss was handed over.
    lost_done: bool,
    entered: bool,
    last_t: u64,
}

impl Cursor {
    /// Before the first bundle of stream `stream`, of CPU `cpu`.
    fn start(stream: usize, cpu: u32) -> Cursor {
        Cursor {
            stream,
            cpu,
            bundle: 0,
            pos: 0,
            end: 0,
            lost_done: true,
            entered: false,
            last_t: 0,
        }
    }
}

impl<'a> PerfettoImport<'a> {
    /// Indexes `data` (see the module doc). Damage stops the index; what came before it is
    /// imported by [`run`](Self::run), which reports the damage at its end.
    pub fn new(data: &'a [u8]) -> PerfettoImport<'a> {
        Self::new_releasing(data, None)
    }

    /// As [`new`](Self::new), telling `release(offset, len)` of each stretch of the file it
    /// is done with (page aligned, some MiB at a time) so a mapping can drop those pages:
    /// after the index, and in the merge behind the slowest stream.
    pub fn new_releasing(
        data: &'a [u8],
        release: Option<&'a dyn Fn(usize, usize)>,
    ) -> PerfettoImport<'a> {
        let n_typed = schema::TYPED.iter().map(|t| t.field).max().unwrap_or(0) as usize + 1;
        let mut ix = Indexer {
            streams: Vec::new(),
            by_key: HashMap::new(),
            descriptors: HashMap::new(),
            snapshots: Vec::new(),
            typed_seen: vec![false; n_typed],
            names: Vec::new(),
            info: Info::default(),
            other: HashMap::new(),
            stats_start: HashMap::new(),
            stats_end: HashMap::new(),
            dropped: Vec::new(),
            ftrace_clock: None,
            unsynced: 0,
            resident: 0,
            release,
            released: 0,
            comms: Vec::new(),
        };
        let mut blobs = Vec::new();
        let whole = Where {
            blob: u32::MAX,
            file_at: 0,
        };
        let damage = ix.packets(data, whole, &mut blobs).err();
        ix.released = release_upto(release, ix.released, data.len());
        // Event names present -> formats (both kernels' variants, as for text).
        for t in schema::TYPED {
            if ix.typed_seen[t.field as usize] {
                ix.name(t.event.as_bytes());
            }
        }
        // Every layout text lines are rebuilt into, newest kernel first (a typed event takes
        // the first of its name: Perfetto's typed protos are of current kernels; a generic
        // event takes the layout its fields fit, old ones included).
        let formats: Vec<EventFormat> = crate::text::text_formats()
            .into_iter()
            .map(|(_, f)| f)
            .filter(|f| ix.names.contains(&f.name))
            .collect();
        let mut builders = Vec::new();
        let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
        let mut typed = vec![u32::MAX; n_typed];
        for (i, f) in formats.iter().enumerate() {
            let t = schema::TYPED.iter().find(|t| t.event == f.name);
            if let Some(t) = t.filter(|t| typed[t.field as usize] == u32::MAX) {
                typed[t.field as usize] = builders.len() as u32;
            }
            by_name
                .entry(f.name.clone())
                .or_default()
                .push(builders.len());
            builders.push(builder(&formats, i, t));
        }
        let mapper = Mapper::new(Endian::NATIVE, &formats);
        let mut info = ix.info;
        let mut cpus: Vec<u32> = ix.streams.iter().map(|s| s.cpu).collect();
        cpus.sort_unstable();
        cpus.dedup();
        info.cpus = cpus;
        let mut other: Vec<(String, u64)> = ix
            .other
            .iter()
            .map(|(n, c)| (packet_kind(*n), *c))
            .collect();
        other.sort();
        info.other_packets = other;
        for (cpu, end) in &ix.stats_end {
            let start = ix.stats_start.get(cpu).copied().unwrap_or(0);
            if *end > start {
                info.stats_lost.push((*cpu, end - start));
            }
        }
        info.stats_lost.sort_unstable();
        ix.snapshots.sort_unstable();
        // The clock: boot unless an ftrace clock could not be synced to it.
        let (clock, how) = match ix.ftrace_clock {
            Some(c) if ix.unsynced > 0 => (
                match c {
                    schema::ftrace_clock::GLOBAL => "global",
                    schema::ftrace_clock::LOCAL => "local",
                    schema::ftrace_clock::MONO_RAW => "mono_raw",
                    _ => "unknown",
                },
                format!(
                    "{} bundles on an ftrace clock without a boot_timestamp to convert them",
                    ix.unsynced
                ),
            ),
            Some(_) => (
                "boot",
                "ftrace clock put on boot by the bundles' boot_timestamp".into(),
            ),
            None => ("boot", "ftrace's boot clock".into()),
        };
        let to_mono = clock == "boot" && !ix.snapshots.is_empty();
        info.snapshots = ix.snapshots.len();
        if to_mono {
            info.clock = "mono";
            info.clock_how = format!(
                "{how}, put on CLOCK_MONOTONIC by {} ClockSnapshot{}",
                ix.snapshots.len(),
                if ix.snapshots.len() == 1 { "" } else { "s" }
            );
        } else {
            info.clock = clock;
            info.clock_how = if clock == "boot" {
                format!("{how} (no ClockSnapshot with MONOTONIC: left on BOOTTIME)")
            } else {
                how
            };
        }
        PerfettoImport {
            data,
            blobs,
            streams: ix.streams,
            descriptors: ix.descriptors,
            snapshots: ix.snapshots,
            formats,
            typed,
            by_name,
            builders,
            comms: ix.comms,
            damage,
            to_mono,
            info,
            mapper,
            release,
            skipped: HashMap::new(),
            skipped_fields: Vec::new(),
            buf: Vec::with_capacity(256),
        }
    }

    /// Whether the index stopped at damage (reported by [`run`](Self::run)).
    pub fn damaged(&self) -> bool {
        self.damage.is_some()
    }

    /// Task names from the trace's `process_tree` packets.
    pub fn comms(&self) -> &[(u32, String)] {
        &self.comms
    }

    /// The source's description for [`crate::import::source_note`].
    pub fn source(&self) -> String {
        format!(
            "Perfetto trace ({} packets{})",
            self.info.packets,
            if self.info.compressed_packets > 0 {
                format!(", {} zlib compressed", self.info.compressed_packets)
            } else {
                String::new()
            }
        )
    }

    /// BOOTTIME `t` on the output clock; `snap`: the snapshot cursor (times come in order).
    #[inline]
    fn out_time(&self, t: u64, snap: &mut usize) -> u64 {
        if !self.to_mono {
            return t;
        }
        let s = &self.snapshots;
        while *snap + 1 < s.len() && s[*snap + 1].0 <= t {
            *snap += 1;
        }
        let (b, m) = s[*snap];
        t.saturating_sub(b - m)
    }

    /// The source bytes of bundle `b` (inflating its compressed packet if needed).
    fn source_of(&mut self, b: BundleRef) -> Result<&[u8], DatError> {
        if b.blob == u32::MAX {
            return Ok(self.data);
        }
        let blob = &mut self.blobs[b.blob as usize];
        if blob.data.is_none() {
            let z = &self.data[blob.at..blob.at + blob.len];
            blob.data = Some(inflate(z).map_err(|m| damage(blob.at, m))?);
        }
        Ok(blob.data.as_deref().expect("inflated"))
    }

    /// Advances cursor `c` to its next head.
    fn advance(&mut self, c: &mut Cursor) -> Result<Head, DatError> {
        loop {
            let Some(&b) = self.streams[c.stream].bundles.get(c.bundle) else {
                return Ok(Head::End);
            };
            if !c.entered {
                c.pos = b.off;
                c.end = b.off + b.len;
                c.entered = true;
                c.lost_done = !b.lost;
            }
            let blob_at = (b.blob != u32::MAX).then(|| self.blobs[b.blob as usize].at);
            let bad = |pos: usize, msg: String| match blob_at {
                None => damage(pos, msg),
                Some(at) => damage(
                    at,
                    format!("compressed packet, byte {pos} of its inflated data: {msg}"),
                ),
            };
            let src = self.source_of(b)?;
            let body = &src[c.pos..c.end];
            let mut f = Fields::new(body);
            let mut found = None;
            loop {
                match f.next_field() {
                    Ok(Some((bundle::EVENT, Val::Len(e)))) => {
                        let e_off = c.pos + (e.as_ptr() as usize - body.as_ptr() as usize);
                        // Time, task and payload, read once here for the merge and the
                        // mapping.
                        let (mut t, mut pid, mut field, mut off, mut len) =
                            (None, 0u32, 0u32, 0usize, usize::MAX);
                        let mut ef = Fields::new(e);
                        while let Some((n, v)) = ef
                            .next_field()
                            .map_err(|er| bad(e_off + er.at, format!("FtraceEvent: {}", er.msg)))?
                        {
                            match (n, v) {
                                (event::TIMESTAMP, v) => t = Some(v.int()),
                                (event::PID, v) => pid = v.int() as u32,
                                (event::COMMON_FLAGS, _) => {}
                                (n, Val::Len(p)) => {
                                    field = n;
                                    off = e_off + (p.as_ptr() as usize - e.as_ptr() as usize);
                                    len = p.len();
                                }
                                _ => {}
                            }
                        }
                        let Some(t) = t else {
                            return Err(bad(e_off, "FtraceEvent without a timestamp".into()));
                        };
                        let t = t.saturating_add_signed(b.delta);
                        found = Some((
                            Head::Event {
                                t,
                                pid,
                                field,
                                off,
                                len,
                            },
                            t,
                            f.pos(),
                        ));
                        break;
                    }
                    Ok(Some(_)) => {}
                    Ok(None) => break,
                    Err(er) => {
                        return Err(bad(c.pos + er.at, format!("FtraceEventBundle: {}", er.msg)))
                    }
                }
            }
            if let Some((head, t, next)) = found {
                if !c.lost_done {
                    c.lost_done = true;
                    return Ok(Head::Lost { t });
                }
                c.pos += next;
                return Ok(head);
            }
            // The bundle is read: drop its compressed packet when it was the last.
            if b.blob != u32::MAX {
                let blob = &mut self.blobs[b.blob as usize];
                blob.left = blob.left.saturating_sub(1);
                if blob.left == 0 {
                    blob.data = None;
                }
            }
            c.bundle += 1;
            c.entered = false;
            if !c.lost_done {
                // A loss marked on a bundle without events: before the next one's events.
                if let Some(nb) = self.streams[c.stream].bundles.get_mut(c.bundle) {
                    nb.lost = true;
                }
            }
        }
    }

    /// Maps the event whose payload is at `off..off+len` of bundle `b`'s source, at output
    /// time `t`.
    #[inline]
    fn map_event<S: Sink>(
        &mut self,
        sink: &mut S,
        cpu: u32,
        t: u64,
        b: BundleRef,
        (pid, field, off, len): (u32, u32, usize, usize),
    ) -> Result<(), ImportError> {
        let blob_at = if b.blob == u32::MAX {
            None
        } else {
            Some(self.blobs[b.blob as usize].at)
        };
        let at = |o: usize| blob_at.unwrap_or(o);
        let src: &[u8] = if b.blob == u32::MAX {
            self.data
        } else {
            self.blobs[b.blob as usize]
                .data
                .as_deref()
                .expect("entered bundle is inflated")
        };
        if len == usize::MAX {
            self.skip_field(0, t);
            return Ok(());
        }
        let (n, p) = (field, &src[off..off + len]);
        let bad = |er: WireError| {
            ImportError::Input(damage(at(off + er.at), format!("FtraceEvent: {}", er.msg)))
        };
        let buf = &mut self.buf;
        buf.clear();
        // Typed events first: the common case, one table lookup.
        if let Some(bi) = self
            .typed
            .get(n as usize)
            .copied()
            .filter(|&i| i != u32::MAX)
        {
            typed_record(&self.builders[bi as usize], &self.formats, p, pid, buf).map_err(bad)?;
        } else if n == event::GENERIC {
            match generic_record(&self.formats, &self.by_name, &self.builders, p, pid, buf) {
                Ok(Ok(_)) => {}
                Ok(Err(name)) => {
                    self.mapper.other_event(t);
                    count_name(&mut self.skipped, name);
                    return Ok(());
                }
                Err(er) => return Err(bad(er)),
            }
        } else if let Some(d) = self.descriptors.get(&n) {
            match described_record(&self.formats, &self.by_name, &self.builders, d, p, pid, buf) {
                Ok(Some(_)) => {}
                Ok(None) => {
                    self.skip_field(n, t);
                    return Ok(());
                }
                Err(er) => return Err(bad(er)),
            }
        } else {
            self.skip_field(n, t);
            return Ok(());
        }
        match self.mapper.event(sink, cpu, t, &self.buf) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(ImportError::Output(e)),
            Err(e) => Err(ImportError::Input(damage(
                at(off),
                format!("CPU {cpu}: {e}"),
            ))),
        }
    }

    /// An event of `FtraceEvent` field `n` (0: none) with no format: counted by field.
    fn skip_field(&mut self, n: u32, t: u64) {
        self.mapper.other_event(t);
        if let Some(c) = self.skipped_fields.iter_mut().find(|(f, _)| *f == n) {
            c.1 += 1;
        } else if self.skipped_fields.len() < MAX_NAMES {
            self.skipped_fields.push((n, 1));
        } else {
            count_name(&mut self.skipped, "(other names)");
        }
    }

    /// The summary's name of `FtraceEvent` field `n`.
    fn field_name(&self, n: u32) -> String {
        if n == 0 {
            return "ftrace:(event without a payload)".into();
        }
        if let Some(d) = self.descriptors.get(&n) {
            return d.name.clone();
        }
        match schema::OTHER_NAMES.iter().find(|(f, _)| *f == n) {
            Some((_, s)) => (*s).to_string(),
            None => format!("ftrace event (FtraceEvent field {n})"),
        }
    }

    /// Merges the streams by time and maps every event into `sink`. Damage found by the
    /// index or here stops its stream there; the others go on, and the first damage is
    /// returned at the end (everything before it was imported).
    pub fn run<S: Sink>(&mut self, sink: &mut S) -> Result<(), ImportError> {
        let mut snap = 0usize;
        let mut damage: Vec<DatError> = self.damage.take().into_iter().collect();
        let mut cursors: Vec<Cursor> = (0..self.streams.len())
            .map(|i| Cursor::start(i, self.streams[i].cpu))
            .collect();
        let mut heads: Vec<Head> = Vec::with_capacity(cursors.len());
        for c in cursors.iter_mut() {
            let h = self.advance(c).unwrap_or_else(|e| {
                damage.push(e);
                Head::End
            });
            heads.push(h);
        }
        let key = |h: &Head| match *h {
            Head::Event { t, .. } | Head::Lost { t } => Some(t),
            Head::End => None,
        };
        // Each stream is in time order: the earliest head is the capture's start.
        if let Some(t) = heads.iter().filter_map(key).min() {
            let mut s0 = 0;
            sink.capture_start(self.out_time(t, &mut s0));
        }
        // Losses ftrace_stats counted on CPUs with exactly one marked bundle go on that
        // marker; others are one marker at the end of the capture.
        let mut marked: HashMap<u32, u64> = HashMap::new();
        for s in &self.streams {
            *marked.entry(s.cpu).or_insert(0) += s.bundles.iter().filter(|b| b.lost).count() as u64;
        }
        let stats_lost: HashMap<u32, u64> = self.info.stats_lost.iter().copied().collect();
        // The mapping is released again behind the slowest stream (the index released it
        // once; the merge faulted it back in).
        let mut released = 0usize;
        let mut since = 0u32;
        loop {
            since += 1;
            if self.release.is_some() && since >= 1024 {
                since = 0;
                let low = cursors
                    .iter()
                    .zip(&heads)
                    .filter(|(_, h)| !matches!(h, Head::End))
                    .filter_map(|(c, _)| self.streams[c.stream].bundles.get(c.bundle))
                    .map(|b| {
                        if b.blob == u32::MAX {
                            b.off
                        } else {
                            self.blobs[b.blob as usize].at
                        }
                    })
                    .min()
                    .unwrap_or(self.data.len());
                released = release_upto(self.release, released, low);
            }
            let Some((best, second)) = crate::import::earliest(&heads, key) else {
                break;
            };
            // Taken out while it reads (a placeholder of stream 0 stands in).
            let mut c = std::mem::replace(&mut cursors[best], Cursor::start(0, 0));
            loop {
                match heads[best] {
                    Head::Event {
                        t,
                        pid,
                        field,
                        off,
                        len,
                    } => {
                        if t > second {
                            break;
                        }
                        let b = self.streams[c.stream].bundles[c.bundle];
                        let ot = self.out_time(t, &mut snap);
                        let ev = (pid, field, off, len);
                        match self.map_event(sink, c.cpu, ot, b, ev) {
                            Ok(()) => {}
                            Err(ImportError::Input(e)) => {
                                damage.push(e);
                                heads[best] = Head::End;
                                break;
                            }
                            Err(e) => return Err(e),
                        }
                        c.last_t = ot;
                    }
                    Head::Lost { t } => {
                        if t > second {
                            break;
                        }
                        let ot = self.out_time(t, &mut snap);
                        let count = match (marked.get(&c.cpu), stats_lost.get(&c.cpu)) {
                            (Some(1), Some(&n)) => Some(n),
                            _ => None,
                        };
                        let first = if c.last_t > 0 { c.last_t } else { ot };
                        self.mapper
                            .lost(sink, c.cpu, count, first, ot)
                            .map_err(ImportError::Output)?;
                    }
                    Head::End => break,
                }
                heads[best] = match self.advance(&mut c) {
                    Ok(h) => h,
                    Err(e) => {
                        damage.push(e);
                        Head::End
                    }
                };
            }
            cursors[best] = c;
        }
        // ftrace_stats losses no single marked bundle places: at the end of the capture.
        for &(cpu, n) in &self.info.stats_lost {
            if marked.get(&cpu).copied().unwrap_or(0) != 1 {
                let t = self.mapper.stats.last_ns;
                if marked.get(&cpu).copied().unwrap_or(0) > 1 {
                    continue;
                }
                self.mapper
                    .lost(sink, cpu, Some(n), t, t)
                    .map_err(ImportError::Output)?;
            }
        }
        let fields = std::mem::take(&mut self.skipped_fields);
        for (n, c) in fields {
            *self.skipped.entry(self.field_name(n)).or_insert(0) += c;
        }
        let mut skipped: Vec<(String, u64)> = self.skipped.drain().collect();
        skipped.sort();
        self.info.skipped = skipped;
        crate::import::damage_found(damage, "damaged streams")
    }
}

/// Bytes read between two releases of the mapping.
const RELEASE_STEP: usize = 8 << 20;

/// Tells `release` of `[from, to)` (page aligned) once it is [`RELEASE_STEP`] long; returns
/// the new start.
fn release_upto(release: Option<&dyn Fn(usize, usize)>, from: usize, to: usize) -> usize {
    let Some(r) = release else {
        return from;
    };
    let to = to & !4095;
    if to >= from + RELEASE_STEP {
        r(from, to - from);
        to
    } else {
        from
    }
}

/// Counts a skipped event by `name` (allocated once per name, at most [`MAX_NAMES`]).
fn count_name(skipped: &mut HashMap<String, u64>, name: &str) {
    if let Some(c) = skipped.get_mut(name) {
        *c += 1;
    } else if skipped.len() < MAX_NAMES {
        skipped.insert(name.to_string(), 1);
    } else {
        *skipped.entry("(other names)".into()).or_insert(0) += 1;
    }
}

/// Rebuilds a typed event's record into `buf`.
fn typed_record(
    bd: &Builder,
    formats: &[EventFormat],
    p: &[u8],
    pid: u32,
    buf: &mut Vec<u8>,
) -> Result<(), WireError> {
    buf.resize(bd.fixed, 0);
    put_int(buf, bd.type_loc, u64::from(formats[bd.fmt].id));
    put_int(buf, bd.pid_loc, u64::from(pid));
    let mut f = Fields::new(p);
    while let Some((n, v)) = f.next_field()? {
        if let Some(&l) = bd.by_number.get(n as usize).filter(|l| l.size > 0) {
            match v {
                Val::Len(s) => put_str(buf, l, s),
                v => put_int(buf, l, v.int()),
            }
        }
    }
    Ok(())
}

/// Most fields of one generic event kept for choosing its format.
const MAX_GENERIC_FIELDS: usize = 32;

/// A field of a generic event: its name and value.
#[derive(Clone, Copy)]
enum GVal<'a> {
    Int(u64),
    Str(&'a [u8]),
}

/// Picks the variant of `name` whose fields best fit `names` (none missing from the format,
/// then the fewest format fields not given), as text input does.
fn variant(
    formats: &[EventFormat],
    builders: &[Builder],
    cands: &[usize],
    fields: &[(&[u8], GVal<'_>)],
) -> usize {
    if cands.len() == 1 {
        return cands[0];
    }
    let score = |bi: usize| {
        let f = &formats[builders[bi].fmt];
        let absent = fields
            .iter()
            .filter(|(n, _)| !f.fields.iter().any(|x| x.name.as_bytes() == *n))
            .count();
        let unprinted = f
            .fields
            .iter()
            .filter(|x| !x.name.starts_with("common_"))
            .filter(|x| !fields.iter().any(|(n, _)| x.name.as_bytes() == *n))
            .count();
        (absent, unprinted)
    };
    *cands
        .iter()
        .min_by_key(|&&bi| score(bi))
        .expect("candidates")
}

fn fill(
    formats: &[EventFormat],
    bd: &Builder,
    pid: u32,
    fields: &[(&[u8], GVal<'_>)],
    buf: &mut Vec<u8>,
) {
    let f = &formats[bd.fmt];
    buf.resize(bd.fixed, 0);
    put_int(buf, bd.type_loc, u64::from(f.id));
    put_int(buf, bd.pid_loc, u64::from(pid));
    for (name, v) in fields {
        if name.starts_with(b"common_") {
            continue;
        }
        let Some(x) = f.fields.iter().find(|x| x.name.as_bytes() == *name) else {
            continue;
        };
        match *v {
            GVal::Int(i) => put_int(buf, x.loc(), i),
            GVal::Str(s) => put_str(buf, x.loc(), s),
        }
    }
}

/// Rebuilds a `GenericFtraceEvent`'s record into `buf`; `Ok(Err(name))` when no format is
/// known for its event.
fn generic_record<'p>(
    formats: &[EventFormat],
    by_name: &HashMap<String, Vec<usize>>,
    builders: &[Builder],
    p: &'p [u8],
    pid: u32,
    buf: &mut Vec<u8>,
) -> Result<Result<usize, &'p str>, WireError> {
    let mut name: &[u8] = b"";
    let mut fields: [(&[u8], GVal<'_>); MAX_GENERIC_FIELDS] =
        [(b"", GVal::Int(0)); MAX_GENERIC_FIELDS];
    let mut n = 0;
    let mut f = Fields::new(p);
    while let Some((k, v)) = f.next_field()? {
        match (k, v) {
            (generic::EVENT_NAME, Val::Len(s)) => name = s,
            (generic::FIELD, Val::Len(fd)) => {
                let (mut fname, mut val) = (&b""[..], GVal::Int(0));
                let mut ff = Fields::new(fd);
                while let Some((k, v)) = ff.next_field()? {
                    match (k, v) {
                        (generic::FIELD_NAME, Val::Len(s)) => fname = s,
                        (generic::STR_VALUE, Val::Len(s)) => val = GVal::Str(s),
                        (generic::INT_VALUE | generic::UINT_VALUE, v) => val = GVal::Int(v.int()),
                        _ => {}
                    }
                }
                if n < MAX_GENERIC_FIELDS {
                    fields[n] = (fname, val);
                    n += 1;
                }
            }
            _ => {}
        }
    }
    let name = std::str::from_utf8(name).unwrap_or("");
    let Some(cands) = by_name.get(name) else {
        return Ok(Err(if name.is_empty() {
            "ftrace:(generic event without a name)"
        } else {
            name
        }));
    };
    let bi = variant(formats, builders, cands, &fields[..n]);
    fill(formats, &builders[bi], pid, &fields[..n], buf);
    Ok(Ok(bi))
}

/// Rebuilds an event described by a generic event descriptor into `buf`; None when no
/// format is known for it.
fn described_record(
    formats: &[EventFormat],
    by_name: &HashMap<String, Vec<usize>>,
    builders: &[Builder],
    d: &Descriptor,
    p: &[u8],
    pid: u32,
    buf: &mut Vec<u8>,
) -> Result<Option<usize>, WireError> {
    let Some(cands) = by_name.get(&d.name) else {
        return Ok(None);
    };
    let mut fields: [(&[u8], GVal<'_>); MAX_GENERIC_FIELDS] =
        [(b"", GVal::Int(0)); MAX_GENERIC_FIELDS];
    let mut n = 0;
    let mut f = Fields::new(p);
    while let Some((k, v)) = f.next_field()? {
        let Some((_, fname, is_str, zz)) = d.fields.iter().find(|x| x.0 == k) else {
            continue;
        };
        let val = match v {
            Val::Len(s) if *is_str => GVal::Str(s),
            Val::Len(_) => continue,
            v if *zz => GVal::Int(unzigzag(v.int())),
            v => GVal::Int(v.int()),
        };
        if n < MAX_GENERIC_FIELDS {
            fields[n] = (fname.as_bytes(), val);
            n += 1;
        }
    }
    let bi = variant(formats, builders, cands, &fields[..n]);
    fill(formats, &builders[bi], pid, &fields[..n], buf);
    Ok(Some(bi))
}
