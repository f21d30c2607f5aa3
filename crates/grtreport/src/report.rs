//! The report model shared by the text report, `--json` and the HTML page: what a report
//! says (utilisation rows, verdicts, hints, blockers in words, what was judged), built by the
//! [`Engine`](crate::engine::Engine) after the run and read by the renderers.

use crate::job::{BlockKind, Blocker, Job, Tags};
use crate::joiner::{JoinStats, RingState};
use crate::rules::Rules;
use crate::summary::{Group, Summary};
use crate::units::{fill_str, ms, ms_or_dash, pct, pct_or_dash};

/// The attribution of a job in words, e.g. "queued 2.300000 ms behind ctx 3 ring 0 seqno 812
/// (queue 0.010000 ms, exec 2.100000 ms, exec-tail), 2 job(s) ran meanwhile".
pub fn describe_blocker(j: &Job) -> Option<String> {
    let b = j.blocker();
    let tags = |b: &Blocker| b.tags.map_or("tags unknown".to_string(), |t| t.to_string());
    let phases = |b: &Blocker| {
        format!(
            "queue {} ms, exec {} ms, {}",
            ms_or_dash(b.queue),
            ms_or_dash(b.exec),
            tags(b)
        )
    };
    match b.kind {
        BlockKind::None if j.tags.has(Tags::QUEUE_WAIT) => Some(format!(
            "queued {} ms; no job ran ahead of it on the ring in the recording",
            ms(j.phases.queue)
        )),
        BlockKind::None => None,
        BlockKind::Queue => Some(format!(
            "queued {} ms behind {} ({}), {} job(s) ran meanwhile",
            ms(b.lost),
            b.who(),
            phases(b),
            b.ahead
        )),
        BlockKind::Dep if !b.owned => Some(format!(
            "waited {} ms on {}, which no recorded job is known to own (a CPU-side or foreign fence, or its job was recorded without its fence: 6.12 scheduler events name a job by its fence only when a driver event does)",
            ms(b.lost),
            b.who()
        )),
        BlockKind::Dep => {
            let mut s = format!("waited {} ms on {} ({})", ms(b.lost), b.who(), phases(b));
            if b.depth > 1 {
                s.push_str(&format!(
                    ", which waited itself: chain of {} ending at ctx {} ring {} seqno {}",
                    b.depth, b.root.ctx, b.root.ring, b.root.seqno
                ));
            }
            Some(s)
        }
    }
}

/// What the report needs to know about a ring (copied out of the joiner).
#[derive(Clone, Debug, Default)]
pub struct RingInfo {
    pub name: String,
    pub size: u64,
    pub switches: u64,
    pub stalls: u64,
    pub faults: u64,
    pub resets: u64,
}

impl From<&RingState> for RingInfo {
    fn from(r: &RingState) -> Self {
        RingInfo {
            name: r.name.clone(),
            size: r.size,
            switches: r.switches,
            stalls: r.stalls,
            faults: r.faults,
            resets: r.resets,
        }
    }
}

/// A ring's label: `0 (gfx)`, or `0` when its ring note named none.
pub fn ring_label(id: u32, info: &Option<RingInfo>) -> String {
    match info {
        Some(i) if !i.name.is_empty() => format!("{id} ({})", i.name),
        _ => id.to_string(),
    }
}

/// Everything the text report prints.
pub struct ReportInput<'a> {
    pub util: &'a [UtilRow],
    pub measurable: &'a crate::measurable::Measurable,
    pub summary: &'a Summary,
    pub stats: &'a JoinStats,
    pub rules: &'a Rules,
    pub rings: &'a dyn Fn(u32) -> Option<RingInfo>,
    pub top: usize,
    /// The run's time origin.
    pub origin: crate::job::Origin,
    pub warnings: &'a [String],
    /// `--critical-path`: the window's or the slowest frame's path.
    pub critical: Option<&'a crate::critical::CritReport>,
    /// VM faults and resets on rings no reported job ran on (an imported fault names no
    /// ring or job): counted, not attributed.
    pub unattributed: (u64, u64),
    /// Per process and ring, busiest first (the Per Process table).
    pub processes: &'a [crate::processes::ProcRow],
}

/// Complete jobs of `g` a blocking class (tag index) is judged on: queue-wait and exec-tail
/// only on jobs whose START was recorded (JOBS.md §5), the others on every complete job.
pub fn judged_jobs(g: &Group, tag: usize) -> u64 {
    if tag == 1 || tag == 2 {
        g.complete - g.inferred
    } else {
        g.complete
    }
}

