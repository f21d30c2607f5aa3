//! The virtio_gpu rows (IMPORT.md §5.4).

use super::*;

const VIRTIO_GPU_FLAG_FENCE: u64 = 1;
const VIRTIO_GPU_RESP_ERR_UNSPEC: u64 = 0x1200;

impl Mapper {
    /// Maps one event of the rows of this file.
    #[inline]
    pub(super) fn map_virtio_gpu<S: Sink>(&mut self, sink: &mut S, f: &Ev<'_>) -> io::Result<()> {
        let Ev {
            kind, cpu, pid, t, ..
        } = *f;
        let (u, s) = (|i: usize| f.u(i), |i: usize| f.s(i));
        match kind {
            Kind::VirtioQueue | Kind::VirtioResponse => {
                let (dev, vq) = (u(0), u(1));
                if vq != 0 {
                    // Only the control queue has responses; cursor updates are not jobs.
                    return Ok(());
                }
                // Ring of (device, queue), cached: naming it costs a format per event.
                let ring = match self.vq_rings.iter().find(|r| r.0 == dev) {
                    Some(r) => r.1,
                    None => {
                        let devname = format!("virtio{dev}");
                        let r =
                            self.ring(sink, cpu, t, devname.as_bytes(), s(2), RING_UNIT_SLOTS)?;
                        self.vq_rings.push((dev, r));
                        r
                    }
                };
                if kind == Kind::VirtioQueue {
                    let (flags, ctx, seqno) = (u(3), u(4) as u32, u(5));
                    let ef = if flags & VIRTIO_GPU_FLAG_FENCE != 0 {
                        eflag::FENCED
                    } else {
                        0
                    };
                    self.virtio.insert((ring, seqno), (ctx, ef));
                    self.run(sink, cpu, pid, t, Key { ctx, ring, seqno }, 0, 0, ef)
                } else {
                    let (rtype, rctx, seqno) = (u(3), u(4) as u32, u(5));
                    let (ctx, ef) = self.virtio.remove(&(ring, seqno)).unwrap_or((rctx, 0));
                    let err = if rtype >= VIRTIO_GPU_RESP_ERR_UNSPEC {
                        EIO
                    } else {
                        0
                    };
                    self.done(sink, cpu, pid, t, Key { ctx, ring, seqno }, (0, 0), ef, err)
                }
            }
            _ => Ok(()),
        }
    }
}
