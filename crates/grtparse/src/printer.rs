//! The line printer: the default line, `-f`/`-F` format strings, and the per-event details.
//!
//! Default line (whitespace-separated; fields 1-9 are always present, the process name is
//! always last):
//!
//! ```text
//! device cpu seq sec.nsec pid EVENT ring ctx seqno [details...] [comm]
//! card0   0       17     0.000123456  4101 SUBMIT      gfx 3 42 wp=4096 units=256 fill=512 jobs=1 flags=fenced [glxgears]
//! ```

use grtrace_format::abi::{self, eflag, lost_source};
use grtrace_format::record::{Body, EventBody, Lost};
use grtrace_format::view::RecordView;
use grtrace_format::{Event, RecordType};

use crate::out::{Cursor, Out, Short};

/// Number of counting slots: event codes 0..64, then note types 64 + rtype.
pub const NSLOTS: usize = 72;
/// Slot of unknown event codes (code 0 or ≥ 64) — codes 26..64 get their own slots.
pub const SLOT_NOTE_BASE: usize = 64;

/// Names of the note slots, as printed and as accepted by `-a`/`-A`: the format crate's
/// record type names. Indexed by record type (0 and 1 are never used as note slots).
pub const NOTE_NAMES: [(u16, &str); 8] = {
    let mut t = [(0u16, "RECORD_0"); 8];
    let mut rt = 1;
    while rt < t.len() {
        if let Some(n) = RecordType(rt as u16).name() {
            t[rt] = (rt as u16, n);
        }
        rt += 1;
    }
    t
};

/// Counting/filtering slot of a record.
#[inline(always)]
pub fn slot_of(rt: RecordType, code: u16) -> usize {
    if rt == RecordType::EVENT {
        if (code as usize) < SLOT_NOTE_BASE {
            code as usize
        } else {
            0
        }
    } else {
        SLOT_NOTE_BASE + (rt.0 as usize & 7)
    }
}

/// The printed name of a slot (unknown codes print as `EVENT_<n>`).
pub fn slot_name(slot: usize) -> String {
    if slot >= SLOT_NOTE_BASE {
        NOTE_NAMES[slot - SLOT_NOTE_BASE].1.to_string()
    } else if let Some(n) = Event(slot as u16).name() {
        n.to_string()
    } else if slot == 0 {
        "EVENT_?".to_string()
    } else {
        format!("EVENT_{slot}")
    }
}

/// Looks an event or note name up (case-insensitive), `EVENT_<n>` included.
pub fn slot_by_name(name: &str) -> Option<usize> {
    if let Some(e) = Event::from_name(name) {
        return Some(e.0 as usize);
    }
    if let Some((rt, _)) = NOTE_NAMES
        .iter()
        .skip(2)
        .find(|(_, n)| n.eq_ignore_ascii_case(name))
    {
        return Some(SLOT_NOTE_BASE + *rt as usize);
    }
    let up = name.to_ascii_uppercase();
    let num = up.strip_prefix("EVENT_")?.parse::<usize>().ok()?;
    (num < SLOT_NOTE_BASE).then_some(num)
}

/// pid → process name and ring id → ring name, learnt from notes as they go by.
#[derive(Clone, Default)]
pub struct Names {
    /// Index+1 into `comms` by pid (0 = unknown).
    by_pid: Vec<u32>,
    comms: Vec<Short<16>>,
    big_pids: std::collections::HashMap<u32, u32>,
    rings: Vec<Short<32>>,
    big_rings: std::collections::HashMap<u32, Short<32>>,
}

/// pids below this are looked up by index (Linux's `pid_max` limit is 2^22).
const PID_TABLE: u32 = 1 << 22;
const RING_TABLE: u32 = 4096;

/// Replaces bytes that would break whitespace-separated fields.
fn sanitize(s: &[u8]) -> Vec<u8> {
    let mut v: Vec<u8> = s
        .iter()
        .map(|&b| if b <= b' ' || b == 0x7f { b'_' } else { b })
        .collect();
    if v.is_empty() {
        v.push(b'_');
    }
    v
}

impl Names {
    /// Learns a process name or a ring name from a note (other records are ignored).
    pub fn learn(&mut self, r: &RecordView<'_>) {
        match r.body() {
            Body::Process { comm } => self.set_comm(r.pid(), comm),
            Body::Ring(n) => {
                let name = Short::new(&sanitize(n.name), b' ');
                if n.ring < RING_TABLE {
                    let i = n.ring as usize;
                    if self.rings.len() <= i {
                        self.rings.resize(i + 1, Short::default());
                    }
                    self.rings[i] = name;
                } else {
                    self.big_rings.insert(n.ring, name);
                }
            }
            _ => {}
        }
    }

