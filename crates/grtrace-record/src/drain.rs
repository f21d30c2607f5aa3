//! One drain thread per traced CPU: follows the relay buffer with the §7.2 consumer
//! ([`DrainCursor`]), copies whole records into pooled buffers for the writer, turns
//! sub-buffer `lost` counts into `NOTE_LOST` records in place, and releases sub-buffers
//! through `consumed` in batches.

use std::fs::File;
use std::io::Write;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use grtrace_format::abi::{lost_source, rec_off, rsize, RECORD_HEADER_SIZE};
use grtrace_format::relay::{consumed_line, DrainCursor, RelayMap};
use grtrace_format::RecordType;
use grtrace_format::{encode_into, Body, Endian, Lost, Stamp};

use crate::writer::Chunk;

/// Send a chunk to the writer once it holds this much (files).
pub const CHUNK_BYTES: usize = 1 << 20;
/// The same for the merged `-o -` stream: smaller chunks interleave the CPUs more finely, so
/// a live reader sees every CPU early and can sort within a small window.
pub const PIPE_CHUNK_BYTES: usize = 128 << 10;
/// Shortest and longest sleep between passes that found nothing. Relay wakes pollers only at
/// sub-buffer switches, so the timer is what shows a partly filled sub-buffer.
const WAIT_MIN: Duration = Duration::from_millis(1);
const WAIT_MAX: Duration = Duration::from_millis(20);

/// What a drain thread saw, returned when it ends.
#[derive(Clone, Debug, Default)]
pub struct DrainTotals {
    /// The CPU.
    pub cpu: u32,
    /// Records drained.
    pub records: u64,
    /// Events among them.
    pub events: u64,
    /// Record bytes drained (notes the recorder added included).
    pub bytes: u64,
    /// Sum of the sub-buffer `lost` fields seen.
    pub lost_in_headers: u64,
    /// Lost records not yet written as a note (no record followed them yet).
    pub lost_unreported: u64,
    /// Time of the last record seen.
    pub last_time: u64,
    /// Wall time from the first to the last pass that found records.
    pub streaming: Duration,
    /// Bytes of damaged records skipped (a kernel bug; normally 0).
    pub corrupt_bytes: u64,
    /// Why the drain stopped early, if it did.
    pub error: Option<String>,
}

impl DrainTotals {
    /// Encodes into `out` (exactly `rsize::NOTE_LOST` bytes) the `NOTE_LOST` for `count`
    /// records the kernel lost on this CPU between `first_ns` and `last_ns`, stamped at
    /// `time_ns` (pid 0, seq 0), and counts it among the CPU's records and bytes.
    pub fn note_lost(
        &mut self,
        count: u64,
        first_ns: u64,
        last_ns: u64,
        time_ns: u64,
        endian: Endian,
        out: &mut [u8],
    ) {
        encode_into(
            &Stamp {
                cpu: self.cpu,
                pid: 0,
                time_ns,
                seq: 0,
            },
            &Body::Lost(Lost {
                cpu: self.cpu,
                source: lost_source::KERNEL,
                count,
                first_ns,
                last_ns,
            }),
            endian,
            out,
        );
        self.records += 1;
        self.bytes += rsize::NOTE_LOST as u64;
    }
}

/// One CPU's drain: reads its relay buffer and hands whole records to the writer.
pub struct Drain {
    /// The CPU.
    pub cpu: u32,
    /// The CPU's relay buffer, mapped read-only.
    pub buf: RelayMap,
    /// The relay buffer file (polled for new data).
    pub trace: File,
    /// The device's `consumed` file, written as sub-buffers are done with.
    pub consumed: Arc<File>,
    /// Where the drain is in the buffer.
    pub cursor: DrainCursor,
    /// Byte order of the records.
    pub endian: Endian,
    /// To the output's writer thread.
    pub tx: Sender<Chunk>,
    /// Empty buffers back from the writer, so nothing is allocated per record.
    pub pool: Receiver<Vec<u8>>,
    /// Set by the recorder once the device is stopped and flushed: drain to the end and exit.
    pub finish: Arc<AtomicBool>,
    /// Set when the whole recording must end (writer failure): exit without waiting.
    pub abort: Arc<AtomicBool>,
    /// An empty buffer kept for the next pass.
    pub spare: Option<Vec<u8>>,
    /// Ship a chunk once it holds this many bytes.
    pub chunk_bytes: usize,
}

