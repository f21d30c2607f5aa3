//! Text formatted on worker threads: the pass (merge, filters, counts) stays on the calling
//! thread and hands the records to print, in merged order, to workers in batches; each
//! worker formats a whole batch into a buffer of its own, and the buffers are written in
//! batch order. Formatting is most of the text path's cost (about 700 of its 860
//! instructions per line), so it scales with the workers while the merge stays serial.
//!
//! What a line shows beyond its record: its card (carried per entry), time 0 (per batch) and
//! the process and ring names learnt from notes before it. Every name note goes into a log
//! with the number of the line it precedes; a worker applies the log to its own copy of the
//! names up to each line it formats, so a line shows the names its merged position saw.
//!
//! Batches in flight are bounded (twice the workers, plus two), and so is memory; buffers and
//! batches are reused. When every worker is busy, the calling thread formats the next batch
//! itself (on two CPUs the merge leaves it most of its time). A failed write (a reader gone: `| head`) stops the pass at the next
//! batch.

use std::collections::BTreeMap;
use std::io;
use std::ops::ControlFlow;
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use grtrace_format::abi;
use grtrace_format::record::{EventBody, Lost};
use grtrace_format::view::RecordView;
use grtrace_format::{Endian, Native, RecordType};

use crate::out::Out;
use crate::printer::{Line, Render};

/// Lines per batch: about 450 KB of default text, under one output buffer.
pub const BATCH_LINES: usize = 4096;

/// Inputs below this total size are printed on one thread (thread start-up would cost more
/// than it saves).
pub const MIN_INPUT_BYTES: u64 = 4 << 20;

/// One line to print: a record (its bytes are next in the batch's byte buffer) or a gap.
#[derive(Clone, Copy)]
struct Entry {
    card: u32,
    /// Record size in bytes, or 0 for the gap `gaps[gap]`.
    len: u32,
    gap: u32,
    endian: Endian,
}

/// Lines handed to a worker.
struct Batch {
    /// Its number: buffers are written in this order.
    seq: u64,
    /// Number of the first line (counted over the whole pass), for the name log.
    first_line: u64,
    /// Time 0 of the relative clock.
    genesis: u64,
    entries: Vec<Entry>,
    bytes: Vec<u8>,
    gaps: Vec<Lost>,
    /// The buffer the worker formats into.
    out: Vec<u8>,
}

impl Batch {
    fn new() -> Batch {
        Batch {
            seq: 0,
            first_line: 0,
            genesis: 0,
            entries: Vec::with_capacity(BATCH_LINES),
            bytes: Vec::with_capacity(BATCH_LINES * abi::rsize::EVENT),
            gaps: Vec::new(),
            out: Vec::new(),
        }
    }

    fn clear(&mut self) {
        self.entries.clear();
        self.bytes.clear();
        self.gaps.clear();
    }
}

/// Name notes (process, ring) in merged order, each with the line it precedes.
#[derive(Default)]
struct NameLog {
    /// (line, endian, start and end in `bytes`).
    notes: Vec<(u64, Endian, usize, usize)>,
    bytes: Vec<u8>,
}

/// The length of a batch whose formatting panicked.
const FAILED: usize = usize::MAX;

/// A formatted batch coming back: its output (bytes written) and the batch, to reuse.
type Done = (Batch, Vec<u8>, usize);

/// The workers and the batches between them and the output.
pub(crate) struct Parallel {
    work: Option<SyncSender<Batch>>,
    done: Receiver<Done>,
    workers: Vec<JoinHandle<()>>,
    log: Arc<Mutex<NameLog>>,
    /// The batch being filled.
    cur: Batch,
    free: Vec<Batch>,
    /// Written buffers, for the next batches to format into.
    spares: Vec<Vec<u8>>,
    /// Formatted batches waiting for the ones before them.
    waiting: BTreeMap<u64, (Vec<u8>, usize)>,
    next_seq: u64,
    next_write: u64,
    in_flight: usize,
    max_in_flight: usize,
    lines: u64,
    batch_lines: usize,
    /// This thread's own formatter, for batches the workers are too busy to take.
    local: Worker,
}

