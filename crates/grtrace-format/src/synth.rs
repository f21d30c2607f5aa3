//! A deterministic synthetic trace generator: the fixture generator, the benchmark's grtrace
//! side, and a source of realistic streams for tests. It only uses the writer, so traces it
//! makes test the readers independently of any recorder.
//!
//! The workload: a few processes submit jobs to the rings of one device. Each job is
//! `QUEUE ALLOC COMMIT SUBMIT START` on the submitting CPU, then `END IRQ SIGNAL` on the CPU
//! that took the completion interrupt (pid 0), like the blktrace generator's `Q G I D` / `C`.
//! Per CPU, times strictly increase and `seq` counts 1, 2, ... over every kernel record
//! (numbered by the [`Builder`]).
//! The command line is `cargo run -p grtrace-format --example grtgen -- --help`.

use std::io::{self, Write};

use crate::abi::{self, lost_source};
use crate::builder::{Builder, RecordMut};
use crate::encode::StreamWriter;
use crate::endian::Endian;
use crate::record::{Body, ClockSync, EventBody, Lost, RingNote, StreamHeader, StreamInfo};
use crate::vocab::Event;

/// What to generate.
#[derive(Clone, Debug)]
pub struct SynthConfig {
    /// Records to write in total (all CPUs, notes included); the generator stops at the first
    /// job boundary at or past this number.
    pub records: u64,
    /// CPUs to spread the records over (one `<base>.grtrace.<cpu>` file each).
    pub cpus: u32,
    /// Seed of the pseudo-random generator: the same seed gives the same bytes.
    pub seed: u64,
    /// Byte order of the generated streams.
    pub endian: Endian,
    /// `(cpu, first_seq, count)`: leave out these kernel records (their sequence numbers are
    /// used up), as if a file region had been lost.
    pub gap: Option<(u32, u64, u64)>,
    /// Also write every event code and every note type at least once (a `NOTE_MSG`, a
    /// `NOTE_CLOCK_SYNC`, a kernel `NOTE_LOST`, every code 1..=25).
    pub every_type: bool,
    /// `NOTE_LOST` (source kernel) records to place, `(cpu, count)`, after the first job.
    pub kernel_lost: Vec<(u32, u64)>,
    /// Kernel-dropped total written in each stream's `NOTE_STREAM_INFO`.
    pub kernel_dropped: u64,
}

impl Default for SynthConfig {
    fn default() -> Self {
        SynthConfig {
            records: 1000,
            cpus: 2,
            seed: 42,
            endian: Endian::NATIVE,
            gap: None,
            every_type: false,
            kernel_lost: Vec::new(),
            kernel_dropped: 0,
        }
    }
}

/// Start time of every synthetic trace: 1000 s after boot.
pub const T0: u64 = 1_000_000_000_000;
/// The session id written in every header.
pub const SESSION: u64 = 0x5eed_0000_0000_0001;

const PROCS: [(u32, &str); 4] = [
    (4101, "glxgears"),
    (4102, "vkcube"),
    (4103, "Xorg"),
    (215, "kworker/u4:2"),
];
const RINGS: [(u32, u32, &str, u64); 3] = [
    (0, abi::RING_UNIT_SLOTS, "ctrlq", 256),
    (1, abi::RING_UNIT_SLOTS, "cursorq", 16),
    (2, abi::RING_UNIT_BYTES, "gfx", 1 << 20),
];

/// xorshift64*: small, deterministic, good enough for a workload.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// An event step of a job: code and arguments 0 to 3.
type Step = (Event, u64, u64, u32, u32);

struct CpuOut<W: Write> {
    w: StreamWriter<W>,
    last_t: u64,
    written: u64,
}

/// Writes the workload to `<base>.grtrace.<cpu>` files whose headers name `card` and
/// `session` (tests of several devices and of stale files of another session). Returns the
/// paths, by CPU.
pub fn write_files(
    cfg: &SynthConfig,
    base: &std::path::Path,
    card: u32,
    session: u64,
) -> io::Result<Vec<std::path::PathBuf>> {
    let paths: Vec<std::path::PathBuf> = (0..cfg.cpus)
        .map(|c| {
            let mut p = base.as_os_str().to_owned();
            p.push(format!(".grtrace.{c}"));
            p.into()
        })
        .collect();
    for (p, b) in paths.iter().zip(streams_of(cfg, card, session)?) {
        std::fs::write(p, b)?;
    }
    Ok(paths)
}

/// The workload's streams in memory, by CPU, their headers naming `card` and `session`.
pub fn streams_of(cfg: &SynthConfig, card: u32, session: u64) -> io::Result<Vec<Vec<u8>>> {
    let mut outs: Vec<Vec<u8>> = (0..cfg.cpus).map(|_| Vec::new()).collect();
    generate(cfg, outs.iter_mut().collect())?;
    for b in &mut outs {
        let mut h = StreamHeader::parse(b).map_err(io::Error::other)?;
        h.card = card;
        h.session_id = session;
        b[..abi::STREAM_HEADER_SIZE].copy_from_slice(&h.encode());
    }
    Ok(outs)
}