/// The complete jobs of `g` that blocking class `t` (tag index) is judged on; None when it
/// is not judged: the recording cannot measure its rule's phase, or no job qualifies (no
/// complete job, or none with a recorded START for queue-wait and exec-tail). Text shows
/// None as `-`, JSON and the HTML page as null, never 0.
pub fn class_judged(m: &crate::measurable::Measurable, g: &Group, t: usize) -> Option<u64> {
    let n = judged_jobs(g, t);
    (m.judged(t) && n > 0).then_some(n)
}

/// Structural hints (the report's verdicts): patterns over the whole window, per ring.
pub fn hints(r: &ReportInput<'_>) -> Vec<String> {
    let rules = r.rules;
    let mut out = Vec::new();
    for (id, g) in &r.summary.rings {
        if g.complete == 0 {
            continue;
        }
        let info = (r.rings)(*id);
        let name = format!("ring {}", ring_label(*id, &info));
        let m = &r.measurable.phases;
        if m[1] && g.share(1) > rules.queue_share {
            let inferred = if g.inferred > 0 {
                format!(
                    " (queue ends at an inferred START for {} of {} jobs)",
                    g.inferred, g.complete
                )
            } else {
                String::new()
            };
            out.push(format!(
                "{name}: queue > {:.0}% of job time for the whole window ({}){inferred}: ring too small or a long job ahead",
                rules.queue_share * 100.0,
                pct(g.share(1))
            ));
        }
        if m[0] && g.share(0) > rules.host_share {
            out.push(format!(
                "{name}: host submission takes {} of job time: driver/ioctl path or lock contention",
                pct(g.share(0))
            ));
        }
        if g.share(4) > rules.dep_share {
            out.push(format!(
                "{name}: jobs wait on dependencies for {} of their time: check cross-ring/engine synchronisation",
                pct(g.share(4))
            ));
        }
        if let Some(i) = &info {
            if i.stalls > 0 {
                out.push(format!(
                    "{name}: {} STALL(s): the ring was full and submitters waited for space",
                    i.stalls
                ));
            }
            if i.resets > 0 {
                out.push(format!("{name}: {} reset(s)", i.resets));
            }
        }
        if g.fill_n > 0 && g.fill_max as f64 >= 0.9 {
            out.push(format!(
                "{name}: ring fill reached {} at SUBMIT: a bigger ring or fewer jobs in flight",
                fill_str(g.fill_max)
            ));
        }
        let share = |t: usize| g.tag_jobs[t] as f64 / judged_jobs(g, t).max(1) as f64;
        if share(2) > 0.05 {
            out.push(format!(
                "{name}: {} of jobs run > {}x the P{:.0} of their class: heavy kernels or too little GPU",
                pct(share(2)),
                rules.tail_factor,
                rules.tail_quantile * 100.0
            ));
        }
        if g.tag_jobs[4] > 0 {
            out.push(format!(
                "{name}: {} job(s) hit VM faults: memory migration, eviction or bad mappings",
                g.tag_jobs[4]
            ));
        }
        if share(5) > 0.01 {
            out.push(format!(
                "{name}: {} of jobs were preempted repeatedly: priorities or scheduler time slices",
                pct(share(5))
            ));
        }
    }
    let (faults, resets) = r.unattributed;
    if faults > 0 {
        out.push(format!(
            "{faults} VM fault(s) named no ring with jobs (an imported fault interrupt names no ring or job): which jobs they hit is not known; they are not in vm-fault"
        ));
    }
    if resets > 0 {
        out.push(format!(
            "{resets} reset(s) named no ring with jobs: which jobs they hit is not known"
        ));
    }
    let a = &r.summary.all;
    if a.jobs > 0 && a.incomplete as f64 > 0.01 * a.jobs as f64 {
        out.push(format!(
            "{} of jobs are incomplete (lost records or missing events): statistics cover complete jobs only",
            pct(a.incomplete as f64 / a.jobs as f64)
        ));
    }
    if a.inferred > 0 {
        out.push(format!(
            "{} job(s) have no recorded START: taken as max(SUBMIT, previous END on the ring) (by the kernel, the importer or grtreport) and flagged inferred; queue-wait and exec-tail are not judged for them",
            a.inferred
        ));
    }
    out
}

/// Utilisation of one ring or context over the whole trace.
#[derive(Clone, Debug)]
pub struct UtilRow {
    /// `ring 0 (gfx)` or `ctx 3`.
    pub label: String,
    pub is_ring: bool,
    pub id: u32,
    pub busy: f64,
    pub jobs_per_s: f64,
    /// Time-weighted jobs outstanding (rings); at-SUBMIT figures for contexts.
    pub out_avg: f64,
    pub out_max: u32,
    /// Ring fill at SUBMIT (NaN when the ring size is unknown or for contexts).
    pub fill_avg: f64,
    pub fill_max: f64,
    /// Shares of the span: idle because the host was late, waiting on a dependency, or with
    /// nothing queued (rings only; NaN for contexts).
    pub idle_host: f64,
    pub idle_dep: f64,
    pub idle_sched: f64,
    pub idle_none: f64,
    /// GPU-side dependency waits of its jobs while they ran, share of the span.
    pub gpu_wait: f64,
    pub verdict: Option<crate::utilisation::Bound>,
}

