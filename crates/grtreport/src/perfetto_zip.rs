//! The packets of `--perfetto FILE.pftrace`, zlib-compressed in blocks as Perfetto's own
//! service writes them with `compression_type: DEFLATE`: each block is a `Trace` (the
//! packets as they would stand in the file), deflated and carried by one `TracePacket`'s
//! `compressed_packets` field, which trace processor (and so the Perfetto UI) unpacks and
//! reads in place.
//!
//! Job traces repeat themselves (the same fields, names and small time steps in every
//! packet), so a fast level makes them several times smaller. A block is filled with
//! whatever the caller's [`Block`] holds (the export: what to draw, `perfetto_seq`) and is
//! encoded and compressed on a worker thread; blocks are handed out in turn and written
//! back in the same turn, so the file has them in the order they were filled. At most one
//! block per worker is in flight, so memory stays flat however long the capture.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use flate2::write::ZlibEncoder;
use flate2::Compression;

use crate::perfetto_proto::{wire, TRACE_PACKET_TAG};

/// `TracePacket.compressed_packets`.
const COMPRESSED_PACKETS: u32 = 50;
/// Uncompressed bytes of packets in a block (Perfetto's service compresses about as much
/// at a time; trace processor inflates a block into memory at once).
const BLOCK: usize = 1 << 20;
/// zlib level: the fastest; a higher one gains a few percent for twice the time.
const LEVEL: u32 = 1;
/// Most worker threads, whatever the machine.
const MAX_WORKERS: usize = 4;

/// What a block holds before it is encoded: filled on the caller's thread, encoded on a
/// worker's.
pub trait Block: Default + Send + 'static {
    /// Whether it holds enough to be sent out.
    fn full(&self) -> bool;
    /// Whether it holds nothing.
    fn is_empty(&self) -> bool;
    /// Appends the `Trace.packet` encodings (tag, length, packet) of what it holds to
    /// `out` and empties itself (keeping its memory); `index`: the block's place in the
    /// file, from 0.
    fn encode(&mut self, index: u64, out: &mut Vec<u8>);
}

/// Packets already encoded: a block of them is full at [`BLOCK`] bytes.
impl Block for Vec<u8> {
    fn full(&self) -> bool {
        self.len() >= BLOCK
    }
    fn is_empty(&self) -> bool {
        Vec::is_empty(self)
    }
    fn encode(&mut self, _index: u64, out: &mut Vec<u8>) {
        out.append(self);
    }
}

/// A block and its place in the file, on its way to a worker.
type Work<B> = (B, u64);
/// A block compressed and framed, and the block emptied for the next fill.
type Done<B> = (io::Result<Vec<u8>>, B);

/// One compressing thread and its two channels.
struct Worker<B> {
    to: SyncSender<Work<B>>,
    from: Receiver<Done<B>>,
    thread: JoinHandle<()>,
}

/// Takes what blocks hold ([`Compressor::block`]) and writes them to `out` as compressed
/// blocks.
pub struct Compressor<W: Write, B: Block = Vec<u8>> {
    out: W,
    block: B,
    /// Blocks filled so far (the next one's index).
    filled: u64,
    /// Emptied blocks for the next fills (their memory kept).
    spare: Vec<B>,
    /// The encoding of a block on the caller's thread (no workers).
    scratch: Vec<u8>,
    workers: Vec<Worker<B>>,
    /// The worker the next block goes to.
    turn: usize,
    /// Workers holding a block, oldest first (whose result is written next).
    in_flight: VecDeque<usize>,
}

impl<W: Write, B: Block> Compressor<W, B> {
    /// Compresses onto `out` with the spare threads ([`crate::spare_threads`]), and with
    /// one at least on a machine of two or three CPUs: the export runs on a thread of its
    /// own that the joining thread mostly waits for (`perfetto_feed`), so the second CPU
    /// has room for it. On one CPU the blocks are compressed on the caller's thread.
    pub fn new(out: W) -> Compressor<W, B> {
        let least = usize::from(crate::cpus() > 1);
        Compressor::with_workers(out, crate::spare_threads(least, MAX_WORKERS))
    }

