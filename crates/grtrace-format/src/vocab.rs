//! The vocabulary of format 1.0 as open newtypes: record types ([`RecordType`]) and event
//! codes ([`Event`]), with their names and what each event's `arg0..arg3` mean
//! (FORMAT.md §3 and §4.1; the test `vocabulary_matches_format_md` checks this table against
//! the specification's).
//!
//! Both are open: a value this version does not name is still a value (FORMAT.md lets minor
//! versions add codes and record types), so readers print or skip it instead of failing, in
//! the manner of `gimli::DwTag`:
//!
//! ```
//! use grtrace_format::{Event, RecordType};
//!
//! assert_eq!(Event::SUBMIT.name(), Some("SUBMIT"));
//! assert_eq!(Event::SUBMIT.arg(3).map(|a| a.key), Some("jobs"));
//! assert_eq!(Event(40).name(), None);
//! assert_eq!(Event(40).to_string(), "EVENT_40");
//! assert_eq!(Event::from_name("wait_end"), Some(Event::WAIT_END));
//! assert_eq!(RecordType::NOTE_LOST.name(), Some("LOST"));
//! ```

use std::fmt;

/// A record type (`type` of the record header). Open: unknown types are skipped by readers.
/// The named types are associated consts, usable in `match` patterns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct RecordType(pub u16);

impl RecordType {
    /// An event (FORMAT.md §4).
    pub const EVENT: RecordType = RecordType(1);
    /// A process's command name.
    pub const NOTE_PROCESS: RecordType = RecordType(2);
    /// A ring's name, engine class and size.
    pub const NOTE_RING: RecordType = RecordType(3);
    /// A text message.
    pub const NOTE_MSG: RecordType = RecordType(4);
    /// A CPU/GPU clock pair.
    pub const NOTE_CLOCK_SYNC: RecordType = RecordType(5);
    /// Records lost (by the kernel, the recorder, or a sequence gap).
    pub const NOTE_LOST: RecordType = RecordType(6);
    /// End-of-stream totals of one CPU.
    pub const NOTE_STREAM_INFO: RecordType = RecordType(7);

    /// Every type of format 1.0, in type order.
    pub const ALL: [RecordType; 7] = [
        RecordType::EVENT,
        RecordType::NOTE_PROCESS,
        RecordType::NOTE_RING,
        RecordType::NOTE_MSG,
        RecordType::NOTE_CLOCK_SYNC,
        RecordType::NOTE_LOST,
        RecordType::NOTE_STREAM_INFO,
    ];

    /// Whether this version knows the type (unknown ones are skipped and counted).
    #[inline(always)]
    pub const fn is_known(self) -> bool {
        self.0.wrapping_sub(1) < RecordType::NOTE_STREAM_INFO.0
    }

    /// The name tools print and accept for a record of this type (`EVENT`, and the notes
    /// without their `NOTE_` prefix: `PROCESS`, `RING`, `MSG`, `CLOCK_SYNC`, `LOST`,
    /// `STREAM_INFO`), or None for a type this version does not know.
    pub const fn name(self) -> Option<&'static str> {
        Some(match self {
            RecordType::EVENT => "EVENT",
            RecordType::NOTE_PROCESS => "PROCESS",
            RecordType::NOTE_RING => "RING",
            RecordType::NOTE_MSG => "MSG",
            RecordType::NOTE_CLOCK_SYNC => "CLOCK_SYNC",
            RecordType::NOTE_LOST => "LOST",
            RecordType::NOTE_STREAM_INFO => "STREAM_INFO",
            _ => return None,
        })
    }

    /// Case-insensitive lookup by [`name`](Self::name).
    pub fn from_name(name: &str) -> Option<RecordType> {
        Self::ALL
            .into_iter()
            .find(|t| t.name().is_some_and(|n| n.eq_ignore_ascii_case(name)))
    }
}

impl From<u16> for RecordType {
    fn from(v: u16) -> RecordType {
        RecordType(v)
    }
}

impl fmt::Display for RecordType {
    /// The name, or `RECORD_<n>` for a type this version does not know.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "RECORD_{}", self.0),
        }
    }
}

/// What one argument of an event means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arg {
    /// Short key tools print it under (`wp=`, `fctx=`).
    pub key: &'static str,
    /// Its meaning, as FORMAT.md §4.1 words it.
    pub meaning: &'static str,
    /// An address, printed in hexadecimal.
    pub hex: bool,
}

const fn a(key: &'static str, meaning: &'static str) -> Option<Arg> {
    Some(Arg {
        key,
        meaning,
        hex: false,
    })
}

