//! The xe rows (IMPORT.md §5.8).

use super::*;

/// xe's `enum xe_engine_class` as its queue names spell it.
fn xe_class_name(class: u32) -> &'static str {
    match class {
        0 => "rcs",
        1 => "vcs",
        2 => "vecs",
        3 => "bcs",
        4 => "gsccs",
        5 => "ccs",
        _ => "q",
    }
}

impl Mapper {
    /// The ring of xe exec queue `guc` on device `dev`.
    fn xe_ring<S: Sink>(&mut self, sink: &mut S, at: At, dev: &[u8], guc: u64) -> io::Result<u32> {
        let dh = hash_bytes(dev);
        let class = self.xe_class.get(&(dh, guc)).copied();
        self.drv_ring(sink, at, (2, dh, guc), || {
            let n = match class {
                Some(c) => format!("{}-q{guc}", xe_class_name(c)),
                None => format!("q{guc}"),
            };
            // One exec queue per ring, and COMMIT and SUBMIT at one instant: no flags.
            (dev.to_vec(), n.into_bytes(), 0)
        })
    }

    /// Maps one event of the rows of this file.
    #[inline]
    pub(super) fn map_xe<S: Sink>(&mut self, sink: &mut S, f: &Ev<'_>) -> io::Result<()> {
        let (kind, at) = (f.kind, f.at);
        let (u, s) = (|i: usize| f.u(i), |i: usize| f.s(i));
        match kind {
            Kind::XeQueueCreate | Kind::XeQueueDestroy | Kind::XeQueueReset => {
                let dev = s(0);
                let (class, guc) = (u(1) as u32, u(2));
                if kind == Kind::XeQueueCreate {
                    // A new queue (GuC ids are reused): its ring is named with its class.
                    let dh = hash_bytes(dev);
                    self.xe_class.insert((dh, guc), class);
                    self.drv_rings.remove(&(2, dh, guc));
                }
                let ring = self.xe_ring(sink, at, dev, guc)?;
                let k = Key {
                    ctx: guc as u32,
                    ring,
                    seqno: 0,
                };
                let code = match kind {
                    Kind::XeQueueCreate => Event::CTX_CREATE,
                    Kind::XeQueueDestroy => Event::CTX_DESTROY,
                    _ => Event::RESET,
                };
                self.emit(sink, at, code, 0, k, (0, 0, 0, 0))
            }
            Kind::XeFenceCreate => {
                self.xe_fence.insert(u(3), (u(1), u(2)));
                Ok(())
            }
            Kind::XeJobExec | Kind::XeJobRun | Kind::XeJobTimedout => {
                let dev = s(0);
                let (seqno, guc, fence) = (u(1), u(2), u(3));
                let ring = self.xe_ring(sink, at, dev, guc)?;
                let key = match self.xe_jobs.get(&fence) {
                    Some(k) => *k,
                    None => {
                        let hw = self.xe_fence.get(&fence).copied();
                        let k = Key {
                            ctx: hw.map_or(guc, |f| f.0) as u32,
                            ring,
                            seqno,
                        };
                        if let Some(f) = hw {
                            self.fences.insert((f.0 & 0xffff_ffff, f.1), k);
                        }
                        self.xe_jobs.insert(fence, k);
                        k
                    }
                };
                let fc = self.xe_fence.get(&fence).map_or(0, |f| f.0);
                match kind {
                    Kind::XeJobExec => self.emit(sink, at, Event::QUEUE, 0, key, (fc, 0, 0, 0)),
                    Kind::XeJobRun if !self.is_open(key) => self.run(sink, at, key, fc, 0, 0),
                    Kind::XeJobTimedout => self.emit(
                        sink,
                        at,
                        Event::TIMEOUT,
                        eflag::ERROR,
                        key,
                        (0, 0, ETIME, 0),
                    ),
                    _ => Ok(()),
                }
            }
            Kind::XeFenceSignal => {
                let (fc, fs, fence) = (u(1), u(2), u(3));
                self.xe_fence.remove(&fence);
                match self.xe_jobs.remove(&fence) {
                    Some(k) => {
                        self.done_fence((fc & 0xffff_ffff, fs), k);
                        self.sync_exit(sink, at, None, Some(k), false)?;
                        self.done(sink, at, k, (fc, 0), 0, 0)
                    }
                    None => Ok(()),
                }
            }
            Kind::XeVmaPagefault => {
                let (asid, start) = (u(1) as u32, u(2));
                self.vm_fault(sink, f, start, 0, asid)
            }
            _ => Ok(()),
        }
    }
}
