//! Outputs: the btt-shaped text report, `--jobs` lines and `--csv` rows.

use std::io::{self, Write};

use tabwriter::{Alignment, TabWriter};

use crate::engine::Names;
use crate::job::{
    BlockKind, Blocker, Flags, Job, Tags, GPU_WAIT, NONE, N_PHASES, PHASE_NAMES, SUBMIT_HOST,
};
use crate::joiner::{JoinStats, RingState};
use crate::rules::Rules;
use crate::summary::{Group, Summary};

/// Nanoseconds as milliseconds with nanosecond resolution: `2300000` -> `2.300000`.
pub fn ms(ns: u64) -> String {
    format!("{}.{:06}", ns / 1_000_000, ns % 1_000_000)
}

/// A time relative to the first record, in seconds (as grtparse prints it).
pub fn secs(ns: u64, genesis: u64) -> String {
    if ns == NONE {
        return "-".to_string();
    }
    let d = ns.saturating_sub(genesis);
    format!("{}.{:09}", d / 1_000_000_000, d % 1_000_000_000)
}

fn pct(x: f64) -> String {
    format!("{:.2}%", x * 100.0)
}

fn fill_str(f: f32) -> String {
    if f.is_finite() {
        format!("{:.0}%", f * 100.0)
    } else {
        "-".to_string()
    }
}

/// Header of `--jobs` lines.
pub const JOB_HEADER: &str = "#         time     ctx   ring      seqno submit_ms   queue_ms    exec_ms complete_ms gpuwait_ms vmfault_ms   total_ms fill out tags flags blocked_by";

/// A blocker in one word for job lines: `ctx/ring/seqno`, `fence:CTX:SEQNO` when no recorded
/// job owns the awaited fence, `-` for none.
pub fn blocker_word(b: &Blocker) -> String {
    match (b.kind, b.owned) {
        (BlockKind::None, _) => "-".into(),
        (_, true) => format!("{}/{}/{}", b.key.ctx, b.key.ring, b.key.seqno),
        (BlockKind::Dep, false) => format!("fence:{}:{}", b.fence.0, b.fence.1),
        (BlockKind::Queue, false) => "-".into(),
    }
}

/// `2.300000` or `-` for an unknown span.
fn ms_or_dash(ns: u64) -> String {
    if ns == NONE {
        "-".into()
    } else {
        ms(ns)
    }
}

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

/// A job's phases formatted by `f`, `-` for the unmeasured ones.
fn phase_cells(j: &Job, f: impl Fn(u64) -> String) -> [String; N_PHASES] {
    let v = j.phases.as_array();
    std::array::from_fn(|i| if j.measured(i) { f(v[i]) } else { "-".into() })
}

/// One `--jobs` line (no newline).
pub fn job_line(j: &Job, genesis: u64) -> String {
    let p = phase_cells(j, ms);
    format!(
        "{:>14} {:>7} {:>6} {:>10} {:>9} {:>10} {:>10} {:>11} {:>10} {:>10} {:>10} {:>4} {:>3} {} {} {}",
        secs(j.first_time(), genesis),
        j.key.ctx,
        j.key.ring,
        j.key.seqno,
        p[0],
        p[1],
        p[2],
        p[3],
        p[4],
        p[5],
        p[6],
        fill_str(j.fill),
        j.outstanding,
        j.tags,
        j.flags,
        blocker_word(j.blocker())
    )
}

/// A tag or flag name as a CSV column: snake_case (`queue-wait` -> `queue_wait`).
fn snake(name: &str) -> String {
    name.replace('-', "_")
}