const fn x(key: &'static str, meaning: &'static str) -> Option<Arg> {
    Some(Arg {
        key,
        meaning,
        hex: true,
    })
}

/// One row of FORMAT.md §4.1.
struct Def {
    name: &'static str,
    meaning: &'static str,
    args: [Option<Arg>; 4],
}

const fn def(name: &'static str, meaning: &'static str, args: [Option<Arg>; 4]) -> Def {
    Def {
        name,
        meaning,
        args,
    }
}

const WP: &str = "write pointer";
const FCTX: Option<Arg> = a("fctx", "fence context");
const CLIENT: Option<Arg> = a("client", "client id");
const FSEQNO: Option<Arg> = a("fseqno", "fence seqno");
const OBJ_ID: Option<Arg> = a("obj", "object id");
const SIZE: Option<Arg> = a("size", "size in bytes");
const ERR: Option<Arg> = a("err", "error");

/// FORMAT.md §4.1, indexed by code - 1.
const DEFS: [Def; 25] = [
    def(
        "ALLOC",
        "ring space reserved for a job",
        [
            a("wp", "write pointer after"),
            a("units", "units reserved"),
            a("fill", "ring fill after (units in use)"),
            None,
        ],
    ),
    def(
        "COMMIT",
        "job's commands written to the ring",
        [
            a("wp", "write pointer after"),
            a("units", "units"),
            a("fill", "ring fill"),
            None,
        ],
    ),
    def(
        "SUBMIT",
        "doorbell: everything committed up to `seqno` is visible to the GPU",
        [
            a("wp", WP),
            a("units", "units made visible"),
            a("fill", "ring fill"),
            a("jobs", "jobs made visible"),
        ],
    ),
    def(
        "STALL",
        "ring full: the submitter waits for space (ends at the next `ALLOC`)",
        [
            a("wp", WP),
            a("units", "units wanted"),
            a("fill", "ring fill"),
            None,
        ],
    ),
    def(
        "QUEUE",
        "job queued to the scheduler",
        [
            FCTX,
            CLIENT,
            a("depth", "queue depth"),
            a("credits", "credits"),
        ],
    ),
    def(
        "START",
        "job starts (run on the hardware / handed to the driver)",
        [FCTX, CLIENT, None, None],
    ),
    def(
        "END",
        "job finished on the GPU",
        [FCTX, CLIENT, a("status", "status (0 ok, else errno)"), None],
    ),
    def(
        "IRQ",
        "completion interrupt",
        [
            a("hwseqno", "hardware seqno read, if any"),
            None,
            a("src", "irq source"),
            None,
        ],
    ),
    def(
        "SIGNAL",
        "fence signalled",
        [FCTX, FSEQNO, a("err", "error (errno)"), None],
    ),
    def(
        "WAIT",
        "a host thread starts waiting on a fence",
        [FCTX, FSEQNO, None, None],
    ),
    def(
        "WAIT_END",
        "that wait ended",
        [
            FCTX,
            FSEQNO,
            a("result", "result (0 signalled, else errno)"),
            None,
        ],
    ),
    def(
        "SYNC_ENTER",
        "a job starts waiting for a dependency",
        [
            a("fctx", "awaited fence context"),
            a("fseqno", "awaited fence seqno"),
            None,
            None,
        ],
    ),
    def(
        "SYNC_EXIT",
        "the dependency wait ended",
        [
            a("fctx", "awaited fence context"),
            a("fseqno", "awaited fence seqno"),
            None,
            None,
        ],
    ),
    def(
        "CTX_SWITCH",
        "the ring switches to context `ctx`",
        [a("prev", "previous context"), None, None, None],
    ),
    def("CTX_CREATE", "context `ctx` created", [None; 4]),
    def("CTX_DESTROY", "context `ctx` destroyed", [None; 4]),
    def(
        "MEM_ALLOC",
        "buffer object created",
        [OBJ_ID, SIZE, a("place", "placement"), None],
    ),
    def(
        "MEM_FREE",
        "buffer object freed",
        [OBJ_ID, SIZE, a("place", "placement"), None],
    ),
    def(
        "MEM_MAP",
        "object mapped into a GPU VM",
        [x("va", "GPU virtual address"), SIZE, OBJ_ID, None],
    ),
    def(
        "MEM_UNMAP",
        "object unmapped",
        [x("va", "GPU virtual address"), SIZE, OBJ_ID, None],
    ),
    def(
        "VM_FAULT",
        "GPU page fault",
        [
            x("addr", "faulting GPU address"),
            None,
            a("status", "fault status"),
            a("vmid", "vmid / pasid"),
        ],
    ),
    def(
        "VM_RETRY",
        "faulting access resolved / retried (ends the fault window)",
        [
            x("addr", "faulting GPU address"),
            None,
            a("status", "fault status"),
            a("vmid", "vmid / pasid"),
        ],
    ),
    def(
        "TIMEOUT",
        "job timed out (`ctx`, `ring`, `seqno` name it)",
        [None, None, ERR, None],
    ),
    def(
        "RESET",
        "ring or GPU reset",
        [
            None,
            None,
            ERR,
            a("scope", "reset scope (0 ring, 1 engine, 2 device)"),
        ],
    ),
    def("HANG", "hang detected", [None, None, ERR, None]),
];