impl Parallel {
    /// Starts `workers` threads formatting with copies of `render` (formats, card, clock;
    /// names are learnt from the log). None when a thread cannot be started: the caller
    /// then prints on its own thread.
    pub(crate) fn start(render: &Render, workers: usize, batch_lines: usize) -> Option<Parallel> {
        let workers = workers.max(1);
        let max_in_flight = 2 * workers + 2;
        let (work_tx, work_rx) = sync_channel::<Batch>(max_in_flight);
        let work_rx = Arc::new(Mutex::new(work_rx));
        let (done_tx, done_rx) = channel::<Done>();
        let log = Arc::new(Mutex::new(NameLog::default()));
        let mut handles = Vec::with_capacity(workers);
        for i in 0..workers {
            let (rx, tx, log) = (work_rx.clone(), done_tx.clone(), log.clone());
            let mut w = Worker {
                render: render.clone(),
                log_pos: 0,
                pending: Vec::new(),
            };
            let spawned = std::thread::Builder::new()
                .name(format!("grtparse-text{i}"))
                .spawn(move || w.serve(&rx, &tx, &log));
            match spawned {
                Ok(h) => handles.push(h),
                Err(_) => break,
            }
        }
        if handles.is_empty() {
            return None;
        }
        Some(Parallel {
            work: Some(work_tx),
            done: done_rx,
            workers: handles,
            log,
            cur: Batch::new(),
            free: Vec::new(),
            spares: Vec::new(),
            waiting: BTreeMap::new(),
            next_seq: 0,
            next_write: 0,
            in_flight: 0,
            max_in_flight,
            lines: 0,
            batch_lines: batch_lines.max(1),
            local: Worker {
                render: render.clone(),
                log_pos: 0,
                pending: Vec::new(),
            },
        })
    }

    /// A name note (process or ring) seen by the pass, shown or not: the lines after it
    /// show its name.
    pub(crate) fn name_note(&mut self, r: &RecordView<'_>) {
        let rt = r.rtype();
        if rt != RecordType::NOTE_PROCESS && rt != RecordType::NOTE_RING {
            return;
        }
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        let start = log.bytes.len();
        log.bytes.extend_from_slice(r.bytes());
        let end = log.bytes.len();
        log.notes.push((self.lines, r.endian(), start, end));
    }

    /// A record to print.
    #[inline(always)]
    pub(crate) fn record(
        &mut self,
        card: u32,
        r: &RecordView<'_>,
        genesis: u64,
        out: &mut Out,
    ) -> ControlFlow<()> {
        let b = r.bytes();
        self.cur.entries.push(Entry {
            card,
            len: b.len() as u32,
            gap: 0,
            endian: r.endian(),
        });
        self.cur.bytes.extend_from_slice(b);
        self.pushed(genesis, out)
    }

    /// A sequence gap to print.
    pub(crate) fn gap(
        &mut self,
        card: u32,
        g: Lost,
        genesis: u64,
        out: &mut Out,
    ) -> ControlFlow<()> {
        self.cur.entries.push(Entry {
            card,
            len: 0,
            gap: self.cur.gaps.len() as u32,
            endian: Endian::NATIVE,
        });
        self.cur.gaps.push(g);
        self.pushed(genesis, out)
    }

