//! The k-way merge: one loop over mapped per-CPU cursors and merged-input queues.

use std::ops::ControlFlow;

use super::file::FileCursor;
use super::pipe::{Demux, Feed, HdrState};
use super::seq::{self, CpuSeq, Origins};
use super::{
    EmbeddedStream, Item, RawItem, RunItem, RunSummary, Trace, MIN_CHUNK, PIPE_READAHEAD,
    READ_CHUNK,
};
use crate::abi::{self, rec_off};
use crate::endian::{Endian, Native, Order, Swapped};
use crate::view::{event_fits, RecordView};

// ---------------------------------------------------------------------------------------------
// Merge machinery

/// Merge key of a cursor's head record plus the cursor's id.
#[derive(Clone, Copy, Debug)]
pub(super) struct Entry {
    pub(super) time: u64,
    pub(super) seq: u64,
    pub(super) cpu: u32,
    pub(super) cur: u32,
}

impl Entry {
    #[inline(always)]
    pub(super) fn before(&self, o: &Entry) -> bool {
        (self.time, self.cpu, self.seq, self.cur) < (o.time, o.cpu, o.seq, o.cur)
    }

    #[inline(always)]
    pub(super) fn of(r: &RecordView<'_>, cur: u32) -> Entry {
        Entry {
            time: r.time_ns(),
            seq: r.seq(),
            cpu: r.cpu(),
            cur,
        }
    }
}

/// A binary min-heap of cursor heads; `replace_top` is the common operation.
pub(super) struct Heap {
    pub(super) v: Vec<Entry>,
}

impl Heap {
    pub(super) fn push(&mut self, e: Entry) {
        self.v.push(e);
        let mut i = self.v.len() - 1;
        while i > 0 {
            let p = (i - 1) / 2;
            if self.v[i].before(&self.v[p]) {
                self.v.swap(i, p);
                i = p;
            } else {
                break;
            }
        }
    }

    #[inline(always)]
    pub(super) fn replace_top(&mut self, e: Entry) {
        self.v[0] = e;
        self.sift_down();
    }

    pub(super) fn pop_top(&mut self) {
        let last = self.v.pop();
        if let Some(last) = last {
            if !self.v.is_empty() {
                self.v[0] = last;
                self.sift_down();
            }
        }
    }

    #[inline(always)]
    pub(super) fn sift_down(&mut self) {
        let n = self.v.len();
        let mut i = 0;
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let r = l + 1;
            let c = if r < n && self.v[r].before(&self.v[l]) {
                r
            } else {
                l
            };
            if self.v[c].before(&self.v[i]) {
                self.v.swap(c, i);
                i = c;
            } else {
                break;
            }
        }
    }
}

impl Trace {
    pub(super) fn merger(&mut self, sum: &mut RunSummary) -> Merger<'_> {
        let streams = &self.streams;
        let mut m = Merger::new();
        m.origins.merge_sessions = self.merge_sessions;
        m.origins.single_card = streams
            .first()
            .map(|s| s.header.card)
            .filter(|_| self.single_card);
        let n_inputs = self.mapped.len() + self.pipes.len();
        for mi in &self.mapped {
            let info = &streams[mi.stream];
            let data = mi.backing.bytes();
            let hdr = HdrState::new(&info.header, &mut m.origins);
            let map = mi.backing.mapping();
            let pos = info.header.header_size as usize;
            if info.header.is_merged() || mi.concatenated {
                m.add_demux(Demux::new(
                    &info.name,
                    Feed::Slice {
                        data,
                        pos,
                        shrink: map,
                        released: 0,
                    },
                    hdr,
                    PIPE_READAHEAD,
                ));
            } else {
                let cur = FileCursor {
                    name: &info.name,
                    data,
                    endian: hdr.endian,
                    pos,
                    head: None,
                    check: hdr.check,
                    origin: hdr.origin,
                    ident: (info.header.card, info.header.session_id),
                    map,
                    released: 0,
                };
                m.add_file(cur, sum);
            }
        }
        for p in &mut self.pipes {
            let info = &streams[p.stream];
            let hdr = HdrState::new(&info.header, &mut m.origins);
            let buf = std::mem::take(&mut p.buf);
            let end = buf.len();
            // A per-CPU stream is already in time order: it needs no read-ahead, and many
            // of them (`grtreport --read` over thousands of CPU files) share the budget.
            let readahead = if info.header.is_merged() {
                PIPE_READAHEAD
            } else {
                (PIPE_READAHEAD / n_inputs).max(abi::RECORD_HEADER_SIZE)
            };
            let chunk = (READ_CHUNK / n_inputs).clamp(MIN_CHUNK, 1 << 16);
            m.add_demux(Demux::new(
                &info.name,
                Feed::Reader {
                    reader: &mut p.reader,
                    buf,
                    start: 0,
                    end,
                    base: p.base,
                    eof: false,
                    chunk,
                },
                hdr,
                readahead,
            ));
        }
        m
    }
}