/// An event code (`code` of an event record). Open: codes a later minor version adds are
/// values too, without a name here.
///
/// The named codes are associated consts, usable in `match` patterns (the type derives
/// `PartialEq` and `Eq`); a match on an `Event` needs a `_` arm for the codes this version
/// does not name:
///
/// ```
/// use grtrace_format::Event;
///
/// fn phase(e: Event) -> &'static str {
///     match e {
///         Event::COMMIT | Event::SUBMIT => "queue",
///         Event::START | Event::END => "exec",
///         _ => "other",
///     }
/// }
/// assert_eq!(phase(Event::END), "exec");
/// assert_eq!(phase(Event(40)), "other");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct Event(pub u16);

impl Event {
    /// Ring space reserved for a job.
    pub const ALLOC: Event = Event(1);
    /// A job's commands written to the ring.
    pub const COMMIT: Event = Event(2);
    /// Doorbell: everything committed up to `seqno` is visible to the GPU.
    pub const SUBMIT: Event = Event(3);
    /// Ring full: the submitter waits for space.
    pub const STALL: Event = Event(4);
    /// A job queued to the scheduler.
    pub const QUEUE: Event = Event(5);
    /// A job starts on the hardware (or is handed to the driver).
    pub const START: Event = Event(6);
    /// A job finished on the GPU.
    pub const END: Event = Event(7);
    /// A completion interrupt.
    pub const IRQ: Event = Event(8);
    /// A fence signalled.
    pub const SIGNAL: Event = Event(9);
    /// A host thread starts waiting on a fence.
    pub const WAIT: Event = Event(10);
    /// That wait ended.
    pub const WAIT_END: Event = Event(11);
    /// A job starts waiting for a dependency.
    pub const SYNC_ENTER: Event = Event(12);
    /// The dependency wait ended.
    pub const SYNC_EXIT: Event = Event(13);
    /// The ring switches to context `ctx`.
    pub const CTX_SWITCH: Event = Event(14);
    /// Context `ctx` created.
    pub const CTX_CREATE: Event = Event(15);
    /// Context `ctx` destroyed.
    pub const CTX_DESTROY: Event = Event(16);
    /// A buffer object created.
    pub const MEM_ALLOC: Event = Event(17);
    /// A buffer object freed.
    pub const MEM_FREE: Event = Event(18);
    /// An object mapped into a GPU VM.
    pub const MEM_MAP: Event = Event(19);
    /// An object unmapped.
    pub const MEM_UNMAP: Event = Event(20);
    /// A GPU page fault.
    pub const VM_FAULT: Event = Event(21);
    /// A faulting access resolved or retried.
    pub const VM_RETRY: Event = Event(22);
    /// A job timed out.
    pub const TIMEOUT: Event = Event(23);
    /// A ring or GPU reset.
    pub const RESET: Event = Event(24);
    /// A hang detected.
    pub const HANG: Event = Event(25);

    /// One past the largest code this version names; named codes are dense from 1.
    pub const LIMIT: u16 = DEFS.len() as u16 + 1;

