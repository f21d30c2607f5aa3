//! The btt-shaped text report, rendered from the [report model](crate::report).

use std::io::{self, Write};

use tabwriter::{Alignment, TabWriter};

use crate::engine::Engine;
use crate::job::{Origin, Tags, N_PHASES, PHASE_NAMES};
use crate::report::{
    class_judged, describe_blocker, hints, ring_label, verdict_line, ReportInput, UtilRow,
};
use crate::rows::{job_header, job_line};
use crate::summary::Group;
use crate::units::{fill_str, ms, pct, pct_or_dash, secs};

/// Writes an aligned table without the padding tabwriter leaves at line ends.
fn put_table<W: Write>(w: &mut W, mut tw: TabWriter<Vec<u8>>) -> io::Result<()> {
    tw.flush()?;
    let buf = tw
        .into_inner()
        .map_err(|_| io::Error::other("table formatting failed"))?;
    for line in String::from_utf8_lossy(&buf).lines() {
        writeln!(w, "{}", line.trim_end())?;
    }
    Ok(())
}

fn section<W: Write>(w: &mut W, title: &str) -> io::Result<()> {
    writeln!(w, "\n==================== {title} ====================\n")
}

/// A right-aligned table, printed with `put_table`.
fn table() -> TabWriter<Vec<u8>> {
    TabWriter::new(Vec::new())
        .padding(2)
        .alignment(Alignment::Right)
}

/// [`table`] with its header line `header` (tab-separated).
fn headed_table(header: &str) -> io::Result<TabWriter<Vec<u8>>> {
    let mut tw = table();
    writeln!(tw, "{header}")?;
    Ok(tw)
}

/// Groups with their labels (`ring 0 (gfx)`, `ctx 3`), in report order.
type Rows<'a> = Vec<(String, &'a Group)>;

/// Every ring's and every context's group with its label.
fn labelled<'a>(r: &ReportInput<'a>) -> (Rows<'a>, Rows<'a>) {
    let s = r.summary;
    let rings = (s.rings.iter())
        .map(|(id, g)| (format!("ring {}", ring_label(*id, &(r.rings)(*id))), g))
        .collect();
    let ctxs = s
        .ctxs
        .iter()
        .map(|(id, g)| (format!("ctx {id}"), g))
        .collect();
    (rings, ctxs)
}

fn phase_table<W: Write>(w: &mut W, g: &Group, m: &[bool; N_PHASES]) -> io::Result<()> {
    let mut tw = headed_table("PHASE (ms)\tN\tMIN\tAVG\tP50\tP90\tP99\tMAX\t")?;
    for (i, name) in PHASE_NAMES.iter().enumerate() {
        if !m[i] {
            writeln!(tw, "{name}\t-\t-\t-\t-\t-\t-\t-\t")?;
            continue;
        }
        if g.n[i] == 0 {
            continue;
        }
        writeln!(
            tw,
            "{name}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t",
            g.n[i],
            ms(g.min[i]),
            ms(g.avg(i)),
            ms(g.quantile(i, 0.5)),
            ms(g.quantile(i, 0.9)),
            ms(g.quantile(i, 0.99)),
            ms(g.max[i])
        )?;
    }
    put_table(w, tw)
}

fn group_line(g: &Group) -> String {
    let mut s = format!(
        "{} job(s): {} complete, {} incomplete, {} with inferred START",
        g.jobs, g.complete, g.incomplete, g.inferred
    );
    if g.errors > 0 {
        s.push_str(&format!(", {} with an error", g.errors));
    }
    if g.fill_n > 0 {
        s.push_str(&format!(
            "; ring fill at SUBMIT avg {} max {}",
            fill_str((g.fill_sum / g.fill_n as f64) as f32),
            fill_str(g.fill_max)
        ));
    }
    if g.complete > 0 {
        s.push_str(&format!(
            "; outstanding avg {:.1} max {}",
            g.outstanding_sum as f64 / g.complete as f64,
            g.outstanding_max
        ));
    }
    s
}

/// The text report of `e` (after [`Engine::finish`]): `top` blocking classes, the run's
/// `warnings`.
pub fn write_report<W: Write>(
    w: &mut W,
    e: &Engine,
    top: usize,
    warnings: &[String],
) -> io::Result<()> {
    e.with_report(top, warnings, |r| render(w, r))
}

