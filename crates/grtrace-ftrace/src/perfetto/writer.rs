//! A Perfetto trace writer for the benchmark (and tests): kernel event records in, the
//! `FtraceEventBundle`s `traced_probes` would write out (typed protos for the events of
//! [`schema::TYPED`], `GenericFtraceEvent` for the others), optionally in zlib
//! `compressed_packets`. Tests check its output with Perfetto's own Python schema; the
//! importer's tests write their inputs with that schema, not with this.

use std::io::{self, Write};

use grtrace_format::Endian;

use super::schema::{self, bundle, event, generic, packet};
use super::wire::enc;
use crate::format::{read_str, read_uint, EventFormat};
use crate::tracedat::{DatError, Next, TraceDat};

/// Events per bundle (about one kernel page of GPU events).
const BUNDLE_EVENTS: usize = 64;
/// Inflated bytes per compressed packet.
const COMPRESS_AT: usize = 256 << 10;
/// The packet sequence of the ftrace data source.
const SEQ: u64 = 1;

/// Writes one Perfetto trace.
pub struct Writer<W: Write> {
    out: W,
    compress: bool,
    /// Per CPU: events of its open bundle, their count, and whether a loss comes before.
    open: Vec<(Vec<u8>, usize, bool)>,
    /// Packets waiting to be compressed.
    pending: Vec<u8>,
    ev: Vec<u8>,
    msg: Vec<u8>,
    pkt: Vec<u8>,
}

impl<W: Write> Writer<W> {
    /// A writer; `compress`: zlib `compressed_packets` as `perfetto --compress` writes.
    pub fn new(out: W, compress: bool) -> Writer<W> {
        Writer {
            out,
            compress,
            open: Vec::new(),
            pending: Vec::new(),
            ev: Vec::new(),
            msg: Vec::new(),
            pkt: Vec::new(),
        }
    }

    fn packet(&mut self, body: &[u8]) -> io::Result<()> {
        let mut p = std::mem::take(&mut self.pkt);
        p.clear();
        enc::bytes(&mut p, schema::TRACE_PACKET, body);
        let r = if self.compress {
            self.pending.extend_from_slice(&p);
            if self.pending.len() >= COMPRESS_AT {
                self.flush_compressed()
            } else {
                Ok(())
            }
        } else {
            self.out.write_all(&p)
        };
        self.pkt = p;
        r
    }

    fn flush_compressed(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&self.pending)?;
        let z = z.finish()?;
        self.pending.clear();
        let mut body = Vec::with_capacity(z.len() + 8);
        enc::bytes(&mut body, packet::COMPRESSED_PACKETS, &z);
        let mut p = Vec::with_capacity(body.len() + 8);
        enc::bytes(&mut p, schema::TRACE_PACKET, &body);
        self.out.write_all(&p)
    }

    /// A `ClockSnapshot` of BOOTTIME `boot` and MONOTONIC `mono` at the same instant.
    pub fn clock_snapshot(&mut self, boot: u64, mono: u64) -> io::Result<()> {
        let mut snap = Vec::new();
        for (id, ts) in [
            (schema::clock::BOOTTIME, boot),
            (schema::clock::MONOTONIC, mono),
        ] {
            let mut c = Vec::new();
            enc::uint(&mut c, schema::clock::CLOCK_ID, id);
            enc::uint(&mut c, schema::clock::TIMESTAMP, ts);
            enc::bytes(&mut snap, schema::clock::CLOCKS, &c);
        }
        let mut body = Vec::new();
        enc::bytes(&mut body, packet::CLOCK_SNAPSHOT, &snap);
        self.packet(&body)
    }

    /// Kernel event `rec` of format `f` at `ts` on `cpu` by `pid`.
    pub fn event(
        &mut self,
        cpu: u32,
        ts: u64,
        pid: u32,
        f: &EventFormat,
        rec: &[u8],
    ) -> io::Result<()> {
        let e = Endian::NATIVE;
        self.msg.clear();
        let field = match schema::TYPED.iter().find(|t| t.event == f.name) {
            Some(t) => {
                for (num, name) in t.fields {
                    let Some(x) = f.field(name) else { continue };
                    if x.data_loc || x.rel_loc || name == &"name" && x.size > 8 {
                        enc::bytes(&mut self.msg, *num, read_str(e, rec, x.loc()));
                    } else {
                        let v = read_uint(e, rec, x.offset, x.size.min(8));
                        let v = sign_extend(v, x.size, x.signed);
                        enc::uint(&mut self.msg, *num, v);
                    }
                }
                t.field
            }
            None => {
                enc::bytes(&mut self.msg, generic::EVENT_NAME, f.name.as_bytes());
                let mut fd = Vec::new();
                for x in f.fields.iter().filter(|x| !x.name.starts_with("common_")) {
                    fd.clear();
                    enc::bytes(&mut fd, generic::FIELD_NAME, x.name.as_bytes());
                    if x.data_loc || x.rel_loc || x.size > 8 {
                        enc::bytes(&mut fd, generic::STR_VALUE, read_str(e, rec, x.loc()));
                    } else {
                        let v = read_uint(e, rec, x.offset, x.size.min(8));
                        if x.signed {
                            enc::uint(&mut fd, generic::INT_VALUE, sign_extend(v, x.size, true));
                        } else {
                            enc::uint(&mut fd, generic::UINT_VALUE, v);
                        }
                    }
                    enc::bytes(&mut self.msg, generic::FIELD, &fd);
                }
                event::GENERIC
            }
        };
        self.ev.clear();
        enc::uint(&mut self.ev, event::TIMESTAMP, ts);
        enc::uint(&mut self.ev, event::PID, u64::from(pid));
        enc::bytes(&mut self.ev, field, &self.msg);
        let c = cpu as usize;
        if self.open.len() <= c {
            self.open.resize_with(c + 1, || (Vec::new(), 0, false));
        }
        enc::bytes(&mut self.open[c].0, bundle::EVENT, &self.ev);
        self.open[c].1 += 1;
        if self.open[c].1 >= BUNDLE_EVENTS {
            self.flush_cpu(cpu)?;
        }
        Ok(())
    }

    /// Writes `cpu`'s open bundle.
    pub fn flush_cpu(&mut self, cpu: u32) -> io::Result<()> {
        let Some((events, n, lost)) = self.open.get_mut(cpu as usize) else {
            return Ok(());
        };
        if *n == 0 {
            return Ok(());
        }
        let mut b = Vec::with_capacity(events.len() + 8);
        enc::uint(&mut b, bundle::CPU, u64::from(cpu));
        if *lost {
            enc::uint(&mut b, bundle::LOST_EVENTS, 1);
        }
        b.extend_from_slice(events);
        events.clear();
        *n = 0;
        *lost = false;
        let mut body = Vec::with_capacity(b.len() + 16);
        enc::uint(&mut body, packet::TRUSTED_PACKET_SEQUENCE_ID, SEQ);
        enc::bytes(&mut body, packet::FTRACE_EVENTS, &b);
        self.packet(&body)
    }

    /// Events were lost on `cpu` before its next event: its next bundle says so.
    pub fn lost(&mut self, cpu: u32) -> io::Result<()> {
        self.flush_cpu(cpu)?;
        let c = cpu as usize;
        if self.open.len() <= c {
            self.open.resize_with(c + 1, || (Vec::new(), 0, false));
        }
        self.open[c].2 = true;
        Ok(())
    }

    /// A `process_tree` packet naming threads.
    pub fn threads(&mut self, names: &[(u32, String)]) -> io::Result<()> {
        let mut tree = Vec::new();
        for (tid, name) in names {
            let mut t = Vec::new();
            enc::uint(&mut t, 1, u64::from(*tid));
            enc::bytes(&mut t, 2, name.as_bytes());
            enc::bytes(&mut tree, 2, &t);
        }
        let mut body = Vec::new();
        enc::bytes(&mut body, 2, &tree);
        self.packet(&body)
    }

    /// Writes every open bundle and the compressed rest; returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        for cpu in 0..self.open.len() as u32 {
            self.flush_cpu(cpu)?;
        }
        self.flush_compressed()?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// `v` of a `size`-byte field as the 64-bit value a proto int field carries.