impl Drain {
    /// Drains until `finish` is set and the buffer is empty (or `abort` is set); returns what it saw.
    pub fn run(mut self) -> DrainTotals {
        let mut t = DrainTotals {
            cpu: self.cpu,
            ..Default::default()
        };
        let mut wait = WAIT_MIN;
        let mut poll_useful = true;
        let mut spurious = 0u32;
        let mut first_data: Option<Instant> = None;
        loop {
            let finishing = self.finish.load(Ordering::Acquire);
            if self.abort.load(Ordering::Acquire) {
                break;
            }
            let records_before = t.records;
            match self.pass(&mut t) {
                Ok(true) => {
                    // Streaming time runs from the first to the last pass that found records
                    // (not mere headers, like the stop-time flush).
                    if t.records > records_before {
                        let now = Instant::now();
                        let first = *first_data.get_or_insert(now);
                        t.streaming = now - first;
                    }
                    wait = WAIT_MIN;
                    spurious = 0;
                    continue;
                }
                Ok(false) if finishing => break,
                Ok(false) => {}
                Err(e) => {
                    t.error = Some(e);
                    break;
                }
            }
            // Nothing new. poll() is only a hint: the simulator's regular files are always
            // readable, so a poll that returns at once with nothing to read is not trusted again.
            if poll_useful {
                use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
                let t0 = Instant::now();
                let mut fds = [PollFd::new(self.trace.as_fd(), PollFlags::POLLIN)];
                let ms = wait.as_millis().min(u16::MAX as u128) as u16;
                let _ = poll(&mut fds, PollTimeout::from(ms));
                if t0.elapsed() < wait / 2 {
                    spurious += 1;
                    if spurious >= 3 {
                        poll_useful = false;
                    }
                }
            } else {
                std::thread::sleep(wait);
            }
            wait = (wait * 2).min(WAIT_MAX);
        }
        t
    }

    /// Reads everything available; returns whether anything new was found.
    fn pass(&mut self, t: &mut DrainTotals) -> Result<bool, String> {
        let mut out = self.take_buffer();
        let mut finished = 0u64;
        let mut chunk_records = 0u64;
        let mut progressed = false;
        let half = (self.buf.reader().n_subbufs() as u64 / 2).max(1);
        loop {
            let region = match self.cursor.step(&self.buf.reader()) {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(e) => {
                    self.ship(out, chunk_records);
                    self.release(finished)?;
                    return Err(e.to_string());
                }
            };
            progressed = true;
            if region.lost > 0 {
                t.lost_in_headers += region.lost as u64;
                t.lost_unreported += region.lost as u64;
            }
            if region.len > 0 {
                // Room for the loss note goes before the records it precedes.
                let note_at = out.len();
                if t.lost_unreported > 0 {
                    out.resize(note_at + rsize::NOTE_LOST, 0);
                }
                let start = out.len();
                let (good, records, last_time) =
                    self.copy_walk(region.seq, region.off, region.len, &mut out, t);
                if good < region.len {
                    t.corrupt_bytes += (region.len - good) as u64;
                }
                chunk_records += records;
                let first_time = if good > 0 {
                    self.endian.u64(&out, start + rec_off::TIME_NS)
                } else {
                    t.last_time
                };
                if t.lost_unreported > 0 {
                    let first_ns = t_last_before(t, first_time);
                    t.note_lost(
                        t.lost_unreported,
                        first_ns,
                        first_time,
                        first_time,
                        self.endian,
                        &mut out[note_at..note_at + rsize::NOTE_LOST],
                    );
                    chunk_records += 1;
                    t.lost_unreported = 0;
                }
                if records > 0 {
                    t.last_time = last_time;
                }
            }
            if region.finished {
                finished += 1;
                // Release half the buffer at a time so the kernel can go on writing while
                // this pass continues.
                if finished >= half {
                    self.release(finished)?;
                    finished = 0;
                }
            }
            if out.len() >= self.chunk_bytes {
                self.ship(std::mem::take(&mut out), chunk_records);
                chunk_records = 0;
                out = self.take_buffer();
            }
        }
        self.ship(out, chunk_records);
        self.release(finished)?;
        Ok(progressed)
    }