    fn set_comm(&mut self, pid: u32, comm: &[u8]) {
        let name = Short::new(&sanitize(comm), b' ');
        // A process named again keeps its slot: the table grows with processes, not notes.
        let known = if pid < PID_TABLE {
            self.by_pid.get(pid as usize).copied().filter(|&i| i != 0)
        } else {
            self.big_pids.get(&pid).copied()
        };
        if let Some(i) = known {
            self.comms[i as usize - 1] = name;
            return;
        }
        self.comms.push(name);
        let idx = self.comms.len() as u32;
        if pid < PID_TABLE {
            let i = pid as usize;
            if self.by_pid.len() <= i {
                self.by_pid.resize(i + 1, 0);
            }
            self.by_pid[i] = idx;
        } else {
            self.big_pids.insert(pid, idx);
        }
    }

    #[inline(always)]
    /// The name of `pid`, padded for its column.
    pub fn comm_short(&self, pid: u32) -> Option<&Short<16>> {
        let idx = if pid < PID_TABLE {
            *self.by_pid.get(pid as usize)?
        } else {
            *self.big_pids.get(&pid)?
        };
        if idx == 0 {
            None
        } else {
            Some(&self.comms[idx as usize - 1])
        }
    }

    /// The name of `pid`, as its last process note gave it.
    pub fn comm(&self, pid: u32) -> Option<&[u8]> {
        self.comm_short(pid).map(|s| s.as_slice())
    }

    #[inline(always)]
    /// The name of `ring`, padded for its column.
    pub fn ring_short(&self, ring: u32) -> Option<&Short<32>> {
        let n = if ring < RING_TABLE {
            self.rings.get(ring as usize)?
        } else {
            self.big_rings.get(&ring)?
        };
        (n.len > 0).then_some(n)
    }
}

/// What a line is about.
#[derive(Clone, Copy)]
pub enum What<'a> {
    /// An event.
    Event(EventBody),
    /// A note (process, ring, message, clock sync, lost, stream info).
    Note(Body<'a>),
    /// A sequence gap found by the reader.
    Gap(Lost),
}

/// Everything a line can show.
#[derive(Clone, Copy)]
pub struct Line<'a> {
    /// The event's or note's slot (which `-a`/`-F` entry it is).
    pub slot: usize,
    /// CPU of the record.
    pub cpu: u32,
    /// Sequence number of the record on its CPU.
    pub seq: u64,
    /// Time of the record, in the stream's clock (ns).
    pub time: u64,
    /// Thread id of the record.
    pub pid: u32,
    /// What the line is about.
    pub what: What<'a>,
}

impl<'a> Line<'a> {
    #[inline(always)]
    /// The line of an event record.
    pub fn event(r: &RecordView<'a>, ev: EventBody) -> Line<'a> {
        Line {
            slot: slot_of(RecordType::EVENT, ev.code.0),
            cpu: r.cpu(),
            seq: r.seq(),
            time: r.time_ns(),
            pid: r.pid(),
            what: What::Event(ev),
        }
    }

    /// The line of a note record.
    pub fn note(r: &RecordView<'a>) -> Line<'a> {
        let body = r.body();
        let cpu = match body {
            Body::Lost(l) => l.cpu,
            _ => r.cpu(),
        };
        Line {
            slot: slot_of(r.rtype(), 0),
            cpu,
            seq: r.seq(),
            time: r.time_ns(),
            pid: r.pid(),
            what: What::Note(body),
        }
    }

    /// The LOST line of a sequence gap.
    pub fn gap(g: Lost) -> Line<'static> {
        Line {
            slot: SLOT_NOTE_BASE + RecordType::NOTE_LOST.0 as usize,
            cpu: g.cpu,
            seq: 0,
            time: g.last_ns,
            pid: 0,
            what: What::Gap(g),
        }
    }
}

/// One piece of a compiled format string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    /// Text copied as it is (escapes already applied).
    Lit(Vec<u8>),
    /// A `%[-][width]X` field: its letter, width and alignment.
    Field {
        /// The field's letter (`T`, `a`, ...).
        c: u8,
        /// Its width (0: as long as it is).
        width: usize,
        /// `-`: aligned left.
        left: bool,
    },
}

/// Field letters of `-f`/`-F` (documented in the man page and `--help`).
pub const FIELDS: &str = "aCcDdfnprRsTtxz0123";

