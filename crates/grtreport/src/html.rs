//! `--html FILE`: one self-contained page (no network access when viewed: the script, the
//! styles and the data are inline) with the report's tables and verdicts, a zoomable and
//! pannable timeline of rings and contexts, per-ring plots over time and job details.
//!
//! Large traces stay usable: the page carries at most `max_jobs` jobs, those of the
//! earliest window that fits (every job that began before a cut-off time), and says how
//! many it left out; the plots cover the whole trace at a level of detail that halves as it
//! grows (at most [`MAX_BUCKETS`] points per ring). Memory is bounded by those two limits.
//!
//! Several cards make one page with a section per card (its own verdicts, tables, timeline,
//! plots and job details; times share one origin): each card's builder writes its data
//! element into the page through an [`HtmlJoint`], the last one the script.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BinaryHeap};
use std::io::{self, Write};
use std::rc::Rc;

use grtrace_format::Event;
use grtrace_format::{Lost, RecordView};

use crate::engine::{Engine, Timeline};
use crate::job::{Job, Origin, Tags, NONE, N_PHASES, PHASE_NAMES};
use crate::joiner::Joiner;
use crate::jsonw;
use crate::order::order_by_key;

use crate::timeline::{self, Names, Seen};

const PAGE_CSS: &str = include_str!("html/page.css");
const PAGE_JS: &str = include_str!("html/page.js");

/// Points per ring in the plots: buckets double in width past this.
pub const MAX_BUCKETS: usize = 1000;
/// Default number of jobs the page carries.
pub const DEFAULT_MAX_JOBS: usize = 20_000;
/// Messages and instant markers the page carries (later ones are counted).
const MAX_MARKS: usize = 5_000;
/// Width of the first plot buckets.
const FIRST_BUCKET_NS: u64 = 100_000;
/// Latency bins: 4 per octave (about 19 % wide), from 1 ns to 2^48 ns.
const BINS: usize = 48 * 4;

/// What the page is about.
#[derive(Clone, Debug)]
pub struct HtmlConfig {
    pub card: u32,
    pub driver: String,
    /// Input as given on the command line, for the grtparse commands of the job details.
    pub input: String,
    /// Jobs the page carries at most.
    pub max_jobs: usize,
}

fn bin_of(ns: u64) -> usize {
    if ns == 0 {
        return 0;
    }
    let l = (ns as f64).log2() * 4.0;
    (l as usize).min(BINS - 1)
}

/// Geometric middle of a bin, in ns.
fn bin_mid(b: usize) -> u64 {
    2f64.powf((b as f64 + 0.5) / 4.0) as u64
}

#[derive(Clone)]
struct Bucket {
    busy: u64,
    outstanding: u32,
    /// Highest fill in 1/1000 of the ring (u32::MAX = unknown).
    fill: u32,
    queue: Box<[u32; BINS]>,
    exec: Box<[u32; BINS]>,
}

impl Default for Bucket {
    fn default() -> Self {
        Bucket {
            busy: 0,
            outstanding: 0,
            fill: u32::MAX,
            queue: Box::new([0; BINS]),
            exec: Box::new([0; BINS]),
        }
    }
}

impl Bucket {
    fn merge(&mut self, o: &Bucket) {
        self.busy += o.busy;
        self.outstanding = self.outstanding.max(o.outstanding);
        self.fill = timeline::max_fill(self.fill, o.fill);
        for i in 0..BINS {
            self.queue[i] += o.queue[i];
            self.exec[i] += o.exec[i];
        }
    }
}

fn quantile(h: &[u32; BINS], q: f64) -> Option<u64> {
    let n: u64 = h.iter().map(|&c| c as u64).sum();
    if n == 0 {
        return None;
    }
    let want = ((n as f64) * q).ceil().max(1.0) as u64;
    let mut seen = 0;
    for (b, &c) in h.iter().enumerate() {
        seen += c as u64;
        if seen >= want {
            return Some(bin_mid(b));
        }
    }
    None
}

/// Per-ring plot data over the whole trace, at a width that doubles to stay within
/// [`MAX_BUCKETS`].
#[derive(Default)]
struct Series {
    buckets: Vec<Bucket>,
}

