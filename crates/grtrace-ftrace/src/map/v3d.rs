//! The v3d rows (IMPORT.md §5.10).

use super::*;

/// v3d queue names by queue number (bin, render, tfu, csd).
const V3D_QUEUES: [&str; 4] = ["bin", "render", "tfu", "csd"];

impl Mapper {
    /// Maps one event of the rows of this file.
    #[inline]
    pub(super) fn map_v3d<S: Sink>(&mut self, sink: &mut S, f: &Ev<'_>) -> io::Result<()> {
        let (kind, at) = (f.kind, f.at);
        let u = |i: usize| f.u(i);
        match kind {
            Kind::V3dSubmitCl | Kind::V3dSubmit(_) | Kind::V3dIrq(_) => {
                let (dev, seqno) = (u(0), u(1));
                let q = match kind {
                    Kind::V3dSubmitCl => u64::from(u(2) != 0),
                    Kind::V3dSubmit(q) | Kind::V3dIrq(q) => q as u64,
                    _ => 0,
                };
                let ring = self.drv_ring(sink, at, (4, dev, q), || {
                    (
                        card_name(dev),
                        V3D_QUEUES[q as usize % 4].as_bytes().to_vec(),
                        0,
                    )
                })?;
                let k = Key {
                    ctx: 0,
                    ring,
                    seqno,
                };
                if matches!(kind, Kind::V3dIrq(_)) {
                    self.done(sink, at, k, (0, 0), 0, 0)
                } else {
                    self.run(sink, at, k, 0, 0, 0)
                }
            }
            Kind::V3dReset => {
                // A device reset: every queue of that device (the jobs running on them
                // failed), or no ring while none is known yet.
                let dev = u(0);
                let mut rings: Vec<u32> = (self.drv_rings.iter())
                    .filter(|((tag, d, _), _)| *tag == 4 && *d == dev)
                    .map(|(_, r)| *r)
                    .collect();
                rings.sort_unstable();
                if rings.is_empty() {
                    return self.emit(sink, at, Event::RESET, 0, NO_JOB, (0, 0, 0, 2));
                }
                for ring in rings {
                    let k = Key {
                        ctx: 0,
                        ring,
                        seqno: 0,
                    };
                    self.emit(sink, at, Event::RESET, 0, k, (0, 0, 0, 2))?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}
