//! A deterministic GPU workload written as kernel tracepoints into a trace.dat (through
//! [`DatWriter`]), for tests and the benchmark: every job's events follow from its index,
//! so each CPU's events are generated in time order without holding the trace in memory.

use std::io::{self, Seek, Write};

use crate::datwriter::{DatWriter, Record};
use crate::format::EventFormat;

/// Which kernel's tracepoints the workload uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// virtio_gpu_cmd_queue / _response on the control queue, dma_fence_signaled for
    /// fenced commands (6.12).
    Virtio,
    /// drm_sched 6.12 names (drm_sched_job, drm_run_job, drm_sched_process_job,
    /// drm_sched_job_wait_dep) plus dma_fence_signaled.
    Sched612,
    /// drm_sched 6.17+ names (drm_sched_job_queue/_run/_done, _unschedulable) plus
    /// dma_fence_signaled, on two devices with the same ring names.
    Sched617,
}

/// The workload.
#[derive(Clone, Copy, Debug)]
pub struct Workload {
    /// Which driver's tracepoints the capture has.
    pub flavor: Flavor,
    /// Jobs to make.
    pub jobs: u64,
    /// CPUs the jobs are spread over.
    pub cpus: u32,
}

/// Job timing: one job every `PERIOD` ns; hand-off 2 us after queueing; done 15 us after
/// hand-off, so about two jobs are in flight on a ring and starts must be inferred.
pub const PERIOD: u64 = 10_000;
const T0: u64 = 1_000_000_000;

/// One tracepoint event of job `i`.
struct Ev {
    t: u64,
    cpu: u32,
    what: u8,
}