pub(super) struct Merger<'m> {
    pub(super) heap: Heap,
    pub(super) files: Vec<FileCursor<'m>>,
    pub(super) demux: Vec<Demux<'m>>,
    /// Cursor ids at and above `QUEUE_BASE` name (demux, queue) pairs through this table.
    pub(super) qids: Vec<(u32, u32)>,
    pub(super) origins: Origins,
    pub(super) last_time: u64,
    /// Bytes and queues held by all demuxes, as last noted (see `note_held`).
    pub(super) held: usize,
    pub(super) queues: usize,
}

pub(super) const QUEUE_BASE: u32 = 1 << 30;

/// Most bytes of one run handed to a sink's [`Sink::run`]: a consumer that queues runs for
/// another thread holds a bounded amount of the mapping, and a run goes out long before
/// the cursor hands its pages back to the kernel (see `file::RELEASE_LAG`).
pub(crate) const RUN_MAX: usize = 64 << 10;

/// How a file cursor's turn in the merge ended.
pub(super) enum Turn {
    /// The cursor moved in the heap (or left it): the next cursor's turn.
    Next,
    /// The sink asked to stop.
    Stop,
    /// The cursor had no head (never the case for a cursor in the heap).
    Empty,
}

impl<'m> Merger<'m> {
    pub(super) fn new() -> Merger<'m> {
        Merger {
            heap: Heap { v: Vec::new() },
            files: Vec::new(),
            demux: Vec::new(),
            qids: Vec::new(),
            origins: Origins::default(),
            last_time: 0,
            held: 0,
            queues: 0,
        }
    }

    pub(super) fn add_file(&mut self, mut c: FileCursor<'m>, sum: &mut RunSummary) {
        let id = self.files.len() as u32;
        if let Some(r) = c.seek_head(sum) {
            c.head = Some(r);
            self.heap.push(Entry::of(&r, id));
        }
        self.files.push(c);
    }

    pub(super) fn add_demux(&mut self, d: Demux<'m>) {
        self.demux.push(d);
    }

    /// Pushes every non-empty queue of demux `di` that is not in the heap yet.
    pub(super) fn enqueue_ready(&mut self, di: usize) {
        let d = &mut self.demux[di];
        for qi in std::mem::take(&mut d.ready) {
            let q = &mut d.queues[qi];
            q.pending = false;
            if !q.in_heap && !q.is_empty() {
                q.in_heap = true;
                let id = match q.id {
                    Some(id) => id,
                    None => {
                        self.qids.push((di as u32, qi as u32));
                        let id = QUEUE_BASE + (self.qids.len() - 1) as u32;
                        q.id = Some(id);
                        id
                    }
                };
                let (r, _) = q.peek();
                self.heap.push(Entry::of(&r, id));
            }
        }
    }

    /// Merges every input into `sink`, in `(time_ns, cpu, seq)` order: the one merge loop.
    ///
    /// The top cursor of the heap is a mapped per-CPU file or a queue of a merged input. A
    /// file keeps emitting while its next record still sorts before every other cursor's head
    /// (so two interleaved CPUs cost one key comparison per record, not a heap update), and
    /// the sequence check uses the key already read. A queue emits one record, then is
    /// refilled before anything else goes out if it ran empty (the per-CPU watermark).
    // Not inlined into its callers: each sink gets its own copy of this hot loop, unaffected
    // by the code around it.
    #[inline(never)]
    pub(super) fn merge<S: Sink<'m>>(&mut self, sum: &mut RunSummary, mut sink: S) {
        for di in 0..self.demux.len() {
            if !self.demux[di].primed {
                self.demux[di].primed = true;
                self.demux[di].refill(None, &mut self.origins, sum);
                self.note_held(di, sum);
                self.enqueue_ready(di);
                if self.announce(di, &mut sink).is_break() {
                    sum.stopped = true;
                    return;
                }
            }
        }
        let mut last_time = self.last_time;
        let mut reordered = 0u64;
        let mut records = 0u64;
        'outer: while let Some(&top) = self.heap.v.first() {
            if top.cur >= QUEUE_BASE {
                reordered += (top.time < last_time) as u64;
                last_time = top.time;
                if self
                    .queue_step(top, sum, &mut sink, &mut records)
                    .is_break()
                {
                    sum.stopped = true;
                    break 'outer;
                }
                continue;
            }
            // A file emits a turn of records, read in its byte order (a type parameter: the
            // native copy of the loop reads plain loads).
            let turn = if self.files[top.cur as usize].endian.is_native() {
                self.file_turn::<Native, S>(
                    top,
                    sum,
                    &mut sink,
                    &mut last_time,
                    &mut reordered,
                    &mut records,
                )
            } else {
                self.file_turn::<Swapped, S>(
                    top,
                    sum,
                    &mut sink,
                    &mut last_time,
                    &mut reordered,
                    &mut records,
                )
            };
            match turn {
                Turn::Next => {}
                Turn::Stop => {
                    sum.stopped = true;
                    break;
                }
                Turn::Empty => break,
            }
        }
        sum.records += records;
        sum.reordered += reordered;
        self.last_time = last_time;
    }

    /// Emits records of the file cursor at the top of the heap while its next record still
    /// sorts before every other cursor's head (so two interleaved CPUs cost one key
    /// comparison per record, not a heap update), then moves it in the heap. The cursor's
    /// head may be any record; after it, event records in order `O` take the fast path
    /// ([`RecordView::parse_event`], the cursor's position and the sequence state of its
    /// CPU kept in locals). Anything else (a note, an unknown record, pages to release,
    /// damage, another stream header) goes through [`FileCursor::seek_head`] and ends the
    /// turn, so the next turn starts again with the cursor's current byte order and
    /// checking.
    // `flush!` resets the run even where the turn ends right after. Not inlined: the loop
    // gets the registers to itself (a turn is ~15 records of two interleaved CPUs).
    #[allow(unused_assignments)]
    #[inline(never)]
    fn file_turn<O: Order, S: Sink<'m>>(
        &mut self,
        top: Entry,
        sum: &mut RunSummary,
        sink: &mut S,
        last_time: &mut u64,
        reordered: &mut u64,
        records: &mut u64,
    ) -> Turn {
        // The best head among the other cursors: a child of the root. A record earlier
        // than its time needs no other comparison.
        let limit = match (self.heap.v.get(1), self.heap.v.get(2)) {
            (Some(a), Some(b)) => Some(if b.before(a) { *b } else { *a }),
            (Some(a), None) => Some(*a),
            _ => None,
        };
        let limit_time = limit.map_or(u64::MAX, |l| l.time);
        let c = &mut self.files[top.cur as usize];
        let card = self.origins.card(c.origin);
        let seqs = &mut self.origins.seqs[c.origin as usize];
        let Some(head) = c.head else {
            return Turn::Empty;
        };
        let (data, check, fast_end) = (c.data, c.check, c.fast_end());
        let mut pos = c.pos;
        // The sequence state of the CPU of the last record checked (a per-CPU file's records
        // are all of one CPU), in locals until the turn ends or the CPU changes.
        // (`NO_CPU`: none yet.)
        const NO_CPU: usize = usize::MAX;
        let (mut hot_cpu, mut hot) = (NO_CPU, CpuSeq::default());
        // Records emitted this turn, and the merge's order state, in locals.
        let mut emitted = 0u64;
        let (mut last, mut backwards) = (*last_time, 0u64);
        // Runs of native event records go to the sink as one slice each (at most RUN_MAX
        // bytes): the records `run_n` from `run_start` on, which end at `pos` (every
        // record of a turn after its head came by the fast path, so they follow one
        // another in the file). For a sink without runs, or swapped records, dead code.
        let runs = S::RUNS && O::ENDIAN.is_native();
        let (mut run_start, mut run_n) = (pos, 0u64);
        macro_rules! flush {
            ($turn:lifetime) => {
                if run_n > 0 {
                    let bytes = &data[run_start..pos];
                    if sink.run(card, bytes, run_n).is_break() {
                        break $turn Turn::Stop;
                    }
                    run_n = 0;
                }
            };
        }
        // Emits record `r` at `pos` with merge key `key` (`event`: an event in order `O`).
        macro_rules! emit {
            ($turn:lifetime, $r:expr, $key:expr, $event:expr) => {
                let (r, key) = ($r, $key);
                backwards += (key.time < last) as u64;
                last = key.time;
                if check && key.seq != 0 {
                    if hot_cpu == key.cpu as usize && key.seq == hot.last_seq.wrapping_add(1) {
                        hot.last_seq = key.seq;
                        hot.last_time = key.time;
                    } else {
                        if hot_cpu != NO_CPU {
                            seqs[hot_cpu] = hot;
                        }
                        let gap =
                            seq::check(seqs, key.cpu, key.seq, key.time, c.name, pos as u64, sum);
                        // `check` made the entry of any CPU it tracks.
                        hot_cpu = NO_CPU;
                        if let Some(st) = seqs.get(key.cpu as usize) {
                            (hot_cpu, hot) = (key.cpu as usize, *st);
                        }
                        if let Some(g) = gap {
                            flush!($turn);
                            if sink.item(card, Item::Gap(g)).is_break() {
                                break $turn Turn::Stop;
                            }
                        }
                    }
                }
                emitted += 1;
                if runs && $event {
                    if run_n == 0 {
                        run_start = pos;
                    }
                    run_n += 1;
                    pos += r.size();
                    if pos - run_start >= RUN_MAX {
                        flush!($turn);
                    }
                } else {
                    flush!($turn);
                    if sink.item(card, Item::Record(r)).is_break() {
                        break $turn Turn::Stop;
                    }
                    pos += r.size();
                }
            };
        }
        let turn = 'turn: {
            emit!('turn, head, top, head.endian() == O::ENDIAN && head.is_event());
            loop {
                if runs && run_n > 0 && (!check || hot_cpu != NO_CPU) {
                    // The run goes on: the next events of this file join it in a loop of
                    // its own (see `run_on`); the record it stops at takes the way below.
                    let mut on = RunOn {
                        pos,
                        n: 0,
                        last,
                        backwards: 0,
                        hot,
                    };
                    let cpu = if check { hot_cpu } else { NO_CPU };
                    let stop = fast_end.min(run_start + RUN_MAX);
                    run_on::<O>(data, stop, limit_time, cpu, &mut on);
                    (pos, last, hot) = (on.pos, on.last, on.hot);
                    run_n += on.n;
                    emitted += on.n;
                    backwards += on.backwards;
                    if pos - run_start >= RUN_MAX {
                        flush!('turn);
                    }
                }
                let fast = if pos < fast_end {
                    data.get(pos..).and_then(RecordView::parse_event::<O>)
                } else {
                    None
                };
                let Some((r, time, cpu, seq)) = fast else {
                    // The slow path: the run held goes out, the record found ends the turn.
                    flush!('turn);
                    c.pos = pos;
                    let next = c.seek_head(sum);
                    pos = c.pos;
                    match next {
                        Some(n) => {
                            c.head = Some(n);
                            self.heap.replace_top(Entry::of(&n, top.cur));
                        }
                        None => self.heap.pop_top(),
                    }
                    break 'turn Turn::Next;
                };
                let key = Entry {
                    time,
                    seq,
                    cpu,
                    cur: top.cur,
                };
                if key.time >= limit_time && limit.is_some_and(|l| !key.before(&l)) {
                    // Another cursor is next: the run held goes out first.
                    flush!('turn);
                    c.head = Some(r);
                    self.heap.replace_top(key);
                    break 'turn Turn::Next;
                }
                emit!('turn, r, key, true);
            }
        };
        c.pos = pos;
        if hot_cpu != NO_CPU {
            seqs[hot_cpu] = hot;
        }
        *records += emitted;
        *reordered += backwards;
        *last_time = last;
        turn
    }

    /// Emits the head record of the queue at the top of the heap (and the gap before it),
    /// then moves the queue in the heap, refilling it first if it ran empty.
    #[inline]
    pub(super) fn queue_step<S: Sink<'m>>(
        &mut self,
        top: Entry,
        sum: &mut RunSummary,
        sink: &mut S,
        records: &mut u64,
    ) -> ControlFlow<()> {
        let (di, qi) = self.qids[(top.cur - QUEUE_BASE) as usize];
        let (di, qi) = (di as usize, qi as usize);
        {
            let d = &mut self.demux[di];
            let name = d.name;
            let q = &d.queues[qi];
            let (r, at) = q.peek();
            let size = r.size();
            let card = self.origins.card(at.origin);
            if at.check {
                if let Some(g) = seq::check(
                    &mut self.origins.seqs[at.origin as usize],
                    top.cpu,
                    top.seq,
                    top.time,
                    name,
                    at.offset,
                    sum,
                ) {
                    sink.item(card, Item::Gap(g))?;
                }
            }
            *records += 1;
            sink.item(card, Item::Record(r))?;
            let n = d.queues[qi].pop(size);
            d.buffered -= n;
            if d.queues[qi].is_empty() {
                // The watermark: nothing else may go out before this CPU's next
                // record is known (or its input has ended).
                d.refill(Some(qi), &mut self.origins, sum);
                self.note_held(di, sum);
                if !self.demux[di].announced.is_empty() {
                    self.announce(di, sink)?;
                }
            }
        }
        let d = &mut self.demux[di];
        if d.queues[qi].is_empty() {
            d.queues[qi].in_heap = false;
            self.heap.pop_top();
        } else {
            let (r, _) = d.queues[qi].peek();
            self.heap.replace_top(Entry::of(&r, top.cur));
        }
        self.enqueue_ready(di);
        ControlFlow::Continue(())
    }

    /// Hands the headers demux `di` read that start a new (card, session) to the sink, as
    /// [`Item::Stream`]: called after every refill, so before any record read after them.
    #[cold]
    #[inline(never)]
    pub(super) fn announce<S: Sink<'m>>(&mut self, di: usize, sink: &mut S) -> ControlFlow<()> {
        let d = &mut self.demux[di];
        let file = d.name;
        for a in std::mem::take(&mut d.announced) {
            let s = EmbeddedStream {
                file,
                offset: a.offset,
                header: &a.header,
                earlier_session: a.earlier_session,
            };
            sink.item(a.header.card, Item::Stream(s))?;
        }
        ControlFlow::Continue(())
    }

    /// [`merge`](Self::merge) into a closure of `(card, item)` (for tests).
    #[cfg(test)]
    pub(super) fn run<F>(&mut self, sum: &mut RunSummary, f: &mut F)
    where
        F: FnMut(u32, Item<'_>) -> ControlFlow<()>,
    {
        self.merge(sum, ItemSink(f));
    }

    /// Updates the bytes and queues held by all merged inputs after demux `di` read more,
    /// and their peaks in the summary (O(1): only `di` changed).
    #[inline]
    pub(super) fn note_held(&mut self, di: usize, sum: &mut RunSummary) {
        let d = &mut self.demux[di];
        let (held, queues) = (d.held(), d.queues.len());
        self.held = self.held + held - d.held_noted;
        self.queues = self.queues + queues - d.queues_noted;
        (d.held_noted, d.queues_noted) = (held, queues);
        sum.peak_buffered = sum.peak_buffered.max(self.held as u64);
        sum.peak_queues = sum.peak_queues.max(self.queues as u64);
    }
}

/// What [`run_on`] carries from record to record.
struct RunOn {
    /// Offset of the next record.
    pos: usize,
    /// Records taken.
    n: u64,
    /// Time of the last record emitted, and records earlier than the one before them.
    last: u64,
    backwards: u64,
    /// Sequence state of the file's CPU.
    hot: CpuSeq,
}

/// The inner loop of a file's turn while a run of native events is open: takes the event
/// records of order `O` from `on.pos` on while they are whole, start before `stop`, are
/// earlier than `limit_time` and (`cpu` not `usize::MAX`: checked) of CPU `cpu` with the
/// next sequence number; stops at the first record that is not, for the caller's general
/// path. Not inlined: it keeps the few values it changes in registers.
#[inline(never)]
fn run_on<O: Order>(data: &[u8], stop: usize, limit_time: u64, cpu: usize, on: &mut RunOn) {
    let RunOn {
        mut pos,
        mut n,
        mut last,
        mut backwards,
        hot: CpuSeq {
            last_seq: mut hl,
            last_time: mut ht,
        },
    } = *on;
    while pos < stop {
        let Some(h) = data
            .get(pos..)
            .and_then(|d| d.first_chunk::<{ abi::RECORD_HEADER_SIZE }>())
        else {
            break;
        };
        let rt = O::u16([h[rec_off::TYPE], h[rec_off::TYPE + 1]]);
        let sz = O::u16([h[rec_off::SIZE], h[rec_off::SIZE + 1]]) as usize;
        if !event_fits(rt, sz, data.len() - pos) {
            break;
        }
        let time = O::u64(h[rec_off::TIME_NS..][..8].try_into().unwrap());
        if time >= limit_time {
            break;
        }
        if cpu != usize::MAX {
            let c = O::u32(h[rec_off::CPU..][..4].try_into().unwrap());
            let seq = O::u64(h[rec_off::SEQ..][..8].try_into().unwrap());
            if c as usize != cpu || seq == 0 || seq != hl.wrapping_add(1) {
                break;
            }
            (hl, ht) = (seq, time);
        }
        backwards += (time < last) as u64;
        last = time;
        pos += sz;
        n += 1;
    }
    *on = RunOn {
        pos,
        n,
        last,
        backwards,
        hot: CpuSeq {
            last_seq: hl,
            last_time: ht,
        },
    };
}

/// Where the merge loop delivers what it emits.
pub(super) trait Sink<'m> {
    /// Whether runs of consecutive native-endian event records of one mapped file go to
    /// [`run`](Self::run) as one slice (else every record goes to [`item`](Self::item)).
    const RUNS: bool;
    /// A gap, or a record (of a mapped file, or queued: it does not outlive the call).
    fn item(&mut self, card: u32, it: Item<'_>) -> ControlFlow<()>;
    /// `count` whole native-endian event records of one mapped file of `card`, in merged
    /// order (at most [`RUN_MAX`] bytes).
    fn run(&mut self, card: u32, bytes: &'m [u8], count: u64) -> ControlFlow<()>;
}

/// Every item to a closure, as [`Trace::for_each_card`] delivers them.
pub(super) struct ItemSink<'f, F>(pub(super) &'f mut F);

impl<'m, F> Sink<'m> for ItemSink<'_, F>
where
    F: FnMut(u32, Item<'_>) -> ControlFlow<()>,
{
    const RUNS: bool = false;

    #[inline(always)]
    fn item(&mut self, card: u32, it: Item<'_>) -> ControlFlow<()> {
        (self.0)(card, it)
    }

    #[inline(always)]
    fn run(&mut self, _: u32, _: &'m [u8], _: u64) -> ControlFlow<()> {
        unreachable!("no runs without RUNS")
    }
}

/// [`Trace::for_each_raw`]'s delivery: native event records as byte slices. With `RUNS`,
/// consecutive native events of one mapped file come as one slice; without (some input is a
/// merged stream), every native event comes alone.
pub(super) struct RawSink<'f, F, const RUNS: bool>(pub(super) &'f mut F);

impl<'m, F, const RUNS: bool> Sink<'m> for RawSink<'_, F, RUNS>
where
    F: FnMut(RawItem<'_>) -> ControlFlow<()>,
{
    const RUNS: bool = RUNS;

    #[inline(always)]
    fn item(&mut self, _: u32, it: Item<'_>) -> ControlFlow<()> {
        match it {
            Item::Record(r) if r.endian() == Endian::NATIVE && r.is_event() => {
                (self.0)(RawItem::Events {
                    bytes: r.bytes(),
                    count: 1,
                })
            }
            it => (self.0)(RawItem::Item(it)),
        }
    }

    #[inline(always)]
    fn run(&mut self, _: u32, bytes: &'m [u8], count: u64) -> ControlFlow<()> {
        (self.0)(RawItem::Events { bytes, count })
    }
}

/// [`Trace::for_each_run`]'s delivery: runs of native event records of mapped files as
/// slices of the mapping, everything else as items, each with its card.
pub(super) struct RunSink<'f, F>(pub(super) &'f mut F);

impl<'m, F> Sink<'m> for RunSink<'_, F>
where
    F: FnMut(u32, RunItem<'m, '_>) -> ControlFlow<()>,
{
    const RUNS: bool = true;

    #[inline(always)]
    fn item(&mut self, card: u32, it: Item<'_>) -> ControlFlow<()> {
        (self.0)(card, RunItem::Item(it))
    }

    #[inline(always)]
    fn run(&mut self, card: u32, bytes: &'m [u8], count: u64) -> ControlFlow<()> {
        (self.0)(card, RunItem::Events { bytes, count })
    }
}