/// The text of one report model.
fn render<W: Write>(w: &mut W, r: &ReportInput<'_>) -> io::Result<()> {
    let s = r.summary;
    let st = r.stats;
    let span = r.origin.span_to(st.last_ns);
    writeln!(
        w,
        "grtreport: {} records, {} events over {} s; {}",
        st.records,
        st.events,
        secs(span, Origin::at(0)),
        group_line(&s.all)
    )?;
    if st.lost_records > 0 || st.loss_notes > 0 {
        let uncounted = if st.loss_uncounted > 0 {
            format!(
                " (and an unknown number in {}: the source did not count them)",
                st.loss_uncounted
            )
        } else {
            String::new()
        };
        writeln!(
            w,
            "grtreport: {} records lost{uncounted} in {} gap(s): jobs in flight across a gap are incomplete",
            st.lost_records, st.loss_notes
        )?;
    }
    if !r.measurable.driver.is_empty() {
        let sim = if r.measurable.simulated {
            " (simulated)"
        } else {
            ""
        };
        match &r.measurable.import {
            Some(im) => writeln!(
                w,
                "grtreport: source: {}{sim}; {}",
                r.measurable.driver,
                im.describe()
            )?,
            None => writeln!(w, "grtreport: source: {}{sim}", r.measurable.driver)?,
        }
    }
    if let Some(l) = r.measurable.line() {
        writeln!(w, "grtreport: {l}")?;
    }
    if let Some(l) = inferred_line(&s.all) {
        writeln!(w, "grtreport: {l}")?;
    }
    if let Some(im) = r.measurable.import.as_ref().filter(|i| i.late_ends > 0) {
        writeln!(
            w,
            "grtreport: {} job(s) END at i915_request_retire, which the CPU runs after the GPU finished (the capture has no fence signal for them): their exec and the busy time include that delay",
            im.late_ends
        )?;
    }
    if let Some(im) = r.measurable.import.as_ref().filter(|i| i.not_mapped > 0) {
        writeln!(
            w,
            "grtreport: part of the capture was not used: {} GPU event(s) of a layout the import does not know ({})",
            im.not_mapped, im.not_mapped_what
        )?;
    }
    for warn in r.warnings {
        writeln!(w, "grtreport: warning: {warn}")?;
    }

    section(w, "All Rings")?;
    let m = &r.measurable.phases;
    phase_table(w, &s.all, m)?;
    let (rings, ctxs) = labelled(r);
    for (title, groups) in [("Per Ring", &rings), ("Per Context", &ctxs)] {
        section(w, title)?;
        for (label, g) in groups {
            writeln!(w, "{label}: {}", group_line(g))?;
            phase_table(w, g, m)?;
            writeln!(w)?;
        }
    }
    // Rows of the two share tables: every ring, every context, then the whole.
    let rows = || {
        let overall = ("Overall".to_string(), &s.all);
        rings.iter().chain(&ctxs).cloned().chain([overall])
    };

    // btt's "Device Overhead": where a job spends its time.
    section(w, "Phase Overhead (share of total job time)")?;
    let mut tw = headed_table("\tsubmit_host\tqueue\texec\tcomplete\t|\tgpu_wait\tvm_fault\t")?;
    for (label, g) in rows() {
        let p = |i: usize| {
            if m[i] && m[6] {
                pct(g.share(i))
            } else {
                "-".into()
            }
        };
        writeln!(
            tw,
            "{label}\t{}\t{}\t{}\t{}\t|\t{}\t{}\t",
            p(0),
            p(1),
            p(2),
            p(3),
            p(4),
            p(5)
        )?;
    }
    put_table(w, tw)?;
    writeln!(
        w,
        "(gpu_wait and vm_fault happen inside queue/exec; they are shown apart, not added)"
    )?;

    section(
        w,
        "Blocking Classes (jobs tagged, share of the complete jobs judged)",
    )?;
    let mut tw = table();
    write!(tw, "\tjobs\t")?;
    for n in Tags::NAMES {
        write!(tw, "{n}\t")?;
    }
    writeln!(tw, "untagged\t")?;
    for (label, g) in rows() {
        write!(tw, "{label}\t{}\t", g.complete)?;
        let share = |n: u64, of: u64| if of == 0 { 0.0 } else { n as f64 / of as f64 };
        for t in 0..Tags::COUNT {
            match class_judged(r.measurable, g, t) {
                None => write!(tw, "-\t")?,
                Some(of) => write!(
                    tw,
                    "{} ({})\t",
                    g.tag_jobs[t],
                    pct(share(g.tag_jobs[t], of))
                )?,
            }
        }
        let un = g.complete - g.tagged;
        if (0..Tags::COUNT).any(|t| class_judged(r.measurable, g, t).is_some()) {
            writeln!(tw, "{} ({})\t", un, pct(share(un, g.complete)))?;
        } else {
            // No class could be judged: "untagged" would claim nothing blocked them.
            writeln!(tw, "-\t")?;
        }
    }
    put_table(w, tw)?;
    for l in class_notes(r) {
        writeln!(w, "{l}")?;
    }

    write_util(w, r.util, s.all.inferred, s.all.complete)?;
    write_processes(w, r)?;

    section(w, "Hints")?;
    let hints = hints(r);
    if hints.is_empty() {
        writeln!(w, "none: no structural bottleneck stands out")?;
    }
    for h in hints {
        writeln!(w, "{h}")?;
    }

    if r.top > 0 {
        write_top(w, r)?;
    }
    if let Some(c) = r.critical {
        section(w, "Critical Path")?;
        crate::critical::write_text(w, c, r.origin)?;
    }
    Ok(())
}

