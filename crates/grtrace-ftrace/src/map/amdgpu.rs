//! The amdgpu rows (IMPORT.md §5.5): its own jobs where no scheduler event hands them off,
//! the 6.17+ pipe sync, VM flushes and VM-fault interrupts. Naming scheduler jobs and the
//! 6.12 pipe sync share the scheduler's code (drm_sched.rs).

use super::*;

impl Mapper {
    /// Maps one event of the rows of this file.
    #[inline]
    pub(super) fn map_amdgpu<S: Sink>(&mut self, sink: &mut S, f: &Ev<'_>) -> io::Result<()> {
        let (kind, at) = (f.kind, f.at);
        let (u, s) = (|i: usize| f.u(i), |i: usize| f.s(i));
        match kind {
            Kind::AmdgpuPipeSync if f.hd.fields[1].size == 0 => {
                // 6.17+: no job id. amdgpu_ib_schedule() traces it inside run_job(), right
                // after the scheduler's drm_sched_job_run of that job on the same CPU.
                let name = s(0);
                let dep = (u(2), u(3));
                let on_ring = |k: &Key| self.rings[k.ring as usize].name == name;
                let key = match self.last_run.get(at.cpu as usize).copied().flatten() {
                    Some(k) if on_ring(&k) => k,
                    _ => return Ok(()),
                };
                self.gpu_wait(sink, at, key, dep)
            }
            Kind::AmdgpuCs | Kind::AmdgpuRunJob if !self.drivers.sched => {
                // No scheduler event hands jobs off (4.x kernels, whose scheduler events
                // name no job id, or a capture of amdgpu's events alone): amdgpu's own
                // events are the jobs, named by their finished fence, which ends them
                // when it signals (IMPORT.md 5.5).
                let (fc, fs) = (u(1), u(2));
                let name = s(3);
                let ring = self.ring(sink, at, b"", name, RING_UNIT_BYTES)?;
                self.rings[ring as usize].ends_at_signal = true;
                let key = Key {
                    ctx: fc as u32,
                    ring,
                    seqno: fs,
                };
                self.fences.insert((fc, fs), key);
                if kind == Kind::AmdgpuCs {
                    return self.emit(sink, at, Event::QUEUE, 0, key, (fc, 0, 0, 0));
                }
                if self.is_open(key) {
                    return Ok(());
                }
                self.sync_exit(sink, at, None, Some(key), true)?;
                self.note_run(at.cpu, key);
                self.run(sink, at, key, fc, 0, 0)
            }
            Kind::AmdgpuVmFlush => {
                let vmid = u(1) as u32;
                let name = s(0);
                let ring = self.ring(sink, at, b"", name, RING_UNIT_BYTES)?;
                self.emit(
                    sink,
                    at,
                    Event::CTX_SWITCH,
                    0,
                    Key {
                        ctx: vmid,
                        ring,
                        seqno: 0,
                    },
                    (0, 0, 0, 0),
                )
            }
            Kind::AmdgpuIv => {
                let (client, src, ring_id, vmid, pasid) =
                    (u(0), u(1), u(2), u(3) as u32, u(4) as u32);
                if !amdgpu_is_vm_fault(client, src) {
                    return Ok(());
                }
                let sd = f.hd.fields[5];
                let addr_lo = read_uint(f.e, f.data, sd.offset, 4);
                let addr_hi = read_uint(f.e, f.data, sd.offset + 4, 4);
                // gmc_v9+: src_data[0] = page << 12 bits 12..43, src_data[1] bits 0..3 = 44..47
                let addr = (addr_lo << 12) | ((addr_hi & 0xf) << 44);
                let _ = ring_id;
                let space = (vmid << 16) | (pasid & 0xffff);
                self.vm_fault(sink, f, addr, client as u32, space)
            }
            _ => Ok(()),
        }
    }
}

/// The interrupt sources amdgpu registers as VM faults: legacy (GMC v7/v8) src ids 146
/// and 147 (VM_CONTEXT1 protection fault), and on SOC15 parts the VMC, VMC1 and UTCL2
/// clients' source 0 (UTCL2 fault / VM fault).
pub fn amdgpu_is_vm_fault(client: u64, src: u64) -> bool {
    const LEGACY: u64 = 0;
    const SOC15_VMC1: u64 = 0x0a;
    const SOC15_VMC: u64 = 0x12;
    const SOC15_UTCL2: u64 = 0x1b;
    match client {
        LEGACY => src == 146 || src == 147,
        SOC15_VMC | SOC15_VMC1 | SOC15_UTCL2 => src == 0,
        _ => false,
    }
}