/// Compiles a blkparse-style format: `%[-][width]X` fields, `%%`, and `\n \t \r \\` escapes.
pub fn compile(fmt: &str) -> Result<Vec<Piece>, String> {
    let b = fmt.as_bytes();
    let mut out = Vec::new();
    let mut lit = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' if i + 1 < b.len() => {
                lit.push(match b[i + 1] {
                    b'n' => b'\n',
                    b't' => b'\t',
                    b'r' => b'\r',
                    b'b' => 8,
                    other => other,
                });
                i += 2;
            }
            b'%' => {
                i += 1;
                if i < b.len() && b[i] == b'%' {
                    lit.push(b'%');
                    i += 1;
                    continue;
                }
                let left = i < b.len() && b[i] == b'-';
                if left {
                    i += 1;
                }
                let digits = i;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                // The argument fields are digits too: `%2` and `%12` end with the field
                // `2` when no field letter follows the digits.
                let letter_follows = b.get(i).is_some_and(|c| FIELDS.as_bytes().contains(c));
                if i > digits && !letter_follows {
                    i -= 1;
                }
                let width = b[digits..i]
                    .iter()
                    .fold(0usize, |w, d| (w * 10 + (d - b'0') as usize).min(256));
                let Some(&c) = b.get(i) else {
                    return Err(format!("format '{fmt}' ends inside a % field"));
                };
                if !FIELDS.as_bytes().contains(&c) {
                    return Err(format!(
                        "format '{fmt}': unknown field %{} (fields: {})",
                        c as char,
                        FIELDS
                            .chars()
                            .map(|c| format!("%{c}"))
                            .collect::<Vec<_>>()
                            .join(" ")
                    ));
                }
                if !lit.is_empty() {
                    out.push(Piece::Lit(std::mem::take(&mut lit)));
                }
                out.push(Piece::Field { c, width, left });
                i += 1;
            }
            other => {
                lit.push(other);
                i += 1;
            }
        }
    }
    if !lit.is_empty() {
        out.push(Piece::Lit(lit));
    }
    Ok(out)
}

/// Shared state for rendering lines (each text worker has a copy: see `par.rs`).
#[derive(Clone)]
pub struct Render {
    /// The device column (`card0`).
    pub dev: Vec<u8>,
    dev_short: Short<16>,
    /// The card named in `dev`, when set by [`Render::set_card`], and the names made so far.
    card: Option<u32>,
    cards: Vec<(u32, Vec<u8>, Short<16>)>,
    /// Per slot: the name padded to the name column plus one space.
    name_col: Vec<Short<16>>,
    /// Time 0 of the relative clock (the first record's time).
    pub genesis: u64,
    /// `(anchor_realtime_ns, anchor_clock_ns)` when printing wall-clock times.
    pub wall: Option<(u64, u64)>,
    /// `(anchor_realtime_ns, anchor_clock_ns)` of the first stream header, if it has one.
    pub anchor: Option<(u64, u64)>,
    /// Process and ring names learnt from the notes.
    pub names: Names,
    /// `-f`: the format of every line, if given.
    pub default_fmt: Option<Vec<Piece>>,
    /// `-F`: the format of one event or note, per slot.
    pub per_slot: Vec<Option<Vec<Piece>>>,
}

const NAME_W: usize = 11;

impl Render {
    /// A renderer whose device column is `dev`.
    pub fn new(dev: Vec<u8>) -> Render {
        let name_col = (0..NSLOTS)
            .map(|s| {
                let n = slot_name(s);
                let mut padded = format!("{n:<NAME_W$} ");
                padded.truncate(16);
                Short::new(padded.as_bytes(), b' ')
            })
            .collect();
        let mut dev_sp = dev.clone();
        dev_sp.push(b' ');
        Render {
            dev_short: Short::new(&dev_sp, b' '),
            card: None,
            cards: Vec::new(),
            name_col,
            dev,
            genesis: 0,
            wall: None,
            anchor: None,
            names: Names::default(),
            default_fmt: None,
            per_slot: vec![None; NSLOTS],
        }
    }

    /// Writes one line in its format (`-F` for its event, else `-f`, else the default).
    #[inline(always)]
    pub fn line(&self, out: &mut Out, l: &Line<'_>) {
        if let Some(p) = &self.per_slot[l.slot] {
            self.formatted(out, p, l);
        } else if let Some(p) = &self.default_fmt {
            self.formatted(out, p, l);
        } else if let What::Event(e) = &l.what {
            self.event_line(out, l, e);
        } else {
            self.default_line(out, l);
        }
    }

    /// Sets the device field (`card0`).
    pub fn set_dev(&mut self, dev: Vec<u8>) {
        let mut d = dev.clone();
        d.push(b' ');
        self.dev_short = Short::new(&d, b' ');
        self.dev = dev;
    }

    /// Makes `cardN` the device field of the next lines: every line carries the card of
    /// the stream it came from. Names are made once per card and reused, so inputs that
    /// alternate between two cards cost a copy per switch, no allocation.
    #[inline(always)]
    pub fn set_card(&mut self, card: u32) {
        if self.card != Some(card) {
            self.switch_card(card);
        }
    }