/// The page the builders of several cards share (one per card's engine, writing to the
/// same output one after the other): the first to finish writes the page's head, each its
/// card's data element, the last the script.
#[derive(Debug, Default)]
pub struct HtmlJoint {
    /// Several cards: data elements `grt-data-cardN` of class `grt-data`, one section each.
    several: bool,
    started: Cell<bool>,
    /// Builders not finished yet.
    open: Cell<u32>,
    /// `card0 (amdgpu)` of every card, for the title.
    cards: RefCell<Vec<String>>,
}

impl HtmlJoint {
    /// `several`: the page shows more than one card.
    pub fn new(several: bool) -> Self {
        HtmlJoint {
            several,
            ..HtmlJoint::default()
        }
    }
}

/// A job the page carries, ordered by first time (the latest is evicted first).
struct Carried(Job);

order_by_key!(Carried, |c: &Carried| (c.0.first_time(), c.0.key));

/// The page builder; register it with [`Engine::add_timeline`]. The page is written by
/// [`Timeline::finish`].
pub struct Html<W: Write> {
    out: W,
    cfg: HtmlConfig,
    /// The run's time origin, from the joiner at the first record.
    origin: Origin,
    names: Names,
    jobs: BinaryHeap<Carried>,
    /// Jobs left out, and the earliest first time among them (the window's end).
    left_out: u64,
    cutoff: u64,
    /// (time, pid, text)
    msgs: Vec<(u64, u32, String)>,
    /// (time, ring, code, ctx, seqno)
    marks: Vec<(u64, u32, u16, u32, u64)>,
    marks_left_out: u64,
    width: u64,
    series: BTreeMap<u32, Series>,
    lost: Vec<(u64, u64)>,
    joint: Rc<HtmlJoint>,
}

impl<W: Write> Html<W> {
    /// The page of one card on `out`.
    pub fn new(out: W, cfg: HtmlConfig) -> Self {
        Self::in_joint(out, cfg, Rc::new(HtmlJoint::new(false)))
    }

    /// The section of one card of a page `joint` shares with other cards (their builders
    /// write to the same `out`).
    pub fn in_joint(out: W, cfg: HtmlConfig, joint: Rc<HtmlJoint>) -> Self {
        joint.open.set(joint.open.get() + 1);
        joint
            .cards
            .borrow_mut()
            .push(crate::report::card_name(cfg.card, &cfg.driver));
        Html {
            joint,
            out,
            cfg,
            origin: Origin::UNKNOWN,
            names: Names::default(),
            jobs: BinaryHeap::new(),
            left_out: 0,
            cutoff: NONE,
            msgs: Vec::new(),
            marks: Vec::new(),
            marks_left_out: 0,
            width: FIRST_BUCKET_NS,
            series: BTreeMap::new(),
            lost: Vec::new(),
        }
    }

    fn rel(&self, t: u64) -> u64 {
        self.origin.since(t)
    }

    /// The bucket of relative time `rel` on `ring`, halving the resolution as needed.
    fn bucket(&mut self, ring: u32, rel: u64) -> &mut Bucket {
        while rel / self.width >= MAX_BUCKETS as u64 {
            self.width *= 2;
            for s in self.series.values_mut() {
                let old = std::mem::take(&mut s.buckets);
                let mut it = old.into_iter();
                while let Some(mut a) = it.next() {
                    if let Some(b) = it.next() {
                        a.merge(&b);
                    }
                    s.buckets.push(a);
                }
            }
        }
        let i = (rel / self.width) as usize;
        let s = self.series.entry(ring).or_default();
        if s.buckets.len() <= i {
            s.buckets.resize_with(i + 1, Bucket::default);
        }
        &mut s.buckets[i]
    }

    fn carry(&mut self, job: &Job) {
        let first = job.first_time();
        if first == NONE {
            self.left_out += 1;
            return;
        }
        if first >= self.cutoff {
            self.left_out += 1;
            return;
        }
        self.jobs.push(Carried(job.clone()));
        if self.jobs.len() > self.cfg.max_jobs {
            let Carried(j) = self.jobs.pop().expect("over the limit");
            self.left_out += 1;
            self.cutoff = self.cutoff.min(j.first_time());
        }
    }

