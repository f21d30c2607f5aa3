//! Sequence checking: per (card, session) origin and CPU, gaps become items, repeats warnings.

use super::{RunSummary, TraceError, Warning, MAX_CPUS};
use crate::abi::lost_source;
use crate::record::{Lost, StreamHeader};
use crate::Card;

/// Per-CPU sequence state.
#[derive(Clone, Copy, Default)]
pub(super) struct CpuSeq {
    pub(super) last_seq: u64,
    pub(super) last_time: u64,
}

/// Most (card, session) origins told apart; see [`Origins::of`].
pub(super) const MAX_ORIGINS: usize = 64;

/// The (card, session) pairs of the stream headers read. Sequence numbers count the records
/// of one CPU of one recording of one device, so they are checked per origin and CPU, and
/// every record is delivered with the card of the header it came under.
#[derive(Default)]
pub(super) struct Origins {
    pub(super) list: Vec<(u32, u64)>,
    /// Per origin, per CPU.
    pub(super) seqs: Vec<Vec<CpuSeq>>,
    /// Headers that found the table full (warned about once at the end).
    pub(super) overflow: u64,
    /// A header inside an input may start another session of a card already read
    /// ([`Trace::merge_sessions`](super::Trace::merge_sessions)).
    pub(super) merge_sessions: bool,
    /// Headers inside inputs may name only this card ([`Trace::single_card`](super::Trace::single_card)).
    pub(super) single_card: Option<u32>,
}

impl Origins {
    /// The origin of a header. Past [`MAX_ORIGINS`] distinct pairs (crafted input), a new
    /// session shares the slot of its card if there is one, else the last slot: memory
    /// stays bounded and only sequence checking of those streams is merged.
    pub(super) fn of(&mut self, h: &StreamHeader) -> u32 {
        let key = (h.card, h.session_id);
        if let Some(i) = self.list.iter().position(|k| *k == key) {
            return i as u32;
        }
        if self.list.len() >= MAX_ORIGINS {
            self.overflow += 1;
            let same_card = self.list.iter().position(|k| k.0 == h.card);
            return same_card.unwrap_or(MAX_ORIGINS - 1) as u32;
        }
        self.list.push(key);
        self.seqs.push(Vec::new());
        (self.list.len() - 1) as u32
    }

    /// Says, once, that some streams shared a slot (their cards and sequence checks may be
    /// merged with another stream's).
    /// `file`: the first input's name.
    pub(super) fn warn_overflow(&self, file: &str, sum: &mut RunSummary) {
        if self.overflow > 0 {
            sum.warn(Warning::TooManyOrigins {
                file: file.to_string(),
                headers: self.overflow,
                limit: MAX_ORIGINS,
            });
        }
    }

    /// Whether a header read inside input `file` at `offset` may start its stream there:
    /// `Ok(None)` for a (card, session) already read, `Ok(Some(earlier session of its card))`
    /// for a new one, and the error that ends the input when it starts another recording of
    /// a card already read (unless merging was asked for) or a card a single-card run does
    /// not take. Registers nothing: [`of`](Self::of) does.
    pub(super) fn admit(
        &self,
        h: &StreamHeader,
        file: &str,
        offset: u64,
    ) -> Result<Option<Option<u64>>, TraceError> {
        if self.list.contains(&(h.card, h.session_id)) {
            return Ok(None);
        }
        if let Some(only) = self.single_card.filter(|&c| c != h.card) {
            return Err(TraceError::at(
                file,
                offset,
                format!(
                    "a stream of {} starts here, and this run takes {} only (a merged stream holds one card): read each card's streams apart",
                    Card(h.card),
                    Card(only)
                ),
            ));
        }
        let earlier = self.list.iter().find(|k| k.0 == h.card).map(|k| k.1);
        if let Some(e) = earlier.filter(|_| !self.merge_sessions) {
            return Err(session_conflict(h, e, file, offset));
        }
        Ok(Some(earlier))
    }

    #[inline(always)]
    pub(super) fn card(&self, origin: u32) -> u32 {
        self.list[origin as usize].0
    }
}

/// The error (or, merged, the warning) of header `h` at `offset` of `file` that starts
/// another recording of its card after one of session `earlier`.
pub(super) fn session_conflict(
    h: &StreamHeader,
    earlier: u64,
    file: &str,
    offset: u64,
) -> TraceError {
    TraceError::at(
        file,
        offset,
        format!(
            "session {:#x} of {card} starts here after a stream of {card} of session {earlier:#x}: streams of two recordings, not merged (--force merges them)",
            h.session_id,
            card = Card(h.card)
        ),
    )
}

/// Sequence check of one record, by its merge key. Returns a gap to deliver before it.
#[inline(always)]
pub(super) fn check(
    seqs: &mut Vec<CpuSeq>,
    cpu: u32,
    seq: u64,
    time: u64,
    name: &str,
    offset: u64,
    sum: &mut RunSummary,
) -> Option<Lost> {
    if seq == 0 || cpu >= MAX_CPUS {
        return None;
    }
    let c = cpu as usize;
    if c >= seqs.len() {
        seqs.resize(c + 1, CpuSeq::default());
    }
    let st = &mut seqs[c];
    let last = st.last_seq;
    if seq == last.wrapping_add(1) {
        st.last_seq = seq;
        st.last_time = time;
        return None;
    }
    if seq > last {
        let first_ns = if last == 0 { time } else { st.last_time };
        st.last_seq = seq;
        st.last_time = time;
        let count = seq - last - 1;
        sum.gaps += 1;
        sum.gap_records = sum.gap_records.saturating_add(count);
        return Some(Lost {
            cpu,
            source: lost_source::SEQ_GAP,
            count,
            first_ns,
            last_ns: time,
        });
    }
    sum.seq_backwards += 1;
    sum.warn(Warning::SeqBackwards {
        file: name.to_string(),
        offset,
        cpu,
        seq,
        last,
    });
    None
}