    /// The cards seen (`card0` or `card0, card1`), for the summary; the device field if
    /// no card was set.
    pub fn cards_label(&self) -> Vec<u8> {
        if self.cards.is_empty() {
            return self.dev.clone();
        }
        let mut c: Vec<&(u32, Vec<u8>, Short<16>)> = self.cards.iter().collect();
        c.sort_by_key(|x| x.0);
        c.iter()
            .map(|x| x.1.as_slice())
            .collect::<Vec<_>>()
            .join(&b", "[..])
    }

    #[cold]
    fn switch_card(&mut self, card: u32) {
        let i = match self.cards.iter().position(|c| c.0 == card) {
            Some(i) => i,
            None => {
                let name = grtrace_format::Card(card).to_string().into_bytes();
                let mut sp = name.clone();
                sp.push(b' ');
                self.cards.push((card, name, Short::new(&sp, b' ')));
                self.cards.len() - 1
            }
        };
        let (_, name, short) = &self.cards[i];
        self.dev.clear();
        self.dev.extend_from_slice(name);
        self.dev_short = *short;
        self.card = Some(card);
    }

    /// `sec.nsec`, relative to genesis (or wall clock), seconds right-aligned in `w`.
    #[inline(always)]
    fn time(&self, out: &mut Out, t: u64, w: usize) {
        let (neg, s, ns) = match self.wall {
            Some(anchor) => wall_parts(anchor, t),
            None => {
                let (neg, v) = if t >= self.genesis {
                    (false, t - self.genesis)
                } else {
                    (true, self.genesis - t)
                };
                (neg, v / 1_000_000_000, v % 1_000_000_000)
            }
        };
        if neg {
            let digits = if s == 0 { 1 } else { s.ilog10() as usize + 1 };
            if digits + 1 < w {
                out.pad(w - digits - 1);
            }
            out.byte(b'-');
            out.u64(s);
        } else {
            out.u64_w(s, w);
        }
        out.byte(b'.');
        out.nanos9(ns);
    }

    fn name(&self, out: &mut Out, l: &Line<'_>, width: usize, left: bool) {
        if l.slot == 0 || (l.slot >= 26 && l.slot < SLOT_NOTE_BASE) {
            let code = match l.what {
                What::Event(e) => e.code.0,
                _ => 0,
            };
            let start = out.pos();
            out.bytes(b"EVENT_");
            out.u64(code as u64);
            pad_field(out, start, width, left);
            return;
        }
        let s: &[u8] = if l.slot >= SLOT_NOTE_BASE {
            NOTE_NAMES[l.slot - SLOT_NOTE_BASE].1.as_bytes()
        } else {
            Event(l.slot as u16).name().unwrap_or_default().as_bytes()
        };
        if left {
            out.str_left(s, width);
        } else {
            out.str_right(s, width);
        }
    }

    #[inline(always)]
    fn ring(&self, out: &mut Out, ring: u32) {
        match self.names.ring_short(ring) {
            Some(n) => out.short(n),
            None => out.u64(ring as u64),
        }
    }

    #[inline(always)]
    fn comm(&self, out: &mut Out, l: &Line<'_>) {
        if let What::Note(Body::Process { comm }) = l.what {
            out.bytes(&sanitize(comm));
            return;
        }
        if l.pid == 0 {
            out.byte(b'-');
            return;
        }
        match self.names.comm_short(l.pid) {
            Some(c) => out.short(c),
            None => out.byte(b'?'),
        }
    }

    /// The default line.
    #[inline(always)]
    pub fn default_line(&self, out: &mut Out, l: &Line<'_>) {
        out.short(&self.dev_short);
        out.u64_w(l.cpu as u64, 2);
        out.byte(b' ');
        out.u64_w(l.seq, 8);
        out.byte(b' ');
        self.time(out, l.time, 5);
        out.byte(b' ');
        out.u64_w(l.pid as u64, 5);
        out.byte(b' ');
        if l.slot == 0 || (l.slot >= 26 && l.slot < SLOT_NOTE_BASE) {
            self.name(out, l, NAME_W, true);
            out.byte(b' ');
        } else {
            out.short(&self.name_col[l.slot]);
        }
        match l.what {
            What::Event(e) => {
                self.ring(out, e.ring);
                out.byte(b' ');
                out.u64(e.ctx as u64);
                out.byte(b' ');
                out.u64(e.seqno);
                event_details_out(out, &e);
            }
            What::Note(Body::Ring(n)) => {
                out.u64(n.ring as u64);
                out.lit(b" - -");
                self.details(out, l);
            }
            _ => {
                out.lit(b"- - -");
                self.details(out, l);
            }
        }
        out.lit(b" [");
        self.comm(out, l);
        out.lit(b"]\n");
    }