/// Generates one stream per CPU into `outs` (index = CPU). Returns records written per CPU.
pub fn generate<W: Write>(cfg: &SynthConfig, outs: Vec<W>) -> io::Result<Vec<u64>> {
    assert_eq!(outs.len(), cfg.cpus as usize, "one writer per CPU");
    let mut cpus: Vec<CpuOut<W>> = Vec::new();
    for (cpu, out) in outs.into_iter().enumerate() {
        let mut h = StreamHeader::new(cpu as u32, 0, "virtio_gpu");
        h.endian = cfg.endian;
        h.flags = abi::STREAM_SIMULATED;
        h.session_id = SESSION;
        // 2026-01-01T00:00:00Z at T0 - 1 s.
        h.anchor_realtime_ns = 1_767_225_600_000_000_000;
        h.anchor_clock_ns = T0 - 1_000_000_000;
        cpus.push(CpuOut {
            w: StreamWriter::new(out, &h)?,
            last_t: 0,
            written: 0,
        });
    }
    let mut g = Gen {
        cfg,
        cpus,
        b: Builder::new(),
        rng: Rng(cfg.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1),
        seen_pid: Vec::new(),
        total: 0,
    };
    g.run()?;
    let mut counts = Vec::new();
    for c in &mut g.cpus {
        c.w.get_mut().flush()?;
        counts.push(c.written);
    }
    Ok(counts)
}

struct Gen<'c, W: Write> {
    cfg: &'c SynthConfig,
    cpus: Vec<CpuOut<W>>,
    /// Numbers the records; each is written out as soon as it is made.
    b: Builder,
    rng: Rng,
    seen_pid: Vec<u32>,
    total: u64,
}