fn sign_extend(v: u64, size: usize, signed: bool) -> u64 {
    if !signed || size >= 8 || size == 0 {
        return v;
    }
    let shift = 64 - 8 * size as u32;
    (((v << shift) as i64) >> shift) as u64
}

/// Writes the events of `dat` into `w` as `traced_probes` would: the CPUs read in time
/// order (as it reads them period by period), each into its own bundles, so bundles of the
/// CPUs interleave in the file by time; the saved command lines as thread names. Returns
/// the number of events.
pub fn from_dat<W: Write>(dat: &TraceDat<'_>, w: &mut Writer<W>) -> Result<u64, DatError> {
    let io = |e: io::Error| DatError {
        offset: 0,
        msg: format!("writing: {e}"),
    };
    let names: Vec<(u32, String)> = dat.cmdlines.iter().map(|(p, c)| (*p, c.clone())).collect();
    w.threads(&names).map_err(io)?;
    let mut by_id: Vec<Option<&EventFormat>> = Vec::new();
    for f in &dat.formats {
        let i = f.id as usize;
        if by_id.len() <= i {
            by_id.resize(i + 1, None);
        }
        by_id[i] = Some(f);
    }
    let mut streams = dat.streams();
    let mut heads = Vec::with_capacity(streams.len());
    for s in streams.iter_mut() {
        heads.push(s.next()?);
    }
    let key = |h: &Next| match *h {
        Next::Event(t) | Next::Lost(_, t) => Some(t),
        Next::End => None,
    };
    let mut n = 0u64;
    let e = dat.endian;
    // The CPU with the earliest next event goes next.
    while let Some((i, _)) = heads
        .iter()
        .enumerate()
        .filter_map(|(i, h)| key(h).map(|t| (i, t)))
        .min_by_key(|x| x.1)
    {
        let s = &mut streams[i];
        match heads[i] {
            Next::Event(t) => {
                let rec = s.event();
                let id = read_uint(e, rec, 0, 2) as usize;
                let pid = read_uint(e, rec, 4, 4) as u32;
                if let Some(Some(f)) = by_id.get(id) {
                    w.event(s.cpu, t, pid, f, rec).map_err(io)?;
                    n += 1;
                }
            }
            Next::Lost(..) => w.lost(s.cpu).map_err(io)?,
            Next::End => {}
        }
        heads[i] = s.next()?;
    }
    Ok(n)
}