    /// The default line of an event, written through a cursor (the hot path). Falls back to
    /// [`default_line`](Self::default_line) for the rare cases it does not handle.
    #[inline(always)]
    pub fn event_line(&self, out: &mut Out, l: &Line<'_>, e: &EventBody) {
        let known = l.slot != 0 && l.slot < 26;
        if !known || self.wall.is_some() || l.time < self.genesis {
            return self.default_line(out, l);
        }
        let rel = l.time - self.genesis;
        let mut c = out.cursor();
        // `dev_short` ends with its separator (see `set_dev`).
        c.short(&self.dev_short);
        c.u64_w_sp(l.cpu as u64, 2);
        c.u64_w_sp(l.seq, 8);
        c.time_sp(rel);
        c.u64_w_sp(l.pid as u64, 5);
        c.short(&self.name_col[l.slot]);
        match self.names.ring_short(e.ring) {
            Some(n) => {
                c.short(n);
                c.byte(b' ');
            }
            None => c.u64_sp(e.ring as u64),
        }
        c.u64_sp(e.ctx as u64);
        c.u64(e.seqno);
        event_details(&mut c, e);
        c.lit(b" [");
        if l.pid == 0 {
            c.byte(b'-');
        } else {
            match self.names.comm_short(l.pid) {
                Some(s) => c.short(s),
                None => c.byte(b'?'),
            }
        }
        c.lit(b"]\n");
        let n = c.written();
        out.commit(n);
    }

    /// The event- or note-specific part, each item as ` key=value`.
    pub fn details(&self, out: &mut Out, l: &Line<'_>) {
        match l.what {
            What::Event(e) => event_details_out(out, &e),
            What::Gap(g) => self.lost_details(out, &g),
            What::Note(b) => match b {
                Body::Process { comm } => {
                    out.bytes(b" comm=");
                    out.bytes(&sanitize(comm));
                }
                Body::Ring(n) => {
                    out.bytes(b" name=");
                    out.bytes(&sanitize(n.name));
                    out.bytes(b" class=");
                    match abi::ENGINE_CLASS_NAMES.get(n.engine_class as usize) {
                        Some(c) => out.bytes(c.as_bytes()),
                        None => out.u64(n.engine_class as u64),
                    }
                    out.bytes(b" size=");
                    out.u64(n.size);
                    out.bytes(match n.unit {
                        abi::RING_UNIT_BYTES => b" unit=bytes" as &[u8],
                        abi::RING_UNIT_SLOTS => b" unit=slots",
                        _ => b" unit=?",
                    });
                    if n.flags != 0 {
                        out.bytes(b" flags=");
                        ring_flag_names(out, n.flags);
                    }
                }
                Body::Msg { text } => {
                    out.byte(b' ');
                    let clean: Vec<u8> = text
                        .iter()
                        .map(|&c| if c < b' ' || c == 0x7f { b' ' } else { c })
                        .collect();
                    out.bytes(&clean);
                }
                Body::ClockSync(c) => {
                    out.bytes(b" gpu_clock=");
                    out.u64(c.gpu_clock_id as u64);
                    out.bytes(b" gpu_time=");
                    out.u64(c.gpu_time);
                    out.bytes(b" freq_hz=");
                    out.u64(c.gpu_freq_hz);
                }
                Body::Lost(g) => self.lost_details(out, &g),
                Body::StreamInfo(s) => {
                    out.bytes(b" dropped=");
                    out.u64(s.kernel_dropped);
                    out.bytes(b" records=");
                    out.u64(s.records);
                    out.bytes(b" bytes=");
                    out.u64(s.bytes);
                    out.bytes(if s.flags & abi::INFO_STOPPED_CLEANLY != 0 {
                        b" clean=yes" as &[u8]
                    } else {
                        b" clean=no"
                    });
                }
                Body::Event(e) => event_details_out(out, &e),
                Body::Unknown { .. } => {}
            },
        }
    }

    fn lost_details(&self, out: &mut Out, g: &Lost) {
        out.bytes(b" count=");
        out.u64(g.count);
        out.bytes(match g.source {
            lost_source::KERNEL => b" source=kernel" as &[u8],
            lost_source::RECORDER => b" source=recorder",
            lost_source::SEQ_GAP => b" source=gap",
            _ => b" source=other",
        });
        out.bytes(b" from=");
        self.time(out, g.first_ns, 0);
        out.bytes(b" to=");
        self.time(out, g.last_ns, 0);
    }