/// Per-job CSV header: every column snake_case.
pub fn job_csv_header() -> Vec<String> {
    let mut h: Vec<String> = [
        "time_s",
        "commit_ns",
        "submit_ns",
        "start_ns",
        "end_ns",
        "done_ns",
        "ctx",
        "ring",
        "ring_name",
        "seqno",
        "pid",
        "comm",
        "submit_host_ns",
        "queue_ns",
        "exec_ns",
        "complete_ns",
        "gpu_wait_ns",
        "vm_fault_ns",
        "total_ns",
        "exec_own_ns",
        "class_p90_ns",
        "fill",
        "outstanding",
        "batch",
        "sync_segments",
        "faults",
        "preempts",
        "switches",
        "tags",
        "flags",
        "blocker_kind",
        "blocker_ctx",
        "blocker_ring",
        "blocker_seqno",
        "blocker_fence",
        "blocker_lost_ns",
        "blocker_queue_ns",
        "blocker_exec_ns",
        "blocker_tags",
        "blocker_chain",
        "blocker_root",
        "blocker_ahead",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    h.extend(Tags::NAMES.iter().map(|n| snake(n)));
    h.extend(["inferred".to_string(), "incomplete".to_string()]);
    h
}

/// An absolute time in the trace clock, or empty when not recorded.
fn abs(v: u64) -> String {
    if v == NONE {
        String::new()
    } else {
        v.to_string()
    }
}

pub fn job_csv_row(j: &Job, names: &Names<'_>) -> Vec<String> {
    let b = j.blocker();
    let owned = b.is_some() && b.owned;
    let if_owned = |v: String| if owned { v } else { String::new() };
    // Unmeasured phases are empty cells, never 0.
    let ph = phase_cells(j, |v| v.to_string()).map(|c| if c == "-" { String::new() } else { c });
    let mut r = vec![
        secs(j.first_time(), names.genesis),
        abs(j.commit),
        abs(j.submit),
        abs(j.start),
        abs(j.end),
        abs(j.done),
        j.key.ctx.to_string(),
        j.key.ring.to_string(),
        names.ring(j.key.ring).to_string(),
        j.key.seqno.to_string(),
        j.pid.to_string(),
        names.comm(j.pid).unwrap_or_default(),
    ];
    r.extend(ph);
    r.extend([
        j.exec_own().to_string(),
        j.class_ref.to_string(),
        if j.fill.is_finite() {
            format!("{:.4}", j.fill)
        } else {
            String::new()
        },
        j.outstanding.to_string(),
        j.batch.to_string(),
        j.sync_segments.to_string(),
        j.faults.to_string(),
        j.preempts.to_string(),
        j.switches.to_string(),
        j.tags.to_string(),
        j.flags.to_string(),
        match b.kind {
            BlockKind::None => String::new(),
            BlockKind::Dep => "dep".into(),
            BlockKind::Queue => "queue".into(),
        },
        if_owned(b.key.ctx.to_string()),
        if_owned(b.key.ring.to_string()),
        if_owned(b.key.seqno.to_string()),
        if b.kind == BlockKind::Dep {
            format!("{}:{}", b.fence.0, b.fence.1)
        } else {
            String::new()
        },
        if b.is_some() {
            b.lost.to_string()
        } else {
            String::new()
        },
        if_owned(abs(b.queue)),
        if_owned(abs(b.exec)),
        if_owned(b.tags.map(|t| t.to_string()).unwrap_or_default()),
        if_owned(b.depth.to_string()),
        if_owned(format!("{}/{}/{}", b.root.ctx, b.root.ring, b.root.seqno)),
        if b.kind == BlockKind::Queue {
            b.ahead.to_string()
        } else {
            String::new()
        },
    ]);
    for i in 0..Tags::COUNT {
        r.push(u8::from(j.tags.has(1 << i)).to_string());
    }
    r.push(u8::from(j.flags.has(Flags::INFERRED)).to_string());
    r.push(u8::from(j.flags.incomplete()).to_string());
    r
}

/// Per-ring CSV: header and rows.
pub fn write_ring_csv<W: Write>(
    w: W,
    summary: &Summary,
    rings: &dyn Fn(u32) -> Option<RingInfo>,
) -> io::Result<()> {
    let mut c = csv::Writer::from_writer(w);
    c.write_record(ring_csv_header(false))?;
    write_ring_csv_rows(&mut c, None, summary, rings)?;
    c.flush()
}

/// The per-ring CSV header; `card_column`: a `card` column first (runs of several cards).
pub fn ring_csv_header(card_column: bool) -> Vec<String> {
    let mut h: Vec<String> = [
        "ring",
        "name",
        "size",
        "jobs",
        "complete",
        "incomplete",
        "inferred",
        "fill_avg",
        "fill_max",
        "outstanding_avg",
        "outstanding_max",
        "switches",
        "stalls",
        "faults",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for p in PHASE_NAMES {
        for s in [
            "n", "min_ns", "avg_ns", "p50_ns", "p90_ns", "p99_ns", "max_ns", "share",
        ] {
            h.push(format!("{p}_{s}"));
        }
    }
    for t in Tags::NAMES {
        h.push(format!("{}_jobs", snake(t)));
        h.push(format!("{}_lost_ns", snake(t)));
    }
    if card_column {
        h.insert(0, "card".into());
    }
    h
}

/// The per-ring CSV rows of one summary, each starting with `card` when given.
pub fn write_ring_csv_rows<W: Write>(
    c: &mut csv::Writer<W>,
    card: Option<u32>,
    summary: &Summary,
    rings: &dyn Fn(u32) -> Option<RingInfo>,
) -> io::Result<()> {
    for (id, g) in &summary.rings {
        let info = rings(*id).unwrap_or_default();
        let mut r: Vec<String> = card.map(|c| c.to_string()).into_iter().collect();
        r.extend([
            id.to_string(),
            info.name.clone(),
            info.size.to_string(),
            g.jobs.to_string(),
            g.complete.to_string(),
            g.incomplete.to_string(),
            g.inferred.to_string(),
            if g.fill_n > 0 {
                format!("{:.4}", g.fill_sum / g.fill_n as f64)
            } else {
                String::new()
            },
            if g.fill_n > 0 {
                format!("{:.4}", g.fill_max)
            } else {
                String::new()
            },
            if g.complete > 0 {
                format!("{:.3}", g.outstanding_sum as f64 / g.complete as f64)
            } else {
                String::new()
            },
            g.outstanding_max.to_string(),
            info.switches.to_string(),
            info.stalls.to_string(),
            info.faults.to_string(),
        ]);
        for i in 0..N_PHASES {
            let (min, max) = if g.n[i] == 0 {
                (0, 0)
            } else {
                (g.min[i], g.max[i])
            };
            r.push(g.n[i].to_string());
            r.push(min.to_string());
            r.push(g.avg(i).to_string());
            r.push(g.quantile(i, 0.5).to_string());
            r.push(g.quantile(i, 0.9).to_string());
            r.push(g.quantile(i, 0.99).to_string());
            r.push(max.to_string());
            r.push(format!("{:.6}", g.share(i)));
        }
        for t in 0..Tags::COUNT {
            r.push(g.tag_jobs[t].to_string());
            r.push(g.tag_lost[t].to_string());
        }
        c.write_record(&r)?;
    }
    Ok(())
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

fn ring_label(id: u32, info: &Option<RingInfo>) -> String {
    match info {
        Some(i) if !i.name.is_empty() => format!("{id} ({})", i.name),
        _ => id.to_string(),
    }
}

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
    let mut tw = table();
    writeln!(tw, "PHASE (ms)\tN\tMIN\tAVG\tP50\tP90\tP99\tMAX\t")?;
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

/// Everything the text report prints.
pub struct ReportInput<'a> {
    pub util: &'a [UtilRow],
    pub measurable: &'a crate::measurable::Measurable,
    pub summary: &'a Summary,
    pub stats: &'a JoinStats,
    pub rules: &'a Rules,
    pub rings: &'a dyn Fn(u32) -> Option<RingInfo>,
    pub top: usize,
    pub genesis: u64,
    pub warnings: &'a [String],
    /// `--critical-path`: the window's or the slowest frame's path.
    pub critical: Option<&'a crate::critical::CritReport>,
    /// VM faults and resets on rings no reported job ran on (an imported fault names no
    /// ring or job): counted, not attributed.
    pub unattributed: (u64, u64),
}

pub fn write_report<W: Write>(w: &mut W, r: &ReportInput<'_>) -> io::Result<()> {
    let s = r.summary;
    let st = r.stats;
    let span = if st.first_ns == NONE {
        0
    } else {
        st.last_ns.saturating_sub(st.first_ns)
    };
    writeln!(
        w,
        "grtreport: {} records, {} events over {} s; {}",
        st.records,
        st.events,
        secs(span, 0),
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
    let mut tw = table();
    writeln!(
        tw,
        "\tsubmit_host\tqueue\texec\tcomplete\t|\tgpu_wait\tvm_fault\t"
    )?;
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
        crate::critical::write_text(w, c, r.genesis)?;
    }
    Ok(())
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

fn write_top<W: Write>(w: &mut W, r: &ReportInput<'_>) -> io::Result<()> {
    let top = r.summary.top(r.top);
    section(w, &format!("Top {} blocking classes by time lost", r.top))?;
    if top.is_empty() {
        writeln!(w, "no job was tagged")?;
        return Ok(());
    }
    writeln!(w, "    {JOB_HEADER}")?;
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
            writeln!(w, "    {}", job_line(j, r.genesis))?;
            if let Some(d) = describe_blocker(j) {
                writeln!(w, "      -> {d}")?;
            }
        }
    }
    Ok(())
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
    pub verdict: Option<crate::util::Bound>,
}

/// Utilisation rows of every ring, then every context, over the trace's span.
pub fn util_rows(
    joiner: &crate::joiner::Joiner,
    summary: &Summary,
    rings: &dyn Fn(u32) -> Option<RingInfo>,
) -> Vec<UtilRow> {
    let st = &joiner.stats;
    let span = if st.first_ns == NONE {
        0
    } else {
        st.last_ns.saturating_sub(st.first_ns)
    };
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
            verdict: Some(crate::util::verdict(busy, u.gpu_wait, &u.idle, span)),
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

fn pct_or_dash(x: f64) -> String {
    if x.is_finite() {
        pct(x)
    } else {
        "-".into()
    }
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
    let mut tw = table();
    writeln!(
        tw,
        "\tbusy\tjobs/s\tout_avg\tout_max\tfill_avg\tfill_max\tidle_host\tidle_dep\tidle_sched\tidle_none\t"
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

/// Header of `--interval` rows.
pub const INTERVAL_HEADER: &str = "#  start_s       end_s  ring          busy    jobs/s  out_avg  out_max  fill_max  idle_host  idle_dep idle_sched  idle_none";

/// One `--interval` row (no newline); `measurable`: per phase (PHASE_NAMES order), as
/// `Measurable::phases`: without submit_host idle_host is `-`, without gpu_wait idle_dep.
pub fn interval_line(
    row: &crate::util::IntervalRow,
    genesis: u64,
    rings: &dyn Fn(u32) -> Option<RingInfo>,
    measurable: &[bool; N_PHASES],
) -> String {
    let f = &row.figures;
    let len = row.end.saturating_sub(row.start).max(1) as f64;
    let sh = |v: u64| pct(v as f64 / len);
    let t = |v: u64| {
        let d = v.saturating_sub(genesis);
        format!("{}.{:06}", d / 1_000_000_000, (d % 1_000_000_000) / 1000)
    };
    format!(
        "{:>10} {:>11}  {:<10} {:>8} {:>9.1} {:>8.2} {:>8} {:>9} {:>10} {:>9} {:>10} {:>10}",
        t(row.start),
        t(row.end),
        ring_label(row.ring, &rings(row.ring)),
        sh(f.busy),
        f.ended as f64 * 1e9 / len,
        f.out_area as f64 / len,
        f.out_max,
        if f.fill_max > 0.0 {
            fill_str(f.fill_max)
        } else {
            "-".into()
        },
        if measurable[SUBMIT_HOST] {
            sh(f.idle.host)
        } else {
            "-".into()
        },
        if measurable[GPU_WAIT] {
            sh(f.idle.dep)
        } else {
            "-".into()
        },
        sh(f.idle.sched),
        sh(f.idle_none(row.end.saturating_sub(row.start)))
    )
}

/// A header of lines that several cards share (`--jobs`, `--interval`): a `#card` column
/// first; the header's own `#` moves to it, so the other columns keep their places.
pub fn card_header(header: &str) -> String {
    let rest = header.replacen('#', " ", 1);
    format!("{:<5} {rest}", "#card")
}

/// The line of `--jobs` and `--interval` text where a card that turned up late (beyond the
/// read-ahead of a pipe) starts the card column; a header with it follows.
pub const LATE_CARD_NOTE: &str =
    "# another card turned up while reading: the lines above are the first card's";

/// `--interval` rows as text, as each interval closes: the header once, then a row per ring
/// that has run. One writer serves the engines of all cards; with several, every row
/// starts with its card (like `--jobs` lines), so the cards' rows interleave in time.
pub struct IntervalLines {
    out: Box<dyn Write>,
    /// Flushed after every batch of rows: a live pipe is being watched.
    live: bool,
    header: bool,
    card_column: bool,
}

impl IntervalLines {
    pub fn new(out: Box<dyn Write>, live: bool) -> Self {
        IntervalLines {
            out,
            live,
            header: false,
            card_column: false,
        }
    }

    /// Rows of several cards: a `card` column first.
    pub fn with_card_column(mut self) -> Self {
        self.card_column = true;
        self
    }

    /// Writes `rows` of `card` (times since `genesis`; see [`interval_line`] for
    /// `measurable`).
    pub fn rows(
        &mut self,
        card: Option<u32>,
        rows: &[crate::util::IntervalRow],
        genesis: u64,
        rings: &dyn Fn(u32) -> Option<RingInfo>,
        measurable: &[bool; N_PHASES],
    ) -> io::Result<()> {
        if card.is_some() && !self.card_column {
            // A card turned up while reading (streams concatenated on stdin): the rows from
            // here carry their card; any above are the first card's.
            self.card_column = true;
            if self.header {
                writeln!(self.out, "{LATE_CARD_NOTE}")?;
                self.header = false;
            }
        }
        if !self.header {
            self.header = true;
            if self.card_column {
                writeln!(self.out, "{}", card_header(INTERVAL_HEADER))?;
            } else {
                writeln!(self.out, "{INTERVAL_HEADER}")?;
            }
        }
        for row in rows {
            let line = interval_line(row, genesis, rings, measurable);
            match card.filter(|_| self.card_column) {
                Some(c) => writeln!(self.out, "{c:>5} {line}")?,
                None => writeln!(self.out, "{line}")?,
            }
        }
        if self.live {
            self.out.flush()?;
        }
        Ok(())
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Makes the real job sink: `card_column` when several cards are known; `after_rows` when
/// rows without a card column were already written (a card turned up late).
pub type MakeRows = Box<dyn FnMut(bool, bool) -> io::Result<Box<dyn crate::engine::JobSink>>>;

/// A job sink (`--jobs`, `--csv`) made at its first row, or at the end if there is none, so
/// that its card column follows the cards known by then rather than the stream headers seen
/// at open: two cards' streams concatenated on stdin show the second card only while
/// reading, usually before the first job ends. A card that turns up after rows were written
/// without the column makes a new sink (`after_rows`), which may refuse.
pub struct CardRows {
    make: MakeRows,
    /// The sink, and whether it has the card column.
    inner: Option<(Box<dyn crate::engine::JobSink>, bool)>,
    /// Several cards are known (set as their engines are made).
    several: std::rc::Rc<std::cell::Cell<bool>>,
}

impl CardRows {
    pub fn new(make: MakeRows, several: std::rc::Rc<std::cell::Cell<bool>>) -> Self {
        CardRows {
            make,
            inner: None,
            several,
        }
    }

    fn sink(&mut self, card_column: bool) -> io::Result<&mut Box<dyn crate::engine::JobSink>> {
        let after_rows = match &mut self.inner {
            Some((_, had)) if *had || !card_column => false,
            Some((old, _)) => {
                old.finish()?;
                true
            }
            None => false,
        };
        if after_rows || self.inner.is_none() {
            self.inner = Some(((self.make)(card_column, after_rows)?, card_column));
        }
        Ok(&mut self.inner.as_mut().expect("made above").0)
    }
}

impl crate::engine::JobSink for CardRows {
    fn job(&mut self, job: &Job, names: &Names<'_>) -> io::Result<()> {
        // An engine carries its card once the run has several.
        self.sink(names.card.is_some())?.job(job, names)
    }
    fn finish(&mut self) -> io::Result<()> {
        match &mut self.inner {
            Some((s, _)) => s.finish(),
            None => {
                let several = self.several.get();
                self.sink(several)?.finish()
            }
        }
    }
}