    /// Copies a region out of the relay buffer in cache-sized pieces and checks the record
    /// framing of each piece while it is still in cache; counts records and events. Returns
    /// the length of the valid prefix, its record count and the time of its last record.
    fn copy_walk(
        &self,
        seq: u64,
        off: usize,
        len: usize,
        out: &mut Vec<u8>,
        t: &mut DrainTotals,
    ) -> (usize, u64, u64) {
        const PIECE: usize = 64 << 10;
        let e = self.endian;
        let start = out.len();
        let (mut copied, mut o, mut records, mut events, mut last) = (0, 0, 0u64, 0u64, None);
        'copy: while copied < len {
            let n = PIECE.min(len - copied);
            self.buf.reader().copy_out(seq, off + copied, n, out);
            copied += n;
            let data = &out[start..start + copied];
            while o + RECORD_HEADER_SIZE <= copied {
                let size = e.u16(data, o + rec_off::SIZE) as usize;
                if size < RECORD_HEADER_SIZE || !size.is_multiple_of(8) {
                    break 'copy;
                }
                if o + size > copied {
                    continue 'copy; // the rest of the record is in the next piece
                }
                records += 1;
                if RecordType(e.u16(data, o + rec_off::TYPE)) == RecordType::EVENT {
                    events += 1;
                }
                last = Some(o);
                o += size;
            }
        }
        // Anything after `o` is damaged (a bad size, or a record cut by `commit`).
        out.truncate(start + o);
        t.records += records;
        t.events += events;
        t.bytes += o as u64;
        let last_time = last.map_or(0, |l| e.u64(&out[start..], l + rec_off::TIME_NS));
        (o, records, last_time)
    }

    fn take_buffer(&mut self) -> Vec<u8> {
        if let Some(b) = self.spare.take() {
            return b;
        }
        match self.pool.try_recv() {
            Ok(mut b) => {
                b.clear();
                b
            }
            // A chunk ships once it reaches chunk_bytes: before its last region it holds less,
            // then come at most a sub-buffer of records and the loss note put before them.
            Err(_) => Vec::with_capacity(
                self.chunk_bytes + self.buf.reader().subbuf_size() + rsize::NOTE_LOST,
            ),
        }
    }

    fn ship(&mut self, out: Vec<u8>, records: u64) {
        if out.is_empty() {
            self.spare = Some(out);
            return;
        }
        // A closed writer means the recording is ending; the data has nowhere to go.
        let _ = self.tx.send(Chunk::Data {
            bytes: out,
            records,
        });
    }

    /// Tells the kernel `n` more sub-buffers of this CPU are free (one write for all).
    fn release(&self, n: u64) -> Result<(), String> {
        if n == 0 {
            return Ok(());
        }
        let line = consumed_line(self.cpu, n);
        (&*self.consumed)
            .write_all(line.as_bytes())
            .map_err(|e| format!("writing `consumed`: {e}"))
    }
}

