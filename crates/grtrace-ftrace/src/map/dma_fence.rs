//! The dma_fence rows (IMPORT.md §5.3; the `fence` system before 4.10).

use super::*;

impl Mapper {
    /// Maps one event of the rows of this file: a fence's signal or wait, the only ones the dispatcher
    /// hands over here.
    #[inline]
    pub(super) fn map_dma_fence<S: Sink>(&mut self, sink: &mut S, f: &Ev<'_>) -> io::Result<()> {
        let (kind, at) = (f.kind, f.at);
        debug_assert!(matches!(
            kind,
            Kind::FenceSignaled | Kind::FenceWaitStart | Kind::FenceWaitEnd
        ));
        let u = |i: usize| f.u(i);
        let f = (u(0), u(1));
        if kind == Kind::FenceSignaled && !self.hw_fences.is_empty() {
            if let Some(k) = self.hw_fences.remove(&f) {
                self.hw_fence_of.remove(&k);
                // A job's hardware fence (drm_sched_job_hw_fence): the hardware
                // completed it, the interrupt the scheduler's done event follows.
                self.emit(sink, at, Event::IRQ, 0, k, (f.0, f.1, 0, 0))?;
            }
        }
        let key = self.fence_job(f).unwrap_or(NO_JOB);
        let code = match kind {
            Kind::FenceSignaled => Event::SIGNAL,
            Kind::FenceWaitStart => Event::WAIT,
            _ => Event::WAIT_END,
        };
        if kind == Kind::FenceSignaled
            && key != NO_JOB
            && self
                .rings
                .get(key.ring as usize)
                .is_some_and(|r| r.ends_at_signal)
            && self.is_open(key)
        {
            // An i915 request's fence signals when i915 sees it complete (the
            // breadcrumb interrupt's worker): its END, as in the grtrace series, not
            // the retire that follows whenever the CPU gets to it (IMPORT.md 5.7).
            self.done_fence(f, key);
            self.sync_exit(sink, at, None, Some(key), false)?;
            self.done(sink, at, key, (f.0, 0), 0, 0)?;
        }
        if kind == Kind::FenceSignaled {
            self.sync_exit(sink, at, Some(f), None, false)?;
            if !self.deferred.is_empty() {
                // Signalled before the waiting job reached the GPU: no wait.
                self.deferred.retain(|_, deps| {
                    deps.retain(|d| *d != f);
                    !deps.is_empty()
                });
            }
        }
        self.emit(sink, at, code, 0, key, (f.0, f.1, 0, 0))
    }
}