    /// Compresses onto `out` with `n` worker threads (0: on the caller's thread). A
    /// worker that cannot be started leaves its blocks to the others, or to the caller.
    pub fn with_workers(out: W, n: usize) -> Compressor<W, B> {
        let mut workers = Vec::with_capacity(n);
        for i in 0..n {
            // Rendezvous in, one result out: a block waits until its worker takes it.
            let (to, rx) = sync_channel::<Work<B>>(0);
            let (tx, from) = sync_channel::<Done<B>>(1);
            let spawned = std::thread::Builder::new()
                .name(format!("perfetto-zip{i}"))
                .spawn(move || {
                    let mut bytes = Vec::with_capacity(BLOCK + 4096);
                    while let Ok((mut block, index)) = rx.recv() {
                        let framed = encode_and_compress(&mut block, index, &mut bytes);
                        if tx.send((framed, block)).is_err() {
                            break;
                        }
                    }
                });
            match spawned {
                Ok(thread) => workers.push(Worker { to, from, thread }),
                Err(_) => break,
            }
        }
        Compressor {
            out,
            block: B::default(),
            filled: 0,
            spare: Vec::new(),
            scratch: Vec::new(),
            workers,
            turn: 0,
            in_flight: VecDeque::new(),
        }
    }

    /// The block being filled; call [`Compressor::filled`] after adding to it.
    pub fn block(&mut self) -> &mut B {
        &mut self.block
    }

    /// Sends the block out if it is full; the oldest compressed blocks are written as
    /// their turn comes.
    pub fn filled(&mut self) -> io::Result<()> {
        if self.block.full() {
            self.send_block()?;
        }
        Ok(())
    }

    /// Compresses what is left, writes every block in order and flushes `out`.
    pub fn finish(&mut self) -> io::Result<()> {
        if !self.block.is_empty() {
            self.send_block()?;
        }
        while !self.in_flight.is_empty() {
            self.write_oldest()?;
        }
        self.out.flush()
    }

    fn send_block(&mut self) -> io::Result<()> {
        let next = self.spare.pop().unwrap_or_default();
        let mut block = std::mem::replace(&mut self.block, next);
        let index = self.filled;
        self.filled += 1;
        if self.workers.is_empty() {
            let framed = encode_and_compress(&mut block, index, &mut self.scratch)?;
            self.spare.push(block);
            return self.out.write_all(&framed);
        }
        if self.in_flight.len() == self.workers.len() {
            // Every worker holds a block: the oldest one's result is due first.
            self.write_oldest()?;
        }
        let turn = self.turn;
        self.turn = (turn + 1) % self.workers.len();
        if self.workers[turn].to.send((block, index)).is_err() {
            return Err(io::Error::other("a perfetto compression thread stopped"));
        }
        self.in_flight.push_back(turn);
        Ok(())
    }

    fn write_oldest(&mut self) -> io::Result<()> {
        let Some(w) = self.in_flight.pop_front() else {
            return Ok(());
        };
        match self.workers[w].from.recv() {
            Ok((framed, block)) => {
                self.spare.push(block);
                self.out.write_all(&framed?)
            }
            Err(_) => Err(io::Error::other("a perfetto compression thread panicked")),
        }
    }
}

impl<W: Write, B: Block> Drop for Compressor<W, B> {
    fn drop(&mut self) {
        // Closing the inputs ends the workers' loops.
        for w in std::mem::take(&mut self.workers) {
            drop(w.to);
            drop(w.from);
            let _ = w.thread.join();
        }
    }
}

/// Encodes `block` (into `bytes`, a reused buffer), deflates it and frames it as a
/// `Trace.packet` with only `compressed_packets`.
fn encode_and_compress<B: Block>(
    block: &mut B,
    index: u64,
    bytes: &mut Vec<u8>,
) -> io::Result<Vec<u8>> {
    bytes.clear();
    block.encode(index, bytes);
    compress(bytes)
}