/// The header line about inferred STARTs, when some jobs have one.
fn inferred_line(g: &Group) -> Option<String> {
    (g.inferred > 0).then(|| {
        format!(
            "{} of {} complete job(s) have an inferred START (max(SUBMIT, previous END on the ring), by the kernel, the importer or grtreport): their queue/exec split is that inference, and queue-wait and exec-tail are not judged for them",
            g.inferred, g.complete
        )
    })
}

/// What the Blocking Classes table's `-` cells and judged shares mean.
fn class_notes(r: &ReportInput<'_>) -> Vec<String> {
    let m = r.measurable;
    let mut out = Vec::new();
    let not: Vec<&str> = (0..Tags::COUNT)
        .filter(|&t| !m.judged(t))
        .map(|t| Tags::NAMES[t])
        .collect();
    if !not.is_empty() {
        let why = if m.import.is_some() {
            "the source cannot measure what their rules need"
        } else {
            "the recording lacks the events their rules need"
        };
        out.push(format!("(-: {} not judged: {why})", not.join(", ")));
    }
    let a = &r.summary.all;
    if a.inferred > 0 && (m.judged(1) || m.judged(2)) {
        out.push(if a.complete == a.inferred {
            format!(
                "(queue-wait, exec-tail: -: no job's START was recorded; the {} with an inferred START are not judged)",
                a.inferred
            )
        } else {
            format!(
                "(queue-wait, exec-tail: shares of the {} job(s) whose START was recorded; the {} with an inferred START are not judged, - where none was recorded)",
                a.complete - a.inferred,
                a.inferred
            )
        });
    }
    out
}

fn write_top<W: Write>(w: &mut W, r: &ReportInput<'_>) -> io::Result<()> {
    let top = r.summary.top(r.top);
    section(w, &format!("Top {} blocking classes by time lost", r.top))?;
    if top.is_empty() {
        writeln!(w, "no job was tagged")?;
        return Ok(());
    }
    writeln!(w, "    {}", job_header())?;
    let total = r.summary.all.sum[6].max(1);
    for (i, e) in top.iter().enumerate() {
        writeln!(
            w,
            "#{} {} on ctx {} ring {}: {} job(s), {} ms lost ({} of all job time)",
            i + 1,
            Tags::NAMES[e.tag],
            e.ctx,
            ring_label(e.ring, &(r.rings)(e.ring)),
            e.jobs,
            ms(e.lost),
            pct(e.lost as f64 / total as f64)
        )?;
        for j in e.samples {
            writeln!(w, "    {}", job_line(j, r.origin))?;
            if let Some(d) = describe_blocker(j) {
                writeln!(w, "      -> {d}")?;
            }
        }
    }
    Ok(())
}