    /// A line through a compiled format string.
    pub fn formatted(&self, out: &mut Out, pieces: &[Piece], l: &Line<'_>) {
        let ev = match l.what {
            What::Event(e) => Some(e),
            _ => None,
        };
        for p in pieces {
            let (c, width, left) = match p {
                Piece::Lit(b) => {
                    out.bytes(b);
                    continue;
                }
                Piece::Field { c, width, left } => (*c, *width, *left),
            };
            // Room for any field, so that `start` stays valid while padding.
            out.ensure(1 << 17);
            let start = out.pos();
            match c {
                b'a' => self.name(out, l, 0, true),
                b'c' => out.u64(l.cpu as u64),
                b'C' => self.comm(out, l),
                b'd' => {
                    self.details(out, l);
                    if out.at(start) == Some(b' ') {
                        out.remove_at(start);
                    }
                }
                b'D' => out.bytes(&self.dev),
                b'f' => match ev {
                    Some(e) if e.flags & PRINTED != 0 => flag_names(out, e.flags),
                    _ => out.byte(b'-'),
                },
                b'n' => match ev {
                    Some(e) => out.u64(e.seqno),
                    None => out.byte(b'-'),
                },
                b'p' => out.u64(l.pid as u64),
                b'r' => match (ev, l.what) {
                    (Some(e), _) => self.ring(out, e.ring),
                    (None, What::Note(Body::Ring(n))) => out.u64(n.ring as u64),
                    _ => out.byte(b'-'),
                },
                b'R' => match ev {
                    Some(e) => out.u64(e.ring as u64),
                    None => out.byte(b'-'),
                },
                b's' => out.u64(l.seq),
                b'T' | b't' | b'z' => {
                    let (neg, sec, ns) = if c == b'z' {
                        self.anchor.map_or((false, 0, 0), |a| wall_parts(a, l.time))
                    } else {
                        match self.wall {
                            Some(a) => wall_parts(a, l.time),
                            None => {
                                let v = l.time.saturating_sub(self.genesis);
                                (false, v / 1_000_000_000, v % 1_000_000_000)
                            }
                        }
                    };
                    if neg && c != b't' {
                        out.byte(b'-');
                    }
                    match c {
                        b'T' => out.u64(sec),
                        b't' => {
                            out.u64_0(ns, if width > 0 { width } else { 9 });
                            continue;
                        }
                        _ => {
                            out.u64(sec);
                            out.byte(b'.');
                            out.u64_0(ns, 9);
                        }
                    }
                }
                b'x' => match ev {
                    Some(e) => out.u64(e.ctx as u64),
                    None => out.byte(b'-'),
                },
                b'0' | b'1' | b'2' | b'3' => match ev {
                    Some(e) => out.u64(match c {
                        b'0' => e.arg0,
                        b'1' => e.arg1,
                        b'2' => e.arg2 as u64,
                        _ => e.arg3 as u64,
                    }),
                    None => out.byte(b'-'),
                },
                _ => {}
            }
            pad_field(out, start, width, left);
        }
    }
}

/// Wall-clock time of record time `t` for an `(anchor_realtime_ns, anchor_clock_ns)` anchor,
/// as (before the epoch, seconds, nanoseconds). Exact for any anchor: an extreme one gives a
/// time before 1970 or past the u64 nanosecond range, printed as it is (`-5.000000000`,
/// `36893488147.419103230`), never wrapped or clamped into a plausible date.
fn wall_parts((real, clock): (u64, u64), t: u64) -> (bool, u64, u64) {
    let v = real as i128 + t as i128 - clock as i128;
    let a = v.unsigned_abs();
    (
        v < 0,
        (a / 1_000_000_000) as u64,
        (a % 1_000_000_000) as u64,
    )
}

/// Pads what was written since `start` to `width` columns.
fn pad_field(out: &mut Out, start: usize, width: usize, left: bool) {
    let n = out.pos() - start;
    if n >= width {
        return;
    }
    if left {
        out.pad(width - n);
    } else {
        out.insert_spaces(start, width - n);
    }
}

/// The flags printed: those of the uapi header and `inferred` (FORMAT.md §4.2: a START an
/// importer or the i915 probes inferred; a reader must be able to tell it from a measured
/// one).
const PRINTED: u16 = eflag::KNOWN | eflag::INFERRED;

/// Names of the printed flags, in bit order.
fn printed_names() -> impl Iterator<Item = (u16, &'static str)> {
    eflag::NAMES
        .into_iter()
        .chain([(eflag::INFERRED, "inferred")])
}