/// One block, deflated and framed as a `Trace.packet` with only `compressed_packets`.
fn compress(block: &[u8]) -> io::Result<Vec<u8>> {
    let mut z = ZlibEncoder::new(Vec::with_capacity(block.len() / 3), Compression::new(LEVEL));
    z.write_all(block)?;
    let deflated = z.finish()?;
    // The packet's one field's key and length, then the packet's own frame before them:
    // the deflated bytes are copied once.
    let mut field = Vec::with_capacity(12);
    wire::key(&mut field, COMPRESSED_PACKETS, 2);
    wire::varint(&mut field, deflated.len() as u64);
    let mut framed = Vec::with_capacity(field.len() + deflated.len() + 12);
    framed.push(TRACE_PACKET_TAG);
    wire::varint(&mut framed, (field.len() + deflated.len()) as u64);
    framed.extend_from_slice(&field);
    framed.extend_from_slice(&deflated);
    Ok(framed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::read::ZlibDecoder;
    use std::io::Read;

    /// Reads a file of packets back: each top-level packet must be a compressed block,
    /// and the blocks inflated one after the other give `Trace.packet` bytes.
    fn inflate_all(file: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut at = 0;
        let varint = |b: &[u8], at: &mut usize| {
            let (mut v, mut shift) = (0u64, 0);
            loop {
                let byte = b[*at];
                *at += 1;
                v |= u64::from(byte & 0x7f) << shift;
                if byte & 0x80 == 0 {
                    return v;
                }
                shift += 7;
            }
        };
        while at < file.len() {
            assert_eq!(file[at], TRACE_PACKET_TAG);
            at += 1;
            let len = varint(file, &mut at) as usize;
            let packet = &file[at..at + len];
            at += len;
            let mut p = 0;
            assert_eq!(
                varint(packet, &mut p),
                u64::from(COMPRESSED_PACKETS << 3 | 2)
            );
            let n = varint(packet, &mut p) as usize;
            assert_eq!(p + n, packet.len(), "only compressed_packets in the packet");
            ZlibDecoder::new(&packet[p..])
                .read_to_end(&mut out)
                .expect("zlib");
        }
        out
    }

    fn packets(n: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| {
                let mut p = vec![TRACE_PACKET_TAG];
                let body: Vec<u8> = (0..(i % 300)).map(|k| (i * 7 + k) as u8).collect();
                wire::varint(&mut p, body.len() as u64);
                p.extend_from_slice(&body);
                p
            })
            .collect()
    }

    #[test]
    fn blocks_come_back_whole_and_in_order_on_any_number_of_workers() {
        // ~3.3 MB of packets: several blocks, more than the workers at once.
        let input = packets(22_000);
        let want: Vec<u8> = input.concat();
        for workers in [0, 1, 3] {
            let mut file = Vec::new();
            let mut z = Compressor::<_, Vec<u8>>::with_workers(&mut file, workers);
            for p in &input {
                z.block().extend_from_slice(p);
                z.filled().unwrap();
            }
            z.finish().unwrap();
            drop(z);
            assert!(file.len() < want.len(), "{workers} workers: not smaller");
            assert_eq!(inflate_all(&file), want, "{workers} workers");
        }
    }

    #[test]
    fn an_empty_trace_stays_empty() {
        let mut file = Vec::new();
        let mut z = Compressor::<_, Vec<u8>>::with_workers(&mut file, 2);
        z.finish().unwrap();
        drop(z);
        assert!(file.is_empty());
    }

    #[test]
    fn a_write_error_is_returned() {
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::new(io::ErrorKind::StorageFull, "disk full"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut z = Compressor::<_, Vec<u8>>::with_workers(Full, 1);
        let mut failed = None;
        for p in packets(22_000) {
            z.block().extend_from_slice(&p);
            if let Err(e) = z.filled() {
                failed = Some(e);
                break;
            }
        }
        let e = failed.or_else(|| z.finish().err()).expect("an error");
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
    }
}
