//! The i915 rows (IMPORT.md §5.7): the uabi engine (5.1+) and the engine id of 4.9-5.0.

use super::*;

/// The uabi instance of an i915 virtual (load-balanced) engine: `I915_ENGINE_CLASS_INVALID_VIRTUAL`
/// (-2) in the tracepoints' u16 `instance` (execlists and GuC virtual engines alike).
const I915_VIRTUAL_INSTANCE: u64 = 0xfffe;

/// A ring name for i915's uabi engine class and instance: `vcs1`, and `vcs-virtual` for a
/// virtual engine of the class, as the grtrace series names them (FORMAT.md 4.5).
fn i915_engine(class: u64, inst: u64) -> String {
    let c = match class {
        0 => "rcs",
        1 => "bcs",
        2 => "vcs",
        3 => "vecs",
        4 => "ccs",
        _ if inst == I915_VIRTUAL_INSTANCE => return format!("class{class}-virtual"),
        _ => return format!("class{class}.{inst}"),
    };
    if inst == I915_VIRTUAL_INSTANCE {
        format!("{c}-virtual")
    } else {
        format!("{c}{inst}")
    }
}

impl Mapper {
    /// Maps one event of the rows of this file: an i915 request event, the only ones the
    /// dispatcher's exhaustive match (`Mapper::dispatch`) hands over here; each names its ring
    /// by its own fields, so no other kind may come.
    #[inline]
    pub(super) fn map_i915<S: Sink>(&mut self, sink: &mut S, f: &Ev<'_>) -> io::Result<()> {
        let (kind, at) = (f.kind, f.at);
        let u = |i: usize| f.u(i);
        let (dev, ctx, class, inst, seqno) = (u(0), u(1), u(2), u(3), u(4));
        // Before the uabi engine (4.9-5.0) the layout has `ring`, the engine's
        // `enum intel_engine_id`, in the class slot and nothing in the instance
        // slot: one ring per id (distinct engines have distinct ids), named by the
        // id, whose engine names changed between those kernels (IMPORT.md 5.7).
        let by_id = f.hd.fields[3].size == 0;
        // The first event of an engine names its ring (drv_ring keeps the id's ring
        // from then on): mark it then, not on every event.
        let mut first_of_engine = false;
        let engine = if by_id {
            (1 << 40) | class
        } else {
            (class << 16) | inst
        };
        let ring = self.drv_ring(sink, at, (1, dev, engine), || {
            first_of_engine = true;
            if by_id {
                let name = format!("engine{class}").into_bytes();
                return (card_name(dev), name, ring_flag::CTX_SEQNO);
            }
            // Seqnos count per context (its timeline), not per engine; a virtual
            // engine's requests run on one of its engines (IMPORT.md 5.7).
            let virt = if inst == I915_VIRTUAL_INSTANCE {
                ring_flag::VIRTUAL
            } else {
                0
            };
            (
                card_name(dev),
                i915_engine(class, inst).into_bytes(),
                ring_flag::CTX_SEQNO | virt,
            )
        })?;
        if first_of_engine {
            self.rings[ring as usize].ends_at_signal = true;
        }
        let k = Key {
            ctx: ctx as u32,
            ring,
            seqno,
        };
        // dma_fence events carry the context as 32 bits: join on those.
        let f = (ctx & 0xffff_ffff, seqno);
        let ll = self.drivers.i915_low_level;
        match kind {
            Kind::I915Queue | Kind::I915Add => {
                self.fences.insert(f, k);
                self.emit(sink, at, Event::QUEUE, 0, k, (ctx, 0, 0, 0))?;
                if kind == Kind::I915Add && !ll {
                    self.run(sink, at, k, ctx, 0, 0)?;
                }
                Ok(())
            }
            Kind::I915Submit => {
                self.fences.insert(f, k);
                self.emit(sink, at, Event::COMMIT, 0, k, (0, 0, 0, 0))
            }
            // A preempted request comes back with another `in`: it is still open. A
            // virtual engine's request keeps the key of its virtual ring in `fences`
            // (`add`, `submit`): that is how its `out` knows it.
            Kind::I915In if !self.is_open(k) => {
                let virt = self
                    .fences
                    .get(&f)
                    .is_some_and(|o| o.ring != k.ring && self.rings[o.ring as usize].virt);
                if !virt {
                    self.fences.insert(f, k);
                }
                self.hand_off(sink, at, k, ctx, 0, 0)?;
                if let Some(p) = self.rings[ring as usize].order.back_mut() {
                    p.virt = virt;
                }
                Ok(())
            }
            Kind::I915Out | Kind::I915Retire => {
                // Without the low-level events a virtual engine's request was handed
                // off on its virtual ring (`add`) and ends on the engine that ran it
                // (`retire`): it leaves the virtual ring's line, its END names the
                // engine.
                let held = match self.is_open(k) {
                    true => Some(k),
                    false if kind == Kind::I915Retire && !ll => self.open_elsewhere(f, k),
                    false => None,
                };
                let ends = kind == Kind::I915Retire || u(5) != 0;
                let r = &self.rings[ring as usize];
                if !ends && r.order.iter().any(|p| p.key == k && p.virt) {
                    // A virtual engine's request switched away unfinished goes back to
                    // the virtual engine (i915 has no lite restore there): taken off
                    // this engine, which runs the next in line; its next `in`, here
                    // or on another engine, hands it off again.
                    let f = eflag::PREEMPT;
                    self.emit(sink, at, Event::END, f, k, (ctx, 0, 0, 0))?;
                    return self.leave(sink, at, k);
                }
                // Only an open request ends: its fence's signal may have ended it.
                let Some(held) = held.filter(|_| ends) else {
                    return Ok(());
                };
                if kind == Kind::I915Retire {
                    self.stats.retire_ends += 1;
                }
                self.done_fence(f, k);
                self.sync_exit(sink, at, None, Some(k), false)?;
                self.done_as(sink, at, held, k, (ctx, 0), 0, 0)
            }
            Kind::I915WaitBegin => self.emit(sink, at, Event::WAIT, 0, k, (ctx, seqno, 0, 0)),
            Kind::I915WaitEnd => self.emit(sink, at, Event::WAIT_END, 0, k, (ctx, seqno, 0, 0)),
            _ => Ok(()),
        }
    }
}