    fn write_page(&mut self, engine: &Engine, warnings: &[String]) -> io::Result<()> {
        let o = &mut self.out;
        if !self.joint.started.replace(true) {
            let title = format!(
                "grtreport: {} {}",
                self.joint.cards.borrow().join(", "),
                self.cfg.input
            );
            o.write_all(
                b"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>",
            )?;
            html_text(o, &title)?;
            o.write_all(b"</title>\n<style>\n")?;
            o.write_all(PAGE_CSS.as_bytes())?;
            o.write_all(b"</style></head>\n<body>\n<noscript>This page draws its timeline with JavaScript; the text report is below.</noscript>\n")?;
        }
        // Known by now: every card's builder registered before any finished (a card that
        // turned up in concatenated streams too).
        if self.joint.several || self.joint.cards.borrow().len() > 1 {
            writeln!(
                o,
                "<script class=\"grt-data\" id=\"grt-data-{}\" type=\"application/json\">",
                grtrace_format::Card(self.cfg.card)
            )?;
        } else {
            o.write_all(b"<script id=\"grt-data\" type=\"application/json\">\n")?;
        }
        self.write_data(engine, warnings)?;
        let o = &mut self.out;
        o.write_all(b"\n</script>\n")?;
        let open = self.joint.open.get().saturating_sub(1);
        self.joint.open.set(open);
        if open == 0 {
            o.write_all(b"<script>\n")?;
            o.write_all(PAGE_JS.as_bytes())?;
            o.write_all(b"</script>\n</body></html>\n")?;
        }
        o.flush()
    }