/// Utilisation rows of every ring, then every context, over the trace's span.
pub fn util_rows(
    joiner: &crate::joiner::Joiner,
    summary: &Summary,
    rings: &dyn Fn(u32) -> Option<RingInfo>,
) -> Vec<UtilRow> {
    let st = &joiner.stats;
    let span = joiner.origin().span_to(st.last_ns);
    let share = |v: u64| {
        if span == 0 {
            0.0
        } else {
            v as f64 / span as f64
        }
    };
    let per_s = |n: u64| {
        if span == 0 {
            0.0
        } else {
            n as f64 * 1e9 / span as f64
        }
    };
    let mut out = Vec::new();
    let mut ids: Vec<u32> = summary.rings.keys().copied().collect();
    ids.sort_unstable();
    for id in ids {
        let Some(r) = joiner.ring(id) else { continue };
        let u = &r.util;
        let g = &summary.rings[&id];
        let busy = u.busy.total_at(st.last_ns).min(span);
        let idle_total = span - busy;
        let explained = u.idle.sum().min(idle_total);
        let none = u.idle.none + (idle_total - explained);
        out.push(UtilRow {
            label: format!("ring {}", ring_label(id, &rings(id))),
            is_ring: true,
            id,
            busy: share(busy),
            jobs_per_s: per_s(u.ended),
            out_avg: u.out_avg(span),
            out_max: u.out_max,
            fill_avg: if g.fill_n > 0 {
                g.fill_sum / g.fill_n as f64
            } else {
                f64::NAN
            },
            fill_max: if g.fill_n > 0 {
                g.fill_max as f64
            } else {
                f64::NAN
            },
            idle_host: share(u.idle.host.min(idle_total)),
            idle_dep: share(u.idle.dep.min(idle_total)),
            idle_sched: share(u.idle.sched.min(idle_total)),
            idle_none: share(none.min(idle_total)),
            gpu_wait: share(u.gpu_wait.min(busy)),
            verdict: Some(crate::utilisation::verdict(busy, u.gpu_wait, &u.idle, span)),
        });
    }
    let mut ids: Vec<u32> = summary.ctxs.keys().copied().collect();
    ids.sort_unstable();
    for id in ids {
        let g = &summary.ctxs[&id];
        let c = joiner.ctx_util.get(&id).copied().unwrap_or_default();
        out.push(UtilRow {
            label: format!("ctx {id}"),
            is_ring: false,
            id,
            busy: share(c.busy.total_at(st.last_ns).min(span)),
            jobs_per_s: per_s(c.ended),
            out_avg: if g.complete > 0 {
                g.outstanding_sum as f64 / g.complete as f64
            } else {
                0.0
            },
            out_max: g.outstanding_max,
            fill_avg: f64::NAN,
            fill_max: f64::NAN,
            idle_host: f64::NAN,
            idle_dep: f64::NAN,
            idle_sched: f64::NAN,
            idle_none: f64::NAN,
            gpu_wait: f64::NAN,
            verdict: None,
        });
    }
    out
}

/// `ring 0 (gfx): GPU-bound: busy 92.10% (own work 90.30%, GPU-side dependency waits
/// 1.80%); idle 7.90%: host late 5.00%, dependency 0.40%, nothing queued 2.50%`.
pub fn verdict_line(u: &UtilRow) -> String {
    let v = u.verdict.map_or("-", |b| b.name());
    let deps = if u.gpu_wait.is_nan() {
        " (dependency waits are not visible in this recording: busy may include them)"
    } else {
        ""
    };
    let line = format!(
        "{}: {v}: busy {} (own work {}, GPU-side dependency waits {}); idle {}: host late {}, dependency {}, submitted not started {}, nothing queued {}",
        u.label,
        pct(u.busy),
        pct_or_dash(u.busy - u.gpu_wait),
        pct_or_dash(u.gpu_wait),
        pct((1.0 - u.busy).max(0.0)),
        pct_or_dash(u.idle_host),
        pct_or_dash(u.idle_dep),
        pct(u.idle_sched),
        pct(u.idle_none)
    );
    line + deps
}

/// A card's name in the exports: `card1 (virtio_gpu)`, or `card1` when no stream header of
/// the card was seen at open (it turned up while reading concatenated streams on stdin).
pub fn card_name(card: u32, driver: &str) -> String {
    let card = grtrace_format::Card(card);
    if driver.is_empty() {
        card.to_string()
    } else {
        format!("{card} ({driver})")
    }
}