    #[inline(always)]
    fn def(self) -> Option<&'static Def> {
        DEFS.get((self.0 as usize).wrapping_sub(1))
    }

    /// Whether this version names the code.
    #[inline]
    pub fn is_known(self) -> bool {
        self.def().is_some()
    }

    /// The name (`COMMIT`, `WAIT_END`) printed by grtparse and accepted by every
    /// `-a`/`--events` option, or None for a code this version does not know.
    #[inline]
    pub fn name(self) -> Option<&'static str> {
        self.def().map(|d| d.name)
    }

    /// What the event means (FORMAT.md §4.1).
    pub fn meaning(self) -> Option<&'static str> {
        self.def().map(|d| d.meaning)
    }

    /// What `arg0..arg3` mean: `arg(i)` is None for an unused argument or an unknown code.
    pub fn arg(self, i: usize) -> Option<Arg> {
        self.def().and_then(|d| d.args.get(i).copied().flatten())
    }

    /// The keys of the four arguments (None where unused), or None for an unknown code.
    pub fn arg_names(self) -> Option<[Option<&'static str>; 4]> {
        self.def().map(|d| d.args.map(|a| a.map(|a| a.key)))
    }

    /// Case-insensitive lookup of a named code.
    pub fn from_name(name: &str) -> Option<Event> {
        (1..Self::LIMIT)
            .map(Event)
            .find(|e| e.name().is_some_and(|n| n.eq_ignore_ascii_case(name)))
    }

    /// Every code this version names, in code order.
    pub fn known() -> impl Iterator<Item = Event> {
        (1..Self::LIMIT).map(Event)
    }

    /// Bit of this code in a 64-bit event mask (`events=` of `ctl`); None for codes of 64
    /// and above, which a 1.0 mask cannot select.
    #[inline]
    pub const fn mask_bit(self) -> Option<u64> {
        if self.0 < 64 {
            Some(1u64 << self.0)
        } else {
            None
        }
    }
}

impl From<u16> for Event {
    fn from(v: u16) -> Event {
        Event(v)
    }
}

impl fmt::Display for Event {
    /// The name, or `EVENT_<n>` for a code this version does not know.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "EVENT_{}", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cells of the markdown table that follows `heading` in `doc`.
    fn table_after<'d>(doc: &'d str, heading: &str) -> Vec<Vec<&'d str>> {
        let at = doc.find(heading).expect("heading in FORMAT.md");
        doc[at..]
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .skip(2) // header and alignment rows
            .map(|l| {
                l.trim()
                    .trim_matches('|')
                    .split('|')
                    .map(str::trim)
                    .collect()
            })
            .collect()
    }

    /// FORMAT.md §4.1 is the specification: every row (code, name, meaning, arguments) is
    /// in the table, and the table has no code the specification does not.
    #[test]
    fn vocabulary_matches_format_md() {
        let doc = include_str!("../FORMAT.md");
        let rows = table_after(doc, "### 4.1 Event codes");
        assert_eq!(rows.len(), DEFS.len(), "one row per code");
        for row in &rows {
            assert_eq!(row.len(), 7, "{row:?}");
            let code: u16 = row[0].parse().expect("code column");
            let e = Event(code);
            assert_eq!(Some(row[1].trim_matches('`')), e.name(), "code {code}");
            assert_eq!(Some(row[2]), e.meaning(), "{e}");
            for i in 0..4 {
                let spec = row[3 + i];
                let ours = e.arg(i).map(|a| a.meaning);
                let want = if spec == "—" { None } else { Some(spec) };
                assert_eq!(ours, want, "{e} arg{i}");
            }
        }
        assert_eq!(Event(0).name(), None);
        assert_eq!(Event(Event::LIMIT).name(), None);
    }

    /// Every named code round-trips by number and by name (any case), codes are dense from
    /// 1, 0 and `LIMIT` are unnamed, and the named codes' mask bits make `EVENT_MASK_ALL`.
    #[test]
    fn codes_round_trip_by_number_and_name() {
        for (i, e) in Event::known().enumerate() {
            assert_eq!(e.0 as usize, i + 1);
            assert!(e.is_known());
            let name = e.name().expect("a known code is named");
            assert_eq!(Event::from_name(&name.to_lowercase()), Some(e));
            assert_eq!(e.to_string(), name);
        }
        assert_eq!(Event::known().count(), DEFS.len());
        assert!(!Event(0).is_known() && !Event(Event::LIMIT).is_known());
        assert_eq!(Event::from_name("EVENT_40"), None);
    }

    #[test]
    fn all_mask_covers_every_code() {
        let m = Event::known().fold(0, |m, e| m | e.mask_bit().expect("below 64"));
        assert_eq!(m, crate::abi::EVENT_MASK_ALL);
        assert_eq!(Event(63).mask_bit(), Some(1 << 63));
        assert_eq!(Event(64).mask_bit(), None);
    }

    #[test]
    fn record_types_have_names_and_unknown_ones_print_their_number() {
        for t in RecordType::ALL {
            assert!(t.is_known());
            assert_eq!(
                RecordType::from_name(&t.to_string().to_lowercase()),
                Some(t)
            );
        }
        assert!(!RecordType(0).is_known() && !RecordType(8).is_known());
        assert_eq!(RecordType(9).to_string(), "RECORD_9");
        assert_eq!(Event(33).to_string(), "EVENT_33");
    }
}