    fn write_data(&mut self, engine: &Engine, warnings: &[String]) -> io::Result<()> {
        let st = &engine.joiner.stats;
        let span = engine.joiner.origin().span_to(st.last_ns);
        let mut report = Vec::new();
        crate::output::write_report(&mut report, engine, 10, warnings)?;
        let jobs = std::mem::take(&mut self.jobs).into_sorted_vec();
        let g = self.origin;
        let o = &mut self.out;
        write!(o, "{{\"card\":{},\"driver\":", self.cfg.card)?;
        jsonw::string(o, self.cfg.driver.as_bytes())?;
        o.write_all(b",\"input\":")?;
        jsonw::string(o, self.cfg.input.as_bytes())?;
        write!(
            o,
            ",\"span_ns\":{span},\"records\":{},\"events\":{},\"lost_records\":{},\"jobs_total\":{},\"jobs_left_out\":{},\"window_end_ns\":{},\"marks_left_out\":{},\"bucket_ns\":{}",
            st.records,
            st.events,
            st.lost_records,
            jobs.len() as u64 + self.left_out,
            self.left_out,
            if self.cutoff == NONE { span + 1 } else { g.since(self.cutoff) },
            self.marks_left_out,
            self.width
        )?;
        o.write_all(b",\"phases\":[")?;
        for (i, p) in PHASE_NAMES.iter().enumerate() {
            if i > 0 {
                o.write_all(b",")?;
            }
            write!(o, "\"{p}\"")?;
        }
        o.write_all(b"],\"tags\":[")?;
        for (i, t) in Tags::NAMES.iter().enumerate() {
            if i > 0 {
                o.write_all(b",")?;
            }
            write!(o, "\"{t}\"")?;
        }
        o.write_all(b"],\"rings\":[")?;
        let mut ring_ids: Vec<u32> = self.names.rings.keys().copied().collect();
        ring_ids.extend(self.series.keys());
        ring_ids.extend(jobs.iter().map(|c| c.0.key.ring));
        ring_ids.sort_unstable();
        ring_ids.dedup();
        for (i, r) in ring_ids.iter().enumerate() {
            if i > 0 {
                o.write_all(b",")?;
            }
            write!(o, "{{\"id\":{r},\"label\":")?;
            jsonw::string(o, self.names.ring_label(*r).as_bytes())?;
            write!(o, ",\"size\":{}}}", self.names.ring_size(*r))?;
        }
        // Jobs: one array each, of the columns named in job_columns (crate::columns: times
        // in ns since the first record, -1 = not seen; unmeasured phases null).
        o.write_all(b"],\n\"job_columns\":")?;
        crate::columns::write_html_names(o)?;
        o.write_all(b",\n\"jobs\":[")?;
        let cx = crate::columns::Cx::new(g, None);
        let mut cell = Vec::new();
        for (i, Carried(j)) in jobs.iter().enumerate() {
            if i > 0 {
                o.write_all(b",\n")?;
            }
            crate::columns::write_html_row(o, &mut cell, j, &cx)?;
        }
        o.write_all(b"],\n\"msgs\":[")?;
        for (i, (t, pid, text)) in self.msgs.iter().enumerate() {
            if i > 0 {
                o.write_all(b",")?;
            }
            write!(o, "[{},{pid},", g.since(*t))?;
            jsonw::string(o, text.as_bytes())?;
            o.write_all(b"]")?;
        }
        o.write_all(b"],\n\"marks\":[")?;
        for (i, (t, ring, code, ctx, seqno)) in self.marks.iter().enumerate() {
            if i > 0 {
                o.write_all(b",")?;
            }
            let name = Event(*code).name().unwrap_or("EVENT");
            write!(o, "[{},{ring},\"{name}\",{ctx},{seqno}]", g.since(*t))?;
        }
        o.write_all(b"],\n\"lost\":[")?;
        for (i, (t, n)) in self.lost.iter().enumerate() {
            if i > 0 {
                o.write_all(b",")?;
            }
            write!(o, "[{},{n}]", g.since(*t))?;
        }
        // Series per ring: busy %, outstanding, fill %, queue and exec p50/p90/p99 (ns).
        o.write_all(b"],\n\"series\":{")?;
        let width = self.width;
        for (i, (ring, s)) in self.series.iter().enumerate() {
            if i > 0 {
                o.write_all(b",\n")?;
            }
            write!(o, "\"{ring}\":[")?;
            for (k, b) in s.buckets.iter().enumerate() {
                if k > 0 {
                    o.write_all(b",")?;
                }
                let busy = (b.busy as f64 * 100.0 / width as f64).min(100.0);
                write!(o, "[{busy:.1},{},", b.outstanding)?;
                if b.fill == u32::MAX {
                    o.write_all(b"null")?;
                } else {
                    write!(o, "{:.1}", b.fill as f64 / 10.0)?;
                }
                for h in [&b.queue, &b.exec] {
                    for q in [0.5, 0.9, 0.99] {
                        match quantile(h, q) {
                            Some(v) => write!(o, ",{v}")?,
                            None => o.write_all(b",null")?,
                        }
                    }
                }
                o.write_all(b"]")?;
            }
            o.write_all(b"]")?;
        }
        o.write_all(b"},\n\"groups\":[")?;
        // Per ring and overall: the report's numbers, for the tables.
        let s = &engine.summary;
        let mut groups: Vec<(String, &crate::summary::Group)> = s
            .rings
            .iter()
            .map(|(id, g)| (self.names.ring_label(*id), g))
            .collect();
        groups.extend(s.ctxs.iter().map(|(id, g)| (format!("ctx {id}"), g)));
        groups.push(("all".to_string(), &s.all));
        let meas = engine.measurable();
        for (i, (label, gr)) in groups.iter().enumerate() {
            if i > 0 {
                o.write_all(b",\n")?;
            }
            o.write_all(b"{\"label\":")?;
            jsonw::string(o, label.as_bytes())?;
            write!(
                o,
                ",\"jobs\":{},\"complete\":{},\"incomplete\":{},\"inferred\":{},\"tagged\":{},\"tag_jobs\":[",
                gr.jobs, gr.complete, gr.incomplete, gr.inferred, gr.tagged
            )?;
            // A class not judged (see the text report's Blocking Classes) is null, never 0.
            for (t, n) in gr.tag_jobs.iter().enumerate() {
                let sep = if t > 0 { "," } else { "" };
                if crate::report::class_judged(&meas, gr, t).is_some() {
                    write!(o, "{sep}{n}")?;
                } else {
                    write!(o, "{sep}null")?;
                }
            }
            o.write_all(b"],\"phases\":[")?;
            for p in 0..N_PHASES {
                if p > 0 {
                    o.write_all(b",")?;
                }
                write!(
                    o,
                    "[{},{},{},{},{},{}]",
                    gr.n[p],
                    gr.avg(p),
                    gr.quantile(p, 0.5),
                    gr.quantile(p, 0.9),
                    gr.quantile(p, 0.99),
                    if gr.n[p] == 0 { 0 } else { gr.max[p] }
                )?;
            }
            o.write_all(b"]}")?;
        }
        // The per-ring verdicts (the text report's lines: GPU-, host- or dependency-bound),
        // then the structural hints: the page's "Verdicts" shows both.
        o.write_all(b"],\n\"verdicts\":[")?;
        let verdicts = engine.with_report(0, warnings, |r| {
            r.util
                .iter()
                .filter(|u| u.verdict.is_some())
                .map(crate::report::verdict_line)
                .collect::<Vec<_>>()
        });
        for (i, v) in verdicts.iter().enumerate() {
            if i > 0 {
                o.write_all(b",")?;
            }
            jsonw::string(o, v.as_bytes())?;
        }
        o.write_all(b"],\n\"hints\":[")?;
        let hints = engine.with_report(0, warnings, crate::report::hints);
        for (i, h) in hints.iter().enumerate() {
            if i > 0 {
                o.write_all(b",")?;
            }
            jsonw::string(o, h.as_bytes())?;
        }
        o.write_all(b"],\"warnings\":[")?;
        for (i, w) in warnings.iter().enumerate() {
            if i > 0 {
                o.write_all(b",")?;
            }
            jsonw::string(o, w.as_bytes())?;
        }
        o.write_all(b"],\n\"report\":")?;
        jsonw::string(o, &report)?;
        o.write_all(b"}")
    }
}