fn t_last_before(t: &DrainTotals, next: u64) -> u64 {
    if t.last_time == 0 {
        next
    } else {
        t.last_time.min(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use grtrace_format::relay::{CpuCounters, RelayProducer, RelayWriter};
    use grtrace_format::{encoded_size, EventBody, Records};
    use std::sync::atomic::AtomicU64;

    fn temp(name: &str) -> std::path::PathBuf {
        // Tests run in parallel in one process: every call gets its own file.
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        std::env::temp_dir().join(format!("grtrace-drain-{}-{n}-{name}", std::process::id()))
    }

    /// Drains a buffer that a producer filled beforehand; returns the shipped bytes, the
    /// totals and what was written to `consumed`.
    fn drain_prefilled(
        start: u64,
        fill: impl FnOnce(&mut RelayProducer, &CpuCounters),
    ) -> (Vec<u8>, DrainTotals, String) {
        let (sub, n) = (4096usize, 4usize);
        let trace_path = temp("trace");
        let consumed_path = temp("consumed");
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&trace_path)
            .unwrap();
        f.set_len((sub * n) as u64).unwrap();
        // SAFETY: test-owned file of the mapped size.
        let mut wmap = unsafe { memmap2::MmapMut::map_mut(&f).unwrap() };
        let wbuf = RelayWriter::new(&mut wmap, sub, n);
        let (counters, dropped) = (CpuCounters::default(), AtomicU64::new(0));
        let mut p = RelayProducer::new(wbuf, &counters, &dropped);
        fill(&mut p, &counters);
        p.flush();
        // SAFETY: test-owned file, mapped read-only like a relay file.
        let map = unsafe { memmap2::Mmap::map(&f).unwrap() };
        let buf = RelayMap::new(map, sub, n);
        let (tx, rx) = crossbeam_channel::unbounded();
        let (_pool_tx, pool_rx) = crossbeam_channel::unbounded();
        let d = Drain {
            cpu: 0,
            buf,
            trace: File::open(&trace_path).unwrap(),
            consumed: Arc::new(File::create(&consumed_path).unwrap()),
            cursor: DrainCursor::new(start),
            endian: Endian::NATIVE,
            tx,
            pool: pool_rx,
            finish: Arc::new(AtomicBool::new(true)),
            abort: Arc::new(AtomicBool::new(false)),
            spare: None,
            chunk_bytes: CHUNK_BYTES,
        };
        let totals = d.run();
        let mut bytes = Vec::new();
        for c in rx.try_iter() {
            if let Chunk::Data { bytes: b, .. } = c {
                bytes.extend_from_slice(&b);
            }
        }
        drop(wmap);
        let consumed = std::fs::read_to_string(&consumed_path).unwrap();
        let _ = std::fs::remove_file(&trace_path);
        let _ = std::fs::remove_file(&consumed_path);
        (bytes, totals, consumed)
    }

    fn event(p: &mut RelayProducer, seq: u64) -> bool {
        let body = Body::Event(EventBody {
            code: grtrace_format::Event::SUBMIT,
            seqno: seq,
            ..Default::default()
        });
        let st = Stamp {
            cpu: 0,
            pid: 1,
            time_ns: 1000 + seq,
            seq,
        };
        match p.reserve(encoded_size(&body)) {
            Some(slot) => {
                encode_into(&st, &body, Endian::NATIVE, slot);
                p.commit();
                true
            }
            None => false,
        }
    }

    #[test]
    fn drains_whole_records_and_releases_sub_buffers_in_batches() {
        let (bytes, t, consumed) = drain_prefilled(0, |p, _| {
            for s in 1..=100 {
                assert!(event(p, s));
            }
        });
        // 100 × 72 bytes need two sub-buffers of 4 KiB; the flush ends the second.
        assert_eq!((t.records, t.events, t.bytes), (100, 100, 7200));
        assert_eq!(t.error, None);
        assert_eq!(t.last_time, 1100);
        let seqs: Vec<u64> = Records::bare(&bytes, Endian::NATIVE)
            .map(|r| r.unwrap().seq())
            .collect();
        assert_eq!(seqs, (1..=100).collect::<Vec<_>>());
        let released: u64 = consumed
            .lines()
            .map(|l| l.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap())
            .sum();
        assert_eq!(released, 2, "{consumed:?}");
        assert!(consumed.lines().all(|l| l.starts_with("0 ")));
    }

    #[test]
    fn a_loss_becomes_a_note_before_the_next_record() {
        // 56 records fill a 4 KiB sub-buffer; the buffer holds four.
        let (bytes, t, _) = drain_prefilled(1, |p, counters| {
            for s in 1..=224 {
                assert!(event(p, s));
            }
            assert!(!event(p, 225) && !event(p, 225), "full: refused");
            counters.consume(1); // sub-buffer 0 was read (by an earlier recorder pass)
            for s in 225..=230 {
                assert!(event(p, s));
            }
        });
        assert_eq!((t.lost_in_headers, t.lost_unreported), (2, 0));
        let recs: Vec<_> = Records::bare(&bytes, Endian::NATIVE)
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(recs.len(), 3 * 56 + 1 + 6);
        let note = recs[3 * 56];
        assert_eq!((note.seq(), note.pid()), (0, 0));
        match note.body() {
            Body::Lost(l) => {
                assert_eq!((l.count, l.source, l.cpu), (2, 1, 0));
                assert_eq!((l.first_ns, l.last_ns), (1000 + 224, 1000 + 225));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(recs[3 * 56 + 1].seq(), 225);
    }

    #[test]
    fn a_damaged_record_stops_the_sub_buffer_but_keeps_what_came_before() {
        let (bytes, t, _) = drain_prefilled(0, |p, _| {
            for s in 1..=3 {
                assert!(event(p, s));
            }
            // A record header claiming 12 bytes: not a multiple of 8.
            let slot = p.reserve(32).unwrap();
            slot.fill(0);
            slot[2..4].copy_from_slice(&12u16.to_ne_bytes());
            p.commit();
        });
        assert_eq!(t.records, 3);
        assert_eq!(t.corrupt_bytes, 32);
        assert_eq!(bytes.len(), 3 * 72);
        assert!(Records::bare(&bytes, Endian::NATIVE).all(|r| r.is_ok()));
    }
}