impl Workload {
    /// Kernel version of the formats this workload needs.
    pub fn kernel(&self) -> &'static str {
        match self.flavor {
            Flavor::Sched617 => "6.17",
            _ => "6.12",
        }
    }

    /// Events of job `i` (in time order).
    fn events(&self, i: u64, out: &mut Vec<Ev>) {
        out.clear();
        let t = T0 + i * PERIOD;
        let c = (i % self.cpus as u64) as u32;
        let d = ((i + 1) % self.cpus as u64) as u32;
        match self.flavor {
            Flavor::Virtio => {
                out.push(Ev { t, cpu: c, what: 0 });
                out.push(Ev {
                    t: t + 17_000,
                    cpu: d,
                    what: 1,
                });
                if i.is_multiple_of(4) {
                    out.push(Ev {
                        t: t + 17_500,
                        cpu: d,
                        what: 2,
                    });
                }
            }
            Flavor::Sched612 | Flavor::Sched617 => {
                out.push(Ev { t, cpu: c, what: 0 });
                if i % 8 == 1 {
                    out.push(Ev {
                        t: t + 500,
                        cpu: c,
                        what: 3,
                    });
                }
                out.push(Ev {
                    t: t + 2_000,
                    cpu: c,
                    what: 1,
                });
                out.push(Ev {
                    t: t + 17_000,
                    cpu: d,
                    what: 2,
                });
                out.push(Ev {
                    t: t + 17_200,
                    cpu: d,
                    what: 4,
                });
            }
        }
    }

    /// Number of tracepoint events the workload has.
    pub fn event_count(&self) -> u64 {
        let mut v = Vec::new();
        // Periodic in 8 jobs.
        let per8: u64 = (0..8)
            .map(|i| {
                self.events(i, &mut v);
                v.len() as u64
            })
            .sum();
        let full = self.jobs / 8 * per8;
        let rest: u64 = (self.jobs / 8 * 8..self.jobs)
            .map(|i| {
                self.events(i, &mut v);
                v.len() as u64
            })
            .sum();
        full + rest
    }

    fn fmt<'f>(formats: &'f [EventFormat], name: &str) -> &'f EventFormat {
        formats
            .iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("no format {name}"))
    }

    /// The ring / device of job `i` (two rings; Sched617 also two devices).
    fn ring(&self, i: u64) -> (&'static str, &'static str) {
        let ring = if i.is_multiple_of(2) {
            "gfx_0.0.0"
        } else {
            "comp_1.0.0"
        };
        let dev = if self.flavor == Flavor::Sched617 && i % 4 >= 2 {
            "0000:03:00.0"
        } else {
            "0000:01:00.0"
        };
        (dev, ring)
    }

    /// Fence context and seqno of job `i` (per ring and device).
    fn fence(&self, i: u64) -> (u64, u64) {
        let lane = if self.flavor == Flavor::Sched617 {
            i % 4
        } else {
            i % 2
        };
        let lanes = if self.flavor == Flavor::Sched617 {
            4
        } else {
            2
        };
        (100 + lane, i / lanes + 1)
    }

    fn record(&self, formats: &[EventFormat], i: u64, what: u8, buf: &mut Vec<u8>) {
        let pid = 1000 + (i % 3) as u32;
        let (dev, ring) = self.ring(i);
        let (fc, fs) = self.fence(i);
        let r = match (self.flavor, what) {
            (Flavor::Virtio, 0 | 1) => {
                let name = ["virtio_gpu_cmd_queue", "virtio_gpu_cmd_response"][what as usize];
                let mut r = Record::new(Self::fmt(formats, name), if what == 0 { pid } else { 0 });
                r.set("dev", 0).set("vq", 0).set_str("name", "control");
                r.set("type", if what == 0 { 0x0207 } else { 0x1100 });
                r.set("flags", if i.is_multiple_of(4) { 1 } else { 0 });
                r.set("fence_id", if i.is_multiple_of(4) { i / 4 + 1 } else { 0 });
                r.set("ctx_id", 1 + i % 3)
                    .set("num_free", 200)
                    .set("seqno", i + 1);
                r
            }
            (Flavor::Virtio, _) => {
                let mut r = Record::new(Self::fmt(formats, "dma_fence_signaled"), 0);
                r.set_str("driver", "virtio_gpu")
                    .set_str("timeline", "controlq");
                r.set("context", 7).set("seqno", i / 4 + 1);
                r
            }
            (Flavor::Sched612, 0 | 1) => {
                let name = ["drm_sched_job", "drm_run_job"][what as usize];
                let mut r = Record::new(Self::fmt(formats, name), pid);
                r.set("entity", 0xffff_8880_0000_1000 + (i % 3) * 0x100);
                r.set("fence", 0xffff_8880_1000_0000 + (i % 64) * 0x40);
                r.set_str("name", ring)
                    .set("id", i + 1)
                    .set("job_count", 0)
                    .set("hw_job_count", 1);
                r
            }
            (Flavor::Sched612, 2) => {
                let mut r = Record::new(Self::fmt(formats, "drm_sched_process_job"), 0);
                r.set("fence", 0xffff_8880_1000_0000 + (i % 64) * 0x40);
                r
            }
            (Flavor::Sched612, 3) => {
                let mut r = Record::new(Self::fmt(formats, "drm_sched_job_wait_dep"), pid);
                let (dc, ds) = self.fence(i - 1);
                r.set_str("name", ring)
                    .set("id", i + 1)
                    .set("fence", 0xffff_8880_2000_0000);
                r.set("ctx", dc).set("seqno", ds);
                r
            }
            (Flavor::Sched617, 0 | 1) => {
                let name = ["drm_sched_job_queue", "drm_sched_job_run"][what as usize];
                let mut r = Record::new(Self::fmt(formats, name), pid);
                r.set_str("name", ring)
                    .set_str("dev", dev)
                    .set("job_count", 0)
                    .set("hw_job_count", 1);
                r.set("fence_context", fc)
                    .set("fence_seqno", fs)
                    .set("client_id", 1 + i % 3);
                r
            }
            (Flavor::Sched617, 2) => {
                let mut r = Record::new(Self::fmt(formats, "drm_sched_job_done"), 0);
                r.set("fence_context", fc).set("fence_seqno", fs);
                r
            }
            (Flavor::Sched617, 3) => {
                let mut r = Record::new(Self::fmt(formats, "drm_sched_job_unschedulable"), pid);
                let (dc, ds) = self.fence(i - 1);
                r.set("fence_context", fc)
                    .set("fence_seqno", fs)
                    .set("ctx", dc)
                    .set("seqno", ds);
                r
            }
            (_, _) => {
                // dma_fence_signaled of the job's finished fence (6.12 jobs: its context
                // and seqno are not in the scheduler events, so nothing joins it).
                let mut r = Record::new(Self::fmt(formats, "dma_fence_signaled"), 0);
                r.set_str("driver", "drm_sched").set_str("timeline", ring);
                r.set("context", fc).set("seqno", fs);
                r
            }
        };
        buf.clear();
        buf.extend_from_slice(r.bytes());
    }

    /// Writes every CPU's events. The writer must have been made with this workload's
    /// formats (see [`crate::datwriter::fixture_formats`]).
    pub fn write<W: Write + Seek>(
        &self,
        w: &mut DatWriter<W>,
        formats: &[EventFormat],
    ) -> io::Result<()> {
        let mut evs = Vec::new();
        let mut buf = Vec::new();
        for cpu in 0..self.cpus {
            w.begin_cpu(cpu)?;
            // Events of job i happen within [t_i, t_i + 17.5 us]; jobs are PERIOD apart, so a
            // small window of jobs keeps each CPU's events in time order.
            let span = 2 + 17_500 / PERIOD;
            let mut pending: Vec<(u64, u64, u8)> = Vec::new();
            for i in 0..self.jobs + span {
                if i < self.jobs {
                    self.events(i, &mut evs);
                    for e in &evs {
                        if e.cpu == cpu {
                            pending.push((e.t, i, e.what));
                        }
                    }
                }
                let horizon = T0 + i.saturating_sub(span) * PERIOD;
                pending.sort_unstable();
                let n = pending
                    .iter()
                    .take_while(|p| p.0 < horizon || i >= self.jobs)
                    .count();
                for (t, j, what) in pending.drain(..n) {
                    self.record(formats, j, what, &mut buf);
                    w.push(t, &buf)?;
                }
            }
            for (t, j, what) in pending.drain(..) {
                self.record(formats, j, what, &mut buf);
                w.push(t, &buf)?;
            }
            w.end_cpu()?;
        }
        Ok(())
    }
}
