//! The DRM scheduler rows (IMPORT.md §5.1, §5.2), and the naming of a scheduler job by a
//! driver event (amdgpu's `amdgpu_cs_ioctl`, lima's `lima_task_submit`, before 6.17) and the
//! dependency waits of 6.12 (`drm_sched_job_wait_dep`, and amdgpu's pipe sync of the same
//! fields).

use super::*;

impl Mapper {
    /// QUEUE of scheduler job `k` (`a`: its finished fence's context and its client) from
    /// the scheduler's counts: `jobs` queued before it on the entity, so the depth is one
    /// more, and `hw` on the hardware.
    fn sched_queue<S: Sink>(
        &mut self,
        sink: &mut S,
        f: &Ev<'_>,
        k: Key,
        a: (u64, u64),
        (jobs, hw): (u32, u32),
    ) -> io::Result<()> {
        // `jobs` is the event's own field: a hostile count must not wrap the depth to 0.
        let args = (a.0, a.1, jobs.saturating_add(1), hw);
        self.emit(sink, f.at, Event::QUEUE, 0, k, args)
    }

    /// Maps one event of the rows of this file.
    #[inline]
    pub(super) fn map_drm_sched<S: Sink>(&mut self, sink: &mut S, f: &Ev<'_>) -> io::Result<()> {
        let (kind, at) = (f.kind, f.at);
        let (u, s) = (|i: usize| f.u(i), |i: usize| f.s(i));
        match kind {
            Kind::SchedQueue612 => {
                let (entity, fence, id) = (u(0), u(1), u(3));
                let (jobs, hw) = (u(4) as u32, u(5) as u32);
                let name = s(2);
                if self.sched_duplicate(name) {
                    return Ok(());
                }
                let ring = self.ring(sink, at, b"", name, RING_UNIT_BYTES)?;
                let (key, fc) = match self.fence_names.remove(&(ring, id)) {
                    Some((fc, fs)) => {
                        let k = Key {
                            ctx: fc as u32,
                            ring,
                            seqno: fs,
                        };
                        self.fences.insert((fc, fs), k);
                        (k, fc)
                    }
                    None => (
                        Key {
                            ctx: self.entity_ctx(entity),
                            ring,
                            seqno: id,
                        },
                        0,
                    ),
                };
                self.fence_ptr.insert(fence, (key, id, fc));
                self.job_ids.insert((ring, id), key);
                self.sched_queue(sink, f, key, (fc, 0), (jobs, hw))
            }
            Kind::SchedRun612 => {
                let (entity, fence, id) = (u(0), u(1), u(3));
                let name = s(2);
                if self.sched_duplicate(name) {
                    return Ok(());
                }
                let ring = self.ring(sink, at, b"", name, RING_UNIT_BYTES)?;
                let key = match self.job_ids.get(&(ring, id)) {
                    Some(k) => *k,
                    None => {
                        // Queued before the trace began.
                        let k = Key {
                            ctx: self.entity_ctx(entity),
                            ring,
                            seqno: id,
                        };
                        self.fence_ptr.insert(fence, (k, id, 0));
                        self.job_ids.insert((ring, id), k);
                        k
                    }
                };
                // A job a driver event named carries its fence context, as 6.17 jobs do
                // (the report joins waits on that fence to it).
                let fc = self.fence_ptr.get(&fence).map_or(0, |p| p.2);
                self.sync_exit(sink, at, None, Some(key), true)?;
                self.note_run(at.cpu, key);
                self.run(sink, at, key, fc, 0, 0)
            }
            Kind::SchedDone612 => {
                let fence = u(0);
                match self.fence_ptr.remove(&fence) {
                    Some((k, id, fc)) => {
                        self.job_ids.remove(&(k.ring, id));
                        self.sync_exit(sink, at, None, Some(k), false)?;
                        if fc != 0 {
                            self.done_fence((fc, k.seqno), k);
                        }
                        self.done(sink, at, k, (fc, 0), 0, 0)
                    }
                    // A job run before the trace began: its ring and name are unknown.
                    None => Ok(()),
                }
            }
            Kind::SchedWaitDep612 | Kind::AmdgpuPipeSync => {
                // Same fields in both: ring name, job id, awaited fence. The scheduler waits
                // on the host; a pipe sync is the GPU waiting.
                let (id, dctx, dseq) = (u(1), u(2), u(3));
                let name = s(0);
                if kind == Kind::SchedWaitDep612 && self.sched_duplicate(name) {
                    return Ok(());
                }
                let ring = self.ring(sink, at, b"", name, RING_UNIT_BYTES)?;
                let key = self.job_ids.get(&(ring, id)).copied().unwrap_or(Key {
                    ctx: 0,
                    ring,
                    seqno: id,
                });
                if kind == Kind::AmdgpuPipeSync {
                    return self.gpu_wait(sink, at, key, (dctx, dseq));
                }
                self.sync_enter(sink, at, key, (dctx, dseq), true)
            }
            Kind::SchedQueue | Kind::SchedRun => {
                let (fc, fs, client) = (u(2), u(3), u(4));
                let name = s(0);
                if self.sched_duplicate(name) {
                    return Ok(());
                }
                let dev = s(1);
                let ring = self.ring(sink, at, dev, name, RING_UNIT_BYTES)?;
                let key = Key {
                    ctx: fc as u32,
                    ring,
                    seqno: fs,
                };
                if kind == Kind::SchedQueue {
                    let (jobs, hw) = (u(5) as u32, u(6) as u32);
                    self.fences.insert((fc, fs), key);
                    self.sched_queue(sink, f, key, (fc, client), (jobs, hw))
                } else {
                    self.fences.insert((fc, fs), key);
                    self.sync_exit(sink, at, None, Some(key), true)?;
                    self.note_run(at.cpu, key);
                    self.commit(sink, at, key, (fc, client), 0)
                }
            }
            Kind::SchedHwFence => {
                // run_job() returned: the job is on the hardware ring (SUBMIT), and its
                // hardware fence's signal is the completion interrupt (IRQ).
                let (fc, fs, hw) = (u(2), u(3), (u(4), u(5)));
                let name = s(0);
                if self.sched_duplicate(name) {
                    return Ok(());
                }
                let ring = self.ring(sink, at, s(1), name, RING_UNIT_BYTES)?;
                let Some(key) = self.fences.get(&(fc, fs)).copied() else {
                    // Run before the trace began: its run event, and so its job, is not in it.
                    return Ok(());
                };
                if !self.rings[ring as usize].own_submits {
                    // The first on this ring: its run event already handed the job off.
                    self.rings[ring as usize].own_submits = true;
                }
                if hw != (0, 0) {
                    self.hw_fences.insert(hw, key);
                    self.hw_fence_of.insert(key, hw);
                }
                self.submit(sink, at, key, false)
            }
            Kind::SchedTimeout => {
                // The timeout work may take a job that completed meanwhile (still on the
                // pending list until freed): it is named by its fence among the recently
                // done too (seen in the mock scheduler's skip-reset test).
                let f = (u(2), u(3));
                match self.fence_job(f) {
                    Some(k) => {
                        self.emit(sink, at, Event::TIMEOUT, eflag::ERROR, k, (0, 0, ETIME, 0))
                    }
                    None => Ok(()),
                }
            }
            Kind::SchedDone => {
                let f = (u(0), u(1));
                // `error` (the upstream series): 0 or a negative errno; 0 without it.
                let err = (u(2) as i32).unsigned_abs();
                match self.fences.get(&f).copied() {
                    Some(k) => {
                        // Done without its hardware-fence event (lost, or run_job() was
                        // skipped for a cancelled job): handed off now, flagged.
                        self.submit(sink, at, k, true)?;
                        if let Some(hw) = self.hw_fence_of.remove(&k) {
                            self.hw_fences.remove(&hw);
                        }
                        self.done_fence(f, k);
                        self.sync_exit(sink, at, None, Some(k), false)?;
                        self.done(sink, at, k, f, 0, err)
                    }
                    None => Ok(()),
                }
            }
            Kind::SchedAddDep => Ok(()),
            Kind::SchedUnschedulable => {
                let f = (u(0), u(1));
                let dep = (u(2), u(3));
                let key = match self.fences.get(&f) {
                    Some(k) => *k,
                    None => return Ok(()),
                };
                self.sync_enter(sink, at, key, dep, true)
            }
            Kind::AmdgpuCs | Kind::LimaSubmit if f.hd.fields[0].size == 0 => Ok(()),
            Kind::AmdgpuCs | Kind::LimaSubmit => {
                let (id, fc, fs) = (u(0), u(1), u(2));
                let name = s(3);
                let ring = self.ring(sink, at, b"", name, RING_UNIT_BYTES)?;
                self.fence_names.insert((ring, id), (fc, fs));
                Ok(())
            }
            _ => Ok(()),
        }
    }
}