impl<W: Write> Gen<'_, W> {
    /// The time of a record on `cpu` at `t` or, if that is not later, just after the last
    /// (`after` 1) or at the last (`after` 0).
    fn time(&mut self, cpu: u32, t: u64, after: u64) -> u64 {
        let c = &mut self.cpus[cpu as usize];
        c.last_t = t.max(c.last_t + after);
        self.total += 1;
        c.last_t
    }

    /// Writes the records made since the last call, leaving out the configured gap (whose
    /// sequence numbers are used up all the same).
    fn flush(&mut self) -> io::Result<()> {
        for (st, body) in self.b.drain() {
            if let Some((gc, first, n)) = self.cfg.gap {
                if gc == st.cpu && st.seq != 0 && st.seq >= first && st.seq < first + n {
                    continue;
                }
            }
            let c = &mut self.cpus[st.cpu as usize];
            c.w.write(&st, &body)?;
            c.written += 1;
        }
        Ok(())
    }

    /// Writes one kernel record (sequenced) on `cpu` at time `t` or just after the last one.
    fn put(&mut self, cpu: u32, pid: u32, t: u64, body: Body<'static>) -> io::Result<u64> {
        let t = self.time(cpu, t, 1);
        self.b.on(cpu).pid(pid).record(body).at(t);
        self.flush()?;
        Ok(t)
    }

    /// A user-space note (seq 0, pid 0).
    fn put_note(&mut self, cpu: u32, t: u64, body: Body<'static>) -> io::Result<()> {
        let t = self.time(cpu, t, 0);
        self.b.on(cpu).pid(0).user_note(body).at(t);
        self.flush()
    }

    /// An event on `cpu` (after a PROCESS note the first time `pid` shows up), at `t` or
    /// just after the CPU's last record; `fill` sets its fields. Returns its time.
    fn event(
        &mut self,
        cpu: u32,
        pid: u32,
        t: u64,
        code: Event,
        fill: impl FnOnce(RecordMut<'_>) -> RecordMut<'_>,
    ) -> io::Result<u64> {
        if pid != 0 && !self.seen_pid.contains(&pid) {
            self.seen_pid.push(pid);
            let comm = PROCS
                .iter()
                .find(|p| p.0 == pid)
                .map(|p| p.1)
                .unwrap_or("?");
            self.put(
                cpu,
                pid,
                t,
                Body::Process {
                    comm: comm.as_bytes(),
                },
            )?;
        }
        let t = self.time(cpu, t, 1);
        fill(self.b.on(cpu).pid(pid).event(code).at(t));
        self.flush()?;
        Ok(t)
    }

    /// Events `base` with each step's code and arguments, from time `t`, each followed by
    /// `gap` plus a random `0..jitter` ns. Returns the time after the last.
    fn steps(
        &mut self,
        cpu: u32,
        pid: u32,
        mut t: u64,
        base: &EventBody,
        steps: &[Step],
        (gap, jitter): (u64, u64),
    ) -> io::Result<u64> {
        for &(code, arg0, arg1, arg2, arg3) in steps {
            let at = self.event(cpu, pid, t, code, |r| {
                r.body(*base).args(arg0, arg1, arg2, arg3)
            })?;
            t = at + gap + self.rng.below(jitter);
        }
        Ok(t)
    }

    fn run(&mut self) -> io::Result<()> {
        let ncpu = self.cfg.cpus;
        let mut now = T0;
        for (ring, unit, name, size) in RINGS {
            let b = Body::Ring(RingNote {
                ring,
                engine_class: if ring == 2 { 1 } else { 6 },
                size,
                unit,
                flags: 0,
                name: name.as_bytes(),
            });
            now = self.put(0, 0, now, b)? + 100;
        }
        let mut seqno = [0u64; 3];
        let mut wp = [0u64; 3];
        let mut lost_pending = self.cfg.kernel_lost.clone();
        let mut job = 0u64;
        if self.cfg.every_type {
            now = self.every_type(now)?;
        }
        while self.total < self.cfg.records {
            job += 1;
            now += 2_000 + self.rng.below(20_000);
            let p = PROCS[self.rng.below(PROCS.len() as u64) as usize].0;
            let cpu = if ncpu > 1 && self.rng.below(10) == 0 {
                self.rng.below(ncpu as u64) as u32
            } else {
                p % ncpu
            };
            let ring = if self.rng.below(8) == 0 { 1 } else { 2 };
            let r = ring as usize;
            seqno[r] += 1;
            let units = if ring == 2 {
                256 << self.rng.below(6)
            } else {
                1 + self.rng.below(3)
            };
            let size = RINGS[r].3;
            wp[r] = (wp[r] + units) % size;
            let ctx = 1 + p % 7;
            let fctx = 100 + ring as u64;
            let fill = (units * (1 + self.rng.below(4))).min(size) as u32;
            let base = EventBody {
                code: Event(0),
                flags: abi::eflag::FENCED,
                ctx,
                ring,
                seqno: seqno[r],
                ..EventBody::default()
            };
            let steps: [Step; 5] = [
                (
                    Event::QUEUE,
                    fctx,
                    p as u64,
                    1 + self.rng.below(4) as u32,
                    1,
                ),
                (Event::ALLOC, wp[r], units, fill, 0),
                (Event::COMMIT, wp[r], units, fill, 0),
                (Event::SUBMIT, wp[r], units, fill, 1),
                (Event::START, fctx, p as u64, 0, 0),
            ];
            let mut t = self.steps(cpu, p, now, &base, &steps, (200, 1_500))?;
            let irq_cpu = self.rng.below(ncpu as u64) as u32;
            t += 15_000 + self.rng.below(400_000);
            let end = [
                (Event::END, fctx, p as u64, 0u32, 0u32),
                (Event::IRQ, seqno[r], 0, 1, 0),
                (Event::SIGNAL, fctx, seqno[r], 0, 0),
            ];
            self.steps(irq_cpu, 0, t, &base, &end, (300, 700))?;
            if job == 1 {
                for (lcpu, count) in std::mem::take(&mut lost_pending) {
                    let last = self.cpus[lcpu as usize].last_t;
                    let b = Body::Lost(Lost {
                        cpu: lcpu,
                        source: lost_source::KERNEL,
                        count,
                        first_ns: last,
                        last_ns: last + 1000,
                    });
                    self.put_note(lcpu, last + 1, b)?;
                }
            }
        }
        for cpu in 0..ncpu {
            let c = &self.cpus[cpu as usize];
            let (records, bytes) = (c.written + 1, c.w.bytes() + 64);
            let b = Body::StreamInfo(StreamInfo {
                kernel_dropped: self.cfg.kernel_dropped,
                records,
                bytes,
                flags: abi::INFO_STOPPED_CLEANLY,
            });
            let t = self.cpus[cpu as usize].last_t;
            self.put_note(cpu, t, b)?;
        }
        Ok(())
    }

    /// One of every event code and note type, on CPU 0 (and a clock sync on every CPU).
    fn every_type(&mut self, mut now: u64) -> io::Result<u64> {
        self.seen_pid.push(4103);
        self.put(0, 4103, now, Body::Process { comm: b"Xorg" })?;
        self.put(
            0,
            4103,
            now,
            Body::Msg {
                text: b"grtrace-test: every type follows",
            },
        )?;
        for cpu in 0..self.cfg.cpus {
            let b = Body::ClockSync(ClockSync {
                gpu_clock_id: 1,
                gpu_time: 123_456_789 + cpu as u64,
                gpu_freq_hz: 19_200_000,
            });
            self.put(cpu, 0, now + 50, b)?;
        }
        for code in Event::known() {
            now += 1_000;
            let c = code.0 as u64;
            let flags = match code {
                Event::CTX_SWITCH => abi::eflag::PREEMPT,
                Event::END | Event::TIMEOUT => abi::eflag::ERROR,
                Event::SYNC_ENTER | Event::SYNC_EXIT => abi::eflag::HOST,
                Event::MEM_ALLOC => abi::eflag::KERNEL,
                _ => abi::eflag::FENCED,
            };
            now = self.event(0, 4103, now, code, |r| {
                r.job(9, 2, 1000 + c)
                    .flags(flags)
                    .args(0x10_0000 * c, 4096 * c, c as u32, 2)
            })?;
        }
        // An event code this version does not know: printed by number.
        now = self.event(0, 4103, now + 1_000, Event(42), |r| r.job(9, 2, 2000))?;
        Ok(now + 1_000)
    }
}