/// ` flags=a,b` for every combination of the printed flag bits (empty for none).
fn flag_table() -> Vec<Short<56>> {
    (0..=PRINTED)
        .map(|f| {
            if f == 0 {
                return Short::default();
            }
            let names: Vec<&str> = printed_names()
                .filter(|(b, _)| f & b != 0)
                .map(|(_, n)| n)
                .collect();
            Short::new(format!(" flags={}", names.join(",")).as_bytes(), b' ')
        })
        .collect()
}

static FLAGS: std::sync::OnceLock<Vec<Short<56>>> = std::sync::OnceLock::new();

fn flag_names(out: &mut Out, flags: u16) {
    let mut first = true;
    for (bit, name) in printed_names() {
        if flags & bit != 0 {
            if !first {
                out.byte(b',');
            }
            first = false;
            out.bytes(name.as_bytes());
        }
    }
}

/// `NOTE_RING` flags by name, comma separated; reserved bits as one hex number after them.
fn ring_flag_names(out: &mut Out, flags: u32) {
    let mut first = true;
    for (bit, name) in abi::ring_flag::NAMES {
        if flags & bit != 0 {
            if !first {
                out.byte(b',');
            }
            first = false;
            out.bytes(name.as_bytes());
        }
    }
    let rest = flags & !abi::ring_flag::KNOWN;
    if rest != 0 {
        if !first {
            out.byte(b',');
        }
        out.bytes(format!("{rest:#x}").as_bytes());
    }
}

#[inline(always)]
fn kv<const N: usize>(out: &mut Cursor<'_>, k: &[u8; N], v: u64) {
    out.lit(k);
    out.u64(v);
}

#[inline(always)]
fn kx<const N: usize>(out: &mut Cursor<'_>, k: &[u8; N], v: u64) {
    out.lit(k);
    out.hex(v);
}

/// [`event_details`] written straight into an [`Out`].
fn event_details_out(out: &mut Out, e: &EventBody) {
    let mut c = out.cursor();
    event_details(&mut c, e);
    let n = c.written();
    out.commit(n);
}

