//! The msm rows (IMPORT.md §5.9): the GPU's own start and end through the flush tick pairs.

use super::*;

/// The Adreno always-on counter runs at 19.2 MHz: ns = ticks * 10000 / 192.
const MSM_ALWAYS_ON_HZ: u64 = 19_200_000;

/// CPU time of GPU always-on `ticks`, from a (CPU time, ticks) pair of the same counter.
fn msm_tick_time(sync: (u64, u64), ticks: u64) -> u64 {
    let d = ticks as i128 - sync.1 as i128;
    let ns = d * 1_000_000_000 / MSM_ALWAYS_ON_HZ as i128;
    (sync.0 as i128 + ns).clamp(0, u64::MAX as i128) as u64
}

impl Mapper {
    /// Maps one event of the rows of this file: a flush or a retire, the only ones the dispatcher
    /// hands over here.
    #[inline]
    pub(super) fn map_msm<S: Sink>(&mut self, sink: &mut S, f: &Ev<'_>) -> io::Result<()> {
        let (kind, at) = (f.kind, f.at);
        let t = at.t;
        debug_assert!(matches!(kind, Kind::MsmFlush | Kind::MsmRetired));
        let u = |i: usize| f.u(i);
        let (spid, ringid, seqno) = (u(0), u(1), u(2));
        // Retired: the hardware's own times through the ring's last flush; without
        // one, the retire event is the end and `elapsed` gives the start (inferred).
        let (t0, t1, observed) = match (kind, self.msm_sync.get(&ringid)) {
            (Kind::MsmFlush, _) => (t, t, true),
            (_, Some(&sync)) => (msm_tick_time(sync, u(3)), msm_tick_time(sync, u(4)), true),
            (_, None) => (t.saturating_sub(u(5)), t, false),
        };
        // A new ring is announced no later than the first time it is used.
        let ring = self.drv_ring(sink, At { t: t0.min(t), ..at }, (3, ringid, 0), || {
            (b"msm".to_vec(), format!("rb{ringid}").into_bytes(), 0)
        })?;
        let k = Key {
            ctx: spid as u32,
            ring,
            seqno,
        };
        if kind == Kind::MsmFlush {
            let ticks = u(3);
            self.msm_sync.insert(ringid, (t, ticks));
            self.record(
                sink,
                At { pid: 0, ..at },
                &Body::ClockSync(ClockSync {
                    gpu_clock_id: 1,
                    gpu_time: ticks,
                    gpu_freq_hz: MSM_ALWAYS_ON_HZ,
                }),
            )?;
            self.emit(sink, at, Event::COMMIT, 0, k, (0, 0, 0, 0))?;
            self.emit(sink, at, Event::SUBMIT, 0, k, (0, 0, 0, 1))?;
            self.stats.jobs_started += 1;
            return Ok(());
        }
        // A time before what this CPU's stream already holds is moved up to it
        // (streams stay in time order) and then no longer observed.
        let last = self.cpu_last.get(at.cpu as usize).copied().unwrap_or(0);
        let sf = if observed && t0 >= last {
            0
        } else {
            self.stats.inferred_starts += 1;
            eflag::INFERRED
        };
        let ef = if observed && t1 >= last {
            0
        } else {
            eflag::INFERRED
        };
        // The GPU's own start is no task's; its end is seen by the retiring task.
        let gpu = At { pid: 0, ..at };
        self.emit(sink, At { t: t0, ..gpu }, Event::START, sf, k, (0, 0, 0, 0))?;
        self.emit(sink, At { t: t1, ..at }, Event::END, ef, k, (0, 0, 0, 0))?;
        self.rings[ring as usize].last_done = t1;
        Ok(())
    }
}