/// Text for an HTML element's content.
fn html_text<W: Write + ?Sized>(w: &mut W, s: &str) -> io::Result<()> {
    for c in s.chars() {
        match c {
            '<' => w.write_all(b"&lt;")?,
            '>' => w.write_all(b"&gt;")?,
            '&' => w.write_all(b"&amp;")?,
            c => write!(w, "{c}")?,
        }
    }
    Ok(())
}

impl<W: Write> Timeline for Html<W> {
    fn record(
        &mut self,
        rec: &RecordView<'_>,
        joiner: &Joiner,
        _watermark: Option<u64>,
    ) -> io::Result<()> {
        let t = rec.time_ns();
        if !self.origin.is_known() {
            self.origin = joiner.origin();
        }
        match self.names.see(rec, joiner) {
            Seen::Mark(m) => {
                if self.marks.len() < MAX_MARKS && t < self.cutoff {
                    self.marks.push((t, m.ring, m.code, m.ctx, m.seqno));
                } else {
                    self.marks_left_out += 1;
                }
            }
            Seen::Ring {
                ring,
                outstanding,
                fill,
            } => {
                let rel = self.rel(t);
                let b = self.bucket(ring, rel);
                b.outstanding = b.outstanding.max(outstanding);
                b.fill = timeline::max_fill(b.fill, fill);
            }
            Seen::Msg(m) => {
                if self.msgs.len() < MAX_MARKS && t < self.cutoff {
                    let text = String::from_utf8_lossy(&m.text).into_owned();
                    self.msgs.push((t, m.pid, text));
                } else {
                    self.marks_left_out += 1;
                }
            }
            Seen::Lost(l) => self.lost(&l, joiner)?,
            Seen::Named(_) | Seen::Nothing => {}
        }
        Ok(())
    }

    fn lost(&mut self, l: &Lost, joiner: &Joiner) -> io::Result<()> {
        if self.lost.len() < MAX_MARKS {
            self.lost.push((joiner.stats.last_ns, l.count));
        } else {
            self.marks_left_out += 1;
        }
        Ok(())
    }

    fn job(&mut self, job: &Job) -> io::Result<()> {
        if self.origin.is_known() {
            let ring = job.key.ring;
            if job.start != NONE && job.end != NONE {
                let (s, e) = (self.rel(job.start), self.rel(job.end));
                // Grow the series to the job's end first, so the width is final.
                self.bucket(ring, e);
                let width = self.width;
                let series = self.series.get_mut(&ring).expect("bucket made it");
                timeline::spread(s, e, width, |b, ns| {
                    if let Some(x) = series.buckets.get_mut(b as usize) {
                        x.busy += ns;
                    }
                });
            }
            if !job.flags.incomplete() {
                let at = self.rel(job.first_time());
                let (q, x) = (job.phases.queue, job.phases.exec);
                let b = self.bucket(ring, at);
                b.queue[bin_of(q)] += 1;
                b.exec[bin_of(x)] += 1;
            }
        }
        self.carry(job);
        Ok(())
    }

    fn finish(&mut self, engine: &Engine, warnings: &[String]) -> io::Result<()> {
        // Markers past the window of carried jobs are not drawn.
        let cutoff = self.cutoff;
        let before = self.marks.len() + self.msgs.len();
        self.marks.retain(|m| m.0 < cutoff);
        self.msgs.retain(|m| m.0 < cutoff);
        self.marks_left_out += (before - self.marks.len() - self.msgs.len()) as u64;
        self.write_page(engine, warnings)
    }
}
