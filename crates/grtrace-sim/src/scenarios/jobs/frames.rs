//! `frames`: frames between NOTE_MSG markers (text `frame`), each with a known critical path
//! (owned by grtreport, for `--critical-path`). Every job on a frame's path is labelled
//! `critical-path`, with the previous job of the path as its blocker (`None` for the first,
//! which the host submitted late: the path starts with a host gap). Frame shapes: a
//! dependency chain across the three rings, a long job with a burst queued behind it, a late
//! host submission after an early job, and a cross-ring dependency beside an independent job
//! that ends earlier.

use grtrace_format::Body;

use super::{by_time, JobName, Planned, ReportGen, Scenario, TruthJob, US};

pub(in crate::scenarios) fn frames(seed: u64, jobs: usize) -> Scenario {
    let mut g = ReportGen::new(seed ^ 0x6672_616d_6573);
    let mut seqno = [1u64; 3];
    let (mut t, mut made) = (1_000 * US, 0usize);
    while made < jobs {
        g.b.on(0)
            .pid(1000)
            .record(Body::Msg { text: b"frame" })
            .at(t);
        let s = t + g.between(20 * US, 300 * US);
        let need = [3, 4, 2, 3];
        let mut kind = g.rng.below(4) as usize;
        if need[kind] > jobs - made {
            kind = [4, 4, 2, 0][jobs - made];
        }
        // (job, on the path, previous job on the path)
        let mut group: Vec<(Planned, bool, Option<JobName>)> = Vec::new();
        let name = |p: &Planned| Some((p.ctx, p.ring, p.seq));
        match kind {
            0 => {
                // C (ring 2) -> B (ring 1) waits on C -> W (ring 0) waits on B.
                let own = g.between(600 * US, 900 * US);
                let c = g.plan(&mut seqno, 7, 2, s, own, None);
                let (bc, own) = (g.client(), g.between(150 * US, 250 * US));
                let b = g.plan(&mut seqno, bc, 1, s + 30 * US, own, c.awaited());
                let (wc, own) = (g.client(), g.between(150 * US, 250 * US));
                let w = g.plan(&mut seqno, wc, 0, s + 60 * US, own, b.awaited());
                let (cn, bn) = (name(&c), name(&b));
                group.extend([(c, true, None), (b, true, cn), (w, true, bn)]);
            }
            1 => {
                // A long job, then three submitted together that queue behind it.
                let r = g.rng.below(3) as u32;
                let own = g.between(1_000 * US, 1_500 * US);
                let l = g.plan(&mut seqno, 8, r, s, own, None);
                let (free, mut prev) = (l.end, name(&l));
                group.push((l, true, None));
                for j in g.burst_behind(&mut seqno, r, s, free) {
                    let p = std::mem::replace(&mut prev, name(&j));
                    group.push((j, true, p));
                }
            }
            2 => {
                // An early short job; the host commits the last one long after it ended.
                let (r, own) = (g.rng.below(3) as u32, g.between(150 * US, 250 * US));
                let ca = g.client();
                let a = g.plan(&mut seqno, ca, r, s, own, None);
                let (late, own) = (
                    s + g.between(800 * US, 1_500 * US),
                    g.between(150 * US, 250 * US),
                );
                let ch = g.client();
                let h = g.plan(&mut seqno, ch, (r + 1) % 3, late, own, None);
                group.extend([(a, false, None), (h, true, None)]);
            }
            3 => {
                // B (long) -> W waits on B on another ring; D on the third ring ends first.
                let rb = g.rng.below(3) as u32;
                let own = g.between(500 * US, 900 * US);
                let b = g.plan(&mut seqno, 7, rb, s, own, None);
                let (wc, own) = (g.client(), g.between(150 * US, 250 * US));
                let w = g.plan(&mut seqno, wc, (rb + 1) % 3, s + 40 * US, own, b.awaited());
                let own = g.between(150 * US, 400 * US);
                let cd = g.client();
                let d = g.plan(&mut seqno, cd, (rb + 2) % 3, s + 20 * US, own, None);
                let bn = name(&b);
                group.extend([(b, true, None), (w, true, bn), (d, false, None)]);
            }
            _ => {
                let (r, own) = (g.rng.below(3) as u32, g.between(150 * US, 250 * US));
                let cj = g.client();
                let j = g.plan(&mut seqno, cj, r, s, own, None);
                group.push((j, true, None));
            }
        }
        let mut last = t;
        for (p, on_path, prev) in group {
            g.write(&p);
            last = last.max(p.signal());
            let tags = if on_path {
                vec!["critical-path"]
            } else {
                Vec::new()
            };
            let (ctx, ring, seqno) = (p.ctx, p.ring, p.seq);
            g.truth.push(TruthJob {
                ctx,
                ring,
                seqno,
                tags,
                blocker: prev,
            });
            made += 1;
        }
        t = last + g.between(100 * US, 300 * US);
    }
    Scenario {
        records: by_time(g.b),
        truth: g.truth,
    }
}