/// The utilisation table and one verdict line per ring; `inferred` of `complete` jobs have
/// an inferred START.
pub fn write_util<W: Write>(
    w: &mut W,
    rows: &[UtilRow],
    inferred: u64,
    complete: u64,
) -> io::Result<()> {
    section(w, "Utilisation (share of the trace's span)")?;
    let mut tw = headed_table(
        "\tbusy\tjobs/s\tout_avg\tout_max\tfill_avg\tfill_max\tidle_host\tidle_dep\tidle_sched\tidle_none\t",
    )?;
    for u in rows {
        writeln!(
            tw,
            "{}\t{}\t{:.1}\t{:.2}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t",
            u.label,
            pct(u.busy),
            u.jobs_per_s,
            u.out_avg,
            u.out_max,
            pct_or_dash(u.fill_avg),
            pct_or_dash(u.fill_max),
            pct_or_dash(u.idle_host),
            pct_or_dash(u.idle_dep),
            pct_or_dash(u.idle_sched),
            pct_or_dash(u.idle_none)
        )?;
    }
    put_table(w, tw)?;
    writeln!(
        w,
        "(rings: out_avg is time-weighted; contexts: outstanding at SUBMIT. idle_host: next job committed, not submitted;\n idle_dep: it waited host-side on a dependency; idle_sched: submitted, not started; idle_none: nothing committed)"
    )?;
    if inferred > 0 {
        writeln!(
            w,
            "(busy counts from START, which is inferred for {inferred} of {complete} complete job(s): max(SUBMIT, previous END on the ring))"
        )?;
    }
    for u in rows.iter().filter(|u| u.verdict.is_some()) {
        writeln!(w, "{}", verdict_line(u))?;
    }
    Ok(())
}

/// Rows of the Per Process table in the text (all of them in `--json` and `--csv`).
pub const TEXT_PROCESSES: usize = 30;

/// A process as the text names it: `812 (vkcube)`, `812`, or `-` when the jobs' COMMIT was
/// not recorded (no process is known).
pub fn process_label(p: &crate::processes::ProcRow) -> String {
    match (p.pid, &p.comm) {
        (Some(pid), Some(c)) => format!("{pid} ({c})"),
        (Some(pid), None) => pid.to_string(),
        (None, _) => "- (no COMMIT)".into(),
    }
}

/// The Per Process table: per process and ring, its jobs, GPU busy time and the time its
/// jobs lost per blocking class.
fn write_processes<W: Write>(w: &mut W, r: &ReportInput<'_>) -> io::Result<()> {
    section(
        w,
        "Per Process (GPU busy time, time lost per blocking class)",
    )?;
    if r.processes.is_empty() {
        return writeln!(w, "no job");
    }
    let span = r.origin.span_to(r.stats.last_ns);
    let mut tw = table();
    write!(tw, "process\tring\tjobs\tbusy_ms\tbusy\t")?;
    for n in Tags::NAMES {
        write!(tw, "{n}\t")?;
    }
    writeln!(tw)?;
    for p in r.processes.iter().take(TEXT_PROCESSES) {
        let busy = p.p.busy();
        write!(
            tw,
            "{}\t{}\t{}\t{}\t{}\t",
            process_label(p),
            p.ring_label,
            p.p.jobs,
            busy.map_or("-".into(), ms),
            busy.map_or("-".into(), |b| pct(b as f64 / span.max(1) as f64)),
        )?;
        for t in 0..Tags::COUNT {
            if !r.measurable.judged(t) {
                write!(tw, "-\t")?;
            } else if p.p.tag_jobs[t] == 0 {
                write!(tw, "0\t")?;
            } else {
                write!(tw, "{} ({})\t", ms(p.p.tag_lost[t]), p.p.tag_jobs[t])?;
            }
        }
        writeln!(tw)?;
    }
    put_table(w, tw)?;
    if r.processes.len() > TEXT_PROCESSES {
        writeln!(
            w,
            "({} more row(s) in --json and --csv)",
            r.processes.len() - TEXT_PROCESSES
        )?;
    }
    writeln!(
        w,
        "(busy: sum of exec (END - START) of the process's complete jobs on the ring, share of the trace's span;\n per class: ms its jobs lost to it (jobs tagged); -: not judged in this recording)"
    )
}
