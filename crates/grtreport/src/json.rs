//! `--json`: the whole report (every table, the attributions, the verdicts, the intervals)
//! as one JSON document. The schema is documented in grtreport(1), section JSON OUTPUT;
//! `schema` names its version. Times are integer nanoseconds (`*_ns`), shares are fractions
//! of 1, and a figure the recording cannot measure is `null`, never 0.

use std::io::{self, Write};

use serde_json::{json, Map, Value};

use crate::engine::Engine;
use crate::job::{Job, Origin, GPU_WAIT, N_PHASES, PHASE_NAMES, SUBMIT_HOST};
use crate::report::{class_judged, hints, verdict_line, ReportInput, UtilRow};
use crate::summary::Group;
use crate::utilisation::IntervalRow;
use crate::Tags;

/// Version of the document's layout; bumped when a field changes meaning or goes away.
pub const SCHEMA: &str = "grtreport/1";

fn num(v: f64) -> Value {
    if v.is_finite() {
        json!(v)
    } else {
        Value::Null
    }
}

fn group(g: &Group, meas: &crate::measurable::Measurable) -> Value {
    let measurable = &meas.phases;
    let mut phases = Map::new();
    for (i, name) in PHASE_NAMES.iter().enumerate() {
        let v = if !measurable[i] {
            Value::Null
        } else if g.n[i] == 0 {
            json!({ "n": 0 })
        } else {
            json!({
                "n": g.n[i],
                "min_ns": g.min[i],
                "avg_ns": g.avg(i),
                "p50_ns": g.quantile(i, 0.5),
                "p90_ns": g.quantile(i, 0.9),
                "p99_ns": g.quantile(i, 0.99),
                "max_ns": g.max[i],
                "share": g.share(i),
            })
        };
        phases.insert(name.to_string(), v);
    }
    let mut tags = Map::new();
    for (t, name) in Tags::NAMES.iter().enumerate() {
        // Not judged: null, never 0 (the text's `-`).
        let v = class_judged(meas, g, t).map_or(
            Value::Null,
            |judged| json!({ "jobs": g.tag_jobs[t], "lost_ns": g.tag_lost[t], "judged": judged }),
        );
        tags.insert(name.to_string(), v);
    }
    json!({
        "jobs": g.jobs,
        "complete": g.complete,
        "incomplete": g.incomplete,
        "inferred": g.inferred,
        "no_irq": g.no_irq,
        "errors": g.errors,
        "tagged": g.tagged,
        "untagged": g.complete - g.tagged,
        "fill_avg": if g.fill_n > 0 { num(g.fill_sum / g.fill_n as f64) } else { Value::Null },
        "fill_max": if g.fill_n > 0 { num(g.fill_max as f64) } else { Value::Null },
        "outstanding_avg": if g.complete > 0 { num(g.outstanding_sum as f64 / g.complete as f64) } else { Value::Null },
        "outstanding_max": g.outstanding_max,
        "phases": phases,
        "tags": tags,
    })
}

fn util(u: &UtilRow) -> Value {
    json!({
        "busy": num(u.busy),
        "jobs_per_s": num(u.jobs_per_s),
        "outstanding_avg": num(u.out_avg),
        "outstanding_max": u.out_max,
        "fill_avg": num(u.fill_avg),
        "fill_max": num(u.fill_max),
        "idle_host": num(u.idle_host),
        "idle_dep": num(u.idle_dep),
        "idle_sched": num(u.idle_sched),
        "idle_none": num(u.idle_none),
        "gpu_wait": num(u.gpu_wait),
        "verdict": u.verdict.map(|b| b.name()),
    })
}

/// One job with its attribution (the `--json` columns of
/// [`COLUMNS`](crate::columns::COLUMNS)).
pub fn job(j: &Job, origin: Origin, measurable: &[bool; N_PHASES]) -> Value {
    let mut cx = crate::columns::Cx::new(origin, None);
    cx.measurable = measurable;
    crate::columns::json_job(j, &cx)
}

fn interval(row: &IntervalRow, m: &[bool; N_PHASES]) -> Value {
    let f = &row.figures;
    let len = row.end.saturating_sub(row.start).max(1) as f64;
    json!({
        "start_ns": row.start,
        "end_ns": row.end,
        "ring": row.ring,
        "busy_ns": f.busy,
        "jobs_ended": f.ended,
        "outstanding_avg": f.out_area as f64 / len,
        "outstanding_max": f.out_max,
        "fill_max": if f.fill_max > 0.0 { num(f.fill_max as f64) } else { Value::Null },
        "idle_host_ns": if m[SUBMIT_HOST] { json!(f.idle.host) } else { Value::Null },
        "idle_dep_ns": if m[GPU_WAIT] { json!(f.idle.dep) } else { Value::Null },
        "idle_sched_ns": f.idle.sched,
        "idle_none_ns": f.idle_none(row.end.saturating_sub(row.start)),
    })
}