    #[inline(always)]
    fn pushed(&mut self, genesis: u64, out: &mut Out) -> ControlFlow<()> {
        self.lines += 1;
        if self.cur.entries.len() >= self.batch_lines {
            self.send(genesis, out);
            if out.failed() {
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    }

    /// Hands the current batch to the workers, writing what came back in the meantime;
    /// waits when too many are in flight.
    #[cold]
    fn send(&mut self, genesis: u64, out: &mut Out) {
        let next = self.free.pop().unwrap_or_else(Batch::new);
        let mut b = std::mem::replace(&mut self.cur, next);
        b.seq = self.next_seq;
        b.first_line = self.lines - b.entries.len() as u64;
        b.genesis = genesis;
        if b.out.is_empty() {
            b.out = self.spares.pop().unwrap_or_default();
        }
        self.next_seq += 1;
        while let Ok(d) = self.done.try_recv() {
            self.arrived(d, out);
        }
        // Formatted batches waiting for an earlier one are bounded too.
        while self.in_flight >= self.max_in_flight && self.waiting.len() >= self.max_in_flight {
            match self.done.recv() {
                Ok(d) => self.arrived(d, out),
                Err(_) => break,
            }
        }
        self.in_flight += 1;
        if self.in_flight > self.max_in_flight {
            // The workers are behind (few CPUs: the merge leaves this thread time): this
            // batch is formatted here.
            let mut o = Out::memory(std::mem::take(&mut b.out));
            self.local.format(&b, &mut o, &self.log);
            let (buf, len) = o.into_buffer();
            self.arrived((b, buf, len), out);
            return;
        }
        if self.work.as_ref().is_none_or(|w| w.send(b).is_err()) {
            // Every worker is gone (it cannot happen short of a bug).
            out.fail(io::Error::other("the text threads ended"));
        }
    }

    /// A formatted batch: written now if it is the next one, else kept until it is.
    fn arrived(&mut self, (mut batch, buf, len): Done, out: &mut Out) {
        self.in_flight -= 1;
        if len == FAILED {
            out.fail(io::Error::other("formatting a batch of lines failed"));
        }
        self.waiting.insert(batch.seq, (buf, len));
        while let Some((buf, len)) = self.waiting.remove(&self.next_write) {
            self.next_write += 1;
            let spare = if out.failed() {
                buf
            } else {
                out.hand_over(buf, len)
            };
            if self.spares.len() <= self.max_in_flight {
                self.spares.push(spare);
            }
        }
        batch.clear();
        self.free.push(batch);
    }

    /// Prints what is left and stops the workers. With `write` false (the pass stopped on
    /// a failed write) nothing more is written.
    pub(crate) fn finish(mut self, genesis: u64, out: &mut Out, write: bool) {
        if write && !self.cur.entries.is_empty() && !out.failed() {
            self.send(genesis, out);
        }
        self.work = None;
        while self.in_flight > 0 {
            match self.done.recv() {
                Ok(d) => self.arrived(d, out),
                Err(_) => break,
            }
        }
        for h in self.workers.drain(..) {
            let _ = h.join();
        }
        if write && (self.in_flight > 0 || !self.waiting.is_empty()) {
            out.fail(io::Error::other("the text threads ended early"));
        }
    }
}

/// A formatting thread.
struct Worker {
    render: Render,
    /// Log entries applied so far.
    log_pos: usize,
    /// Log entries of the current batch, applied at their line.
    pending: Vec<(u64, Endian, Vec<u8>)>,
}

impl Worker {
    fn serve(&mut self, work: &Mutex<Receiver<Batch>>, done: &Sender<Done>, log: &Mutex<NameLog>) {
        loop {
            let batch = {
                let rx = work.lock().unwrap_or_else(|e| e.into_inner());
                rx.recv()
            };
            let Ok(mut batch) = batch else { return };
            let buf = std::mem::take(&mut batch.out);
            let mut out = Out::memory(buf);
            // A bug in a printer must not leave the pass waiting for this batch.
            let formatted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.format(&batch, &mut out, log)
            }));
            let (buf, len) = out.into_buffer();
            let len = if formatted.is_ok() { len } else { FAILED };
            if done.send((batch, buf, len)).is_err() {
                return;
            }
        }
    }

    /// Names up to the batch's first line applied, the rest kept for their lines.
    fn catch_up(&mut self, batch: &Batch, log: &Mutex<NameLog>) {
        self.pending.clear();
        let end = batch.first_line + batch.entries.len() as u64;
        let log = log.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(&(line, endian, a, b)) = log.notes.get(self.log_pos) {
            if line >= end {
                break;
            }
            self.log_pos += 1;
            let bytes = &log.bytes[a..b];
            if line <= batch.first_line {
                learn(&mut self.render, bytes, endian);
            } else {
                self.pending.push((line, endian, bytes.to_vec()));
            }
        }
    }

    fn format(&mut self, batch: &Batch, out: &mut Out, log: &Mutex<NameLog>) {
        self.catch_up(batch, log);
        self.render.genesis = batch.genesis;
        let mut next_note = 0;
        let mut at = 0usize;
        for (i, e) in batch.entries.iter().enumerate() {
            let line = batch.first_line + i as u64;
            while let Some((l, endian, bytes)) = self.pending.get(next_note) {
                if *l > line {
                    break;
                }
                learn(&mut self.render, bytes, *endian);
                next_note += 1;
            }
            self.render.set_card(e.card);
            if e.len == 0 {
                self.render
                    .line(out, &Line::gap(batch.gaps[e.gap as usize]));
                continue;
            }
            let b = &batch.bytes[at..at + e.len as usize];
            at += e.len as usize;
            // The records were checked by the reader: this parse cannot fail.
            let Ok(r) = RecordView::parse(b, e.endian, 0) else {
                continue;
            };
            if let (Ok(fixed), true) = (
                <&[u8; abi::rsize::EVENT]>::try_from(b),
                e.endian.is_native(),
            ) {
                if let Some(ev) = EventBody::read_record::<Native>(fixed) {
                    self.render.line(out, &Line::event(&r, ev));
                    continue;
                }
            }
            let line = match r.event() {
                Some(ev) => Line::event(&r, grtrace_format::EventView::fields(&ev)),
                None => Line::note(&r),
            };
            self.render.line(out, &line);
        }
    }
}

/// Learns the names of a logged note.
fn learn(render: &mut Render, bytes: &[u8], endian: Endian) {
    if let Ok(r) = RecordView::parse(bytes, endian, 0) {
        render.names.learn(&r);
    }
}
