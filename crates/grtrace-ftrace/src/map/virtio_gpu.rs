//! The virtio_gpu rows (IMPORT.md §5.4).

use super::*;

const VIRTIO_GPU_FLAG_FENCE: u64 = 1;
const VIRTIO_GPU_RESP_ERR_UNSPEC: u64 = 0x1200;

impl Mapper {
    /// The ring of virtio device `dev`'s control queue (vq 0), named `virtio<dev>/<name>`
    /// the first time; cached: naming it costs a format per event. `name` is the queue's
    /// name from the event, or for events without one `control`, the name virtio-gpu
    /// gives vq 0 (`virtgpu_kms.c`, the same since the driver came).
    fn vq_ring<S: Sink>(&mut self, sink: &mut S, at: At, dev: u64, name: &[u8]) -> io::Result<u32> {
        if let Some(r) = self.vq_rings.iter().find(|r| r.0 == dev) {
            return Ok(r.1);
        }
        let devname = format!("virtio{dev}");
        let r = self.ring(sink, at, devname.as_bytes(), name, RING_UNIT_SLOTS)?;
        self.vq_rings.push((dev, r));
        Ok(r)
    }

    /// Maps one event of the rows of this file.
    #[inline]
    pub(super) fn map_virtio_gpu<S: Sink>(&mut self, sink: &mut S, f: &Ev<'_>) -> io::Result<()> {
        let (kind, at) = (f.kind, f.at);
        let (u, s) = (|i: usize| f.u(i), |i: usize| f.s(i));
        let (dev, vq) = (u(0), u(1));
        if vq != 0 {
            // Only the control queue has responses; cursor updates are not jobs.
            return Ok(());
        }
        match kind {
            Kind::VirtioQueue | Kind::VirtioResponse => {
                let ring = self.vq_ring(sink, at, dev, s(2))?;
                if kind == Kind::VirtioQueue {
                    let (flags, ctx, seqno) = (u(3), u(4) as u32, u(5));
                    let ef = if flags & VIRTIO_GPU_FLAG_FENCE != 0 {
                        eflag::FENCED
                    } else {
                        0
                    };
                    self.virtio.insert((ring, seqno), (ctx, ef));
                    let k = Key { ctx, ring, seqno };
                    if self.rings[ring as usize].own_submits {
                        self.unkicked.insert((ring, seqno), k);
                    }
                    self.commit(sink, at, k, (0, 0), ef)
                } else {
                    let (rtype, rctx, seqno) = (u(3), u(4) as u32, u(5));
                    let (ctx, ef) = self.virtio.remove(&(ring, seqno)).unwrap_or((rctx, 0));
                    let err = if rtype >= VIRTIO_GPU_RESP_ERR_UNSPEC {
                        EIO
                    } else {
                        0
                    };
                    let k = Key { ctx, ring, seqno };
                    // Answered before a kick covered it: the device took it from the ring
                    // while processing the queue (no doorbell), at the latest now.
                    self.unkicked.remove(&(ring, seqno));
                    self.submit(sink, at, k, true)?;
                    self.done(sink, at, k, (0, 0), ef, err)
                }
            }
            Kind::VirtioNotify => {
                // The kick, before its doorbell (notify=0: none was due, the device was
                // processing the queue and takes the commands itself): SUBMIT of every
                // command queued up to its seqno.
                let (seqno, doorbell) = (u(2), u(3) != 0);
                let ring = self.vq_ring(sink, at, dev, b"control")?;
                // The first kick on this ring: the commands before it were handed off at
                // their queue event.
                self.rings[ring as usize].own_submits = true;
                // In seqno order; only the commands it covers are looked at.
                while let Some((&slot, &k)) = self.unkicked.range((ring, 0)..=(ring, seqno)).next()
                {
                    self.unkicked.remove(&slot);
                    self.submit(sink, at, k, !doorbell)?;
                }
                Ok(())
            }
            Kind::VirtioAck => {
                // The control queue's interrupt: for the ring, not one command (the
                // responses it brings are named when they are taken).
                let ring = self.vq_ring(sink, at, dev, b"control")?;
                let k = Key {
                    ctx: 0,
                    ring,
                    seqno: 0,
                };
                self.emit(sink, at, Event::IRQ, 0, k, (0, 0, 0, 0))
            }
            _ => Ok(()),
        }
    }
}