/// One row of the Per Process table: a class the recording cannot judge is null.
fn process(p: &crate::processes::ProcRow, m: &crate::measurable::Measurable, span: u64) -> Value {
    let mut lost = Map::new();
    for (t, name) in Tags::NAMES.iter().enumerate() {
        let v = if m.judged(t) {
            json!({ "jobs": p.p.tag_jobs[t], "lost_ns": p.p.tag_lost[t] })
        } else {
            Value::Null
        };
        lost.insert(name.to_string(), v);
    }
    let busy = p.p.busy();
    json!({
        // 0 where no process is known, as in the job rows.
        "pid": p.pid.unwrap_or(0),
        "comm": p.comm,
        "ring": p.ring,
        "jobs": p.p.jobs,
        "complete": p.p.complete,
        "incomplete": p.p.incomplete,
        "busy_ns": busy,
        "busy_own_ns": busy.map(|_| p.p.own_ns),
        "busy_share": busy.map_or(Value::Null, |b| num(b as f64 / span.max(1) as f64)),
        "lost": lost,
    })
}

/// The report of `e` as a JSON value (after [`Engine::finish`]): `top` blocking classes,
/// the run's `warnings`.
pub fn report(e: &Engine, top: usize, warnings: &[String]) -> Value {
    e.with_report(top, warnings, |r| model(r, &e.kept_intervals))
}

/// [`report`] as pretty-printed JSON text and a newline.
pub fn write<W: Write>(w: &mut W, e: &Engine, top: usize, warnings: &[String]) -> io::Result<()> {
    let v = report(e, top, warnings);
    // io::Error::from keeps a write error's kind (a closed pipe ends quietly).
    serde_json::to_writer_pretty(&mut *w, &v).map_err(io::Error::from)?;
    writeln!(w)
}

/// The JSON document of one report model and its `--interval` rows.
fn model(r: &ReportInput<'_>, intervals: &[IntervalRow]) -> Value {
    let s = r.summary;
    let st = r.stats;
    let m = &r.measurable.phases;
    let span = r.origin.span_to(st.last_ns);
    let util_of = |ring: bool, id: u32| {
        r.util
            .iter()
            .find(|u| u.is_ring == ring && u.id == id)
            .map_or(Value::Null, util)
    };
    let rings: Vec<Value> = s
        .rings
        .iter()
        .map(|(id, g)| {
            let info = (r.rings)(*id).unwrap_or_default();
            let mut v = group(g, r.measurable);
            v["id"] = json!(id);
            v["name"] = json!(info.name);
            v["size"] = json!(info.size);
            v["switches"] = json!(info.switches);
            v["stalls"] = json!(info.stalls);
            v["faults"] = json!(info.faults);
            v["resets"] = json!(info.resets);
            v["utilisation"] = util_of(true, *id);
            v
        })
        .collect();
    let ctxs: Vec<Value> = s
        .ctxs
        .iter()
        .map(|(id, g)| {
            let mut v = group(g, r.measurable);
            v["id"] = json!(id);
            v["utilisation"] = util_of(false, *id);
            v
        })
        .collect();
    let top: Vec<Value> = s
        .top(r.top)
        .iter()
        .map(|e| {
            json!({
                "tag": Tags::NAMES[e.tag],
                "ctx": e.ctx,
                "ring": e.ring,
                "jobs": e.jobs,
                "lost_ns": e.lost,
                "samples": e.samples.iter().map(|j| job(j, r.origin, m)).collect::<Vec<_>>(),
            })
        })
        .collect();
    let verdicts: Vec<Value> = r
        .util
        .iter()
        .filter(|u| u.verdict.is_some())
        .map(|u| {
            json!({
                "ring": u.id,
                "verdict": u.verdict.map(|b| b.name()),
                "text": verdict_line(u),
            })
        })
        .collect();
    let mut rules = Map::new();
    for (name, _) in crate::Rules::NAMES {
        rules.insert(name.to_string(), num(r.rules.get(name).unwrap_or(0.0)));
    }
    json!({
        "schema": SCHEMA,
        "source": {
            "driver": r.measurable.driver,
            "simulated": r.measurable.simulated,
            "records": st.records,
            "events": st.events,
            "first_ns": r.origin.get(),
            "last_ns": r.origin.get().map(|_| st.last_ns),
            "span_ns": span,
            "lost_records": st.lost_records,
            "loss_notes": st.loss_notes,
            "loss_notes_uncounted": st.loss_uncounted,
            "event_codes": r.measurable.codes(),
            "missing_events": r.measurable.missing(),
            "unmeasurable_phases": r.measurable.unmeasurable(),
            "import": r.measurable.import.as_ref().map(|im| json!({
                "source": im.source,
                "tool": im.tool,
                "clock": im.clock,
                "recorder": im.recorder,
                "kernel": im.kernel,
                "start_inferred": im.start_inferred,
                "late_ends": im.late_ends,
                "unmeasured": im.unmeasured_names(),
            })),
            "inferred_start_jobs": s.all.inferred,
            "not_judged": (0..Tags::COUNT)
                .filter(|&t| !r.measurable.judged(t))
                .map(|t| Tags::NAMES[t])
                .collect::<Vec<_>>(),
        },
        "warnings": r.warnings,
        "all": group(&s.all, r.measurable),
        "rings": rings,
        "contexts": ctxs,
        "verdicts": verdicts,
        "hints": hints(r),
        "top": top,
        "processes": r.processes.iter().map(|p| process(p, r.measurable, span)).collect::<Vec<_>>(),
        "intervals": intervals
            .iter()
            .map(|row| interval(row, &r.measurable.phases))
            .collect::<Vec<_>>(),
        "rules": rules,
        "critical_path": r.critical.map_or(Value::Null, crate::critical::to_json),
    })
}