/// ` key=value` items of an event, by code (FORMAT.md §4.1), then its flags (far less than
/// the cursor's [`LINE_MAX`](crate::out::LINE_MAX)). The keys are the format crate's
/// ([`grtrace_format::Arg::key`]), written as literals here because this is the hottest code
/// of text output (a table lookup cost 30-35 instructions per line, measured with callgrind);
/// the test `argument_keys_are_the_vocabularys` holds the two together.
#[inline(always)]
pub fn event_details(out: &mut Cursor<'_>, e: &EventBody) {
    match e.code {
        Event::ALLOC | Event::COMMIT | Event::STALL => {
            kv(out, b" wp=", e.arg0);
            kv(out, b" units=", e.arg1);
            kv(out, b" fill=", e.arg2 as u64);
        }
        Event::SUBMIT => {
            kv(out, b" wp=", e.arg0);
            kv(out, b" units=", e.arg1);
            kv(out, b" fill=", e.arg2 as u64);
            kv(out, b" jobs=", e.arg3 as u64);
        }
        Event::QUEUE => {
            kv(out, b" fctx=", e.arg0);
            kv(out, b" client=", e.arg1);
            kv(out, b" depth=", e.arg2 as u64);
            kv(out, b" credits=", e.arg3 as u64);
        }
        Event::START => {
            kv(out, b" fctx=", e.arg0);
            kv(out, b" client=", e.arg1);
        }
        Event::END => {
            kv(out, b" fctx=", e.arg0);
            kv(out, b" client=", e.arg1);
            kv(out, b" status=", e.arg2 as u64);
        }
        Event::IRQ => {
            kv(out, b" hwseqno=", e.arg0);
            kv(out, b" src=", e.arg2 as u64);
        }
        Event::SIGNAL => {
            kv(out, b" fctx=", e.arg0);
            kv(out, b" fseqno=", e.arg1);
            kv(out, b" err=", e.arg2 as u64);
        }
        Event::WAIT | Event::SYNC_ENTER | Event::SYNC_EXIT => {
            kv(out, b" fctx=", e.arg0);
            kv(out, b" fseqno=", e.arg1);
        }
        Event::WAIT_END => {
            kv(out, b" fctx=", e.arg0);
            kv(out, b" fseqno=", e.arg1);
            kv(out, b" result=", e.arg2 as u64);
        }
        Event::CTX_SWITCH => kv(out, b" prev=", e.arg0),
        Event::CTX_CREATE | Event::CTX_DESTROY => {}
        Event::MEM_ALLOC | Event::MEM_FREE => {
            kv(out, b" obj=", e.arg0);
            kv(out, b" size=", e.arg1);
            kv(out, b" place=", e.arg2 as u64);
        }
        Event::MEM_MAP | Event::MEM_UNMAP => {
            kx(out, b" va=", e.arg0);
            kv(out, b" size=", e.arg1);
            kv(out, b" obj=", e.arg2 as u64);
        }
        Event::VM_FAULT | Event::VM_RETRY => {
            kx(out, b" addr=", e.arg0);
            kv(out, b" status=", e.arg2 as u64);
            kv(out, b" vmid=", e.arg3 as u64);
        }
        Event::TIMEOUT | Event::HANG => kv(out, b" err=", e.arg2 as u64),
        Event::RESET => {
            kv(out, b" err=", e.arg2 as u64);
            kv(out, b" scope=", e.arg3 as u64);
        }
        _ => {
            kv(out, b" a0=", e.arg0);
            kv(out, b" a1=", e.arg1);
            kv(out, b" a2=", e.arg2 as u64);
            kv(out, b" a3=", e.arg3 as u64);
        }
    }
    let f = (e.flags & PRINTED) as usize;
    if f != 0 {
        out.short(&FLAGS.get_or_init(flag_table)[f]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process named again and again (a hostile stream of process notes) keeps one slot
    /// and its latest name, below and above the pid table.
    #[test]
    fn names_grow_with_processes_not_notes() {
        let mut n = Names::default();
        for pid in [7, PID_TABLE + 7] {
            for k in 0..1000 {
                n.set_comm(pid, format!("p{k}").as_bytes());
            }
            assert_eq!(n.comm(pid), Some(&b"p999"[..]));
        }
        assert_eq!(n.comms.len(), 2);
    }

    #[test]
    fn format_strings_compile_and_reject_unknown_fields() {
        let p = compile("%T.%9t %-5a|%3c\\n%%").unwrap();
        assert_eq!(
            p,
            vec![
                Piece::Field {
                    c: b'T',
                    width: 0,
                    left: false
                },
                Piece::Lit(b".".to_vec()),
                Piece::Field {
                    c: b't',
                    width: 9,
                    left: false
                },
                Piece::Lit(b" ".to_vec()),
                Piece::Field {
                    c: b'a',
                    width: 5,
                    left: true
                },
                Piece::Lit(b"|".to_vec()),
                Piece::Field {
                    c: b'c',
                    width: 3,
                    left: false
                },
                Piece::Lit(b"\n%".to_vec()),
            ]
        );
        assert!(compile("%q").unwrap_err().contains("unknown field %q"));
        assert!(compile("abc %").is_err());
    }

    #[test]
    fn argument_fields_are_digits_after_an_optional_width() {
        let field = |c, width| Piece::Field {
            c,
            width,
            left: false,
        };
        assert_eq!(compile("%2").unwrap(), vec![field(b'2', 0)]);
        assert_eq!(
            compile("%0 %12").unwrap(),
            vec![field(b'0', 0), Piece::Lit(b" ".to_vec()), field(b'2', 1)]
        );
        assert_eq!(compile("%12x").unwrap(), vec![field(b'x', 12)]);
    }

    #[test]
    fn names_and_slots_round_trip() {
        for s in 1..26 {
            assert_eq!(slot_by_name(&slot_name(s)), Some(s));
        }
        for (rt, n) in NOTE_NAMES.iter().skip(2) {
            assert_eq!(slot_by_name(n), Some(SLOT_NOTE_BASE + *rt as usize));
            assert_eq!(slot_name(SLOT_NOTE_BASE + *rt as usize), *n);
        }
        assert_eq!(slot_by_name("event_42"), Some(42));
        assert_eq!(slot_by_name("submit"), Some(3));
        assert_eq!(slot_by_name("nonsense"), None);
    }

    /// Every code's ` key=value` items are the vocabulary's argument keys, in argument
    /// order, hexadecimal where it says so; unknown codes print `a0..a3`.
    #[test]
    fn argument_keys_are_the_vocabularys() {
        for code in 0..=Event::LIMIT {
            let e = EventBody {
                code: Event(code),
                arg0: 0x1000,
                arg1: 0x1001,
                arg2: 0x1002,
                arg3: 0x1003,
                ..EventBody::default()
            };
            let mut out = Out::new(Box::new(std::io::sink()));
            event_details_out(&mut out, &e);
            let text = String::from_utf8(out.pending().to_vec()).unwrap();
            let want: Vec<String> = (0..4)
                .filter_map(|i| {
                    let v = 0x1000 + i as u64;
                    match Event(code).arg(i) {
                        Some(a) if a.hex => Some(format!(" {}={v:#x}", a.key)),
                        Some(a) => Some(format!(" {}={v}", a.key)),
                        None if !Event(code).is_known() => Some(format!(" a{i}={v}")),
                        None => None,
                    }
                })
                .collect();
            assert_eq!(text, want.concat(), "code {code}");
        }
    }
}
