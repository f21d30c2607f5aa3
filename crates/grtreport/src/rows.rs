//! Rows: one line or CSV row per job (`--jobs`, `--csv`), the per-ring CSV rows and the
//! `--interval` rows, as the sinks the [`Engine`] feeds while it runs.

use std::io::{self, Write};

use crate::columns::{self, snake, CsvRow, Cx};
use crate::engine::{ClosedRows, Engine, IntervalSink, JobSink, Names};
use crate::job::{Job, Origin, Tags, GPU_WAIT, N_PHASES, PHASE_NAMES, SUBMIT_HOST};
use crate::report::{ring_label, RingInfo};
use crate::summary::Summary;
use crate::units::{fill_str, pct, push_u64};

/// Header of `--jobs` lines (from [`COLUMNS`](crate::columns::COLUMNS)).
pub fn job_header() -> &'static str {
    static H: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    H.get_or_init(columns::text_header)
}

/// One `--jobs` line (no newline).
pub fn job_line(j: &Job, origin: Origin) -> String {
    columns::text_line(j, origin)
}

/// Per-job CSV header: every column snake_case.
pub fn job_csv_header() -> Vec<String> {
    columns::csv_header()
}

/// Per-ring CSV: header and rows.
pub fn write_ring_csv<W: Write>(w: W, e: &Engine) -> io::Result<()> {
    let mut c = csv::Writer::from_writer(w);
    c.write_record(ring_csv_header(false))?;
    ring_csv_rows(&mut c, None, &e.summary, &|id| e.ring_info(id))?;
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

/// The per-ring CSV rows of `e`, each starting with its [`card`](Engine::card) when set.
pub fn write_ring_csv_rows<W: Write>(c: &mut csv::Writer<W>, e: &Engine) -> io::Result<()> {
    ring_csv_rows(c, e.card, &e.summary, &|id| e.ring_info(id))
}

/// The per-ring CSV rows of one summary, each starting with `card` when given.
fn ring_csv_rows<W: Write>(
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

/// The per-process CSV header (`FILE.processes.csv`); `card_column`: a `card` column
/// first (runs of several cards).
pub fn process_csv_header(card_column: bool) -> Vec<String> {
    let card = card_column.then(|| "card".to_string());
    card.into_iter()
        .chain(crate::processes::fields().into_iter().map(|f| f.name))
        .collect()
}

/// The per-process CSV rows of `e` (busiest first), each starting with its
/// [`card`](Engine::card) when set. Unknown values are empty cells: the name of a process
/// or ring without a NOTE, busy time where no exec was measured, the classes the recording
/// cannot judge.
pub fn write_process_csv_rows<W: Write>(c: &mut csv::Writer<W>, e: &Engine) -> io::Result<()> {
    use crate::processes::Cell;
    let m = e.measurable();
    let span = e.origin().span_to(e.joiner.stats.last_ns);
    for p in e.process_rows() {
        let mut r: Vec<String> = e.card.map(|c| c.to_string()).into_iter().collect();
        let name = e.ring_info(p.ring).map(|i| i.name).unwrap_or_default();
        r.extend(p.cells(&name, span, &m).into_iter().map(|v| match v {
            Cell::Int(v) => v.map_or(String::new(), |v| v.to_string()),
            Cell::Share(v) => v.map_or(String::new(), |v| format!("{v:.6}")),
            Cell::Text(v) => v.unwrap_or_default().to_string(),
        }));
        c.write_record(&r)?;
    }
    Ok(())
}

/// Header of `--interval` rows.
pub const INTERVAL_HEADER: &str = "#  start_s       end_s  ring          busy    jobs/s  out_avg  out_max  fill_max  idle_host  idle_dep idle_sched  idle_none";

/// One `--interval` row (no newline); `measurable`: per phase (PHASE_NAMES order), as
/// `Measurable::phases`: without submit_host idle_host is `-`, without gpu_wait idle_dep.
pub fn interval_line(
    row: &crate::utilisation::IntervalRow,
    origin: Origin,
    rings: &dyn Fn(u32) -> Option<RingInfo>,
    measurable: &[bool; N_PHASES],
) -> String {
    let f = &row.figures;
    let len = row.end.saturating_sub(row.start).max(1) as f64;
    let sh = |v: u64| pct(v as f64 / len);
    let t = |v: u64| {
        let d = origin.since(v);
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
}

impl IntervalSink for IntervalLines {
    /// Writes the rows of `card` (see [`interval_line`]).
    fn rows(&mut self, card: Option<u32>, closed: ClosedRows<'_>) -> io::Result<()> {
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
        for row in closed.rows {
            let line = interval_line(row, closed.origin, closed.rings, closed.measurable);
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

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Makes the real job sink: `card_column` when several cards are known; `after_rows` when
/// rows without a card column were already written (a card turned up late).
pub type MakeRows = Box<dyn FnMut(bool, bool) -> io::Result<Box<dyn JobSink>>>;

/// A job sink (`--jobs`, `--csv`) made at its first row, or at the end if there is none, so
/// that its card column follows the cards known by then rather than the stream headers seen
/// at open: two cards' streams concatenated on stdin show the second card only while
/// reading, usually before the first job ends. A card that turns up after rows were written
/// without the column makes a new sink (`after_rows`), which may refuse.
pub struct CardRows {
    make: MakeRows,
    /// The sink, and whether it has the card column.
    inner: Option<(Box<dyn JobSink>, bool)>,
    /// Several cards are known (at open, or as their engines are made).
    several: bool,
}

impl CardRows {
    /// `several`: the inputs hold several cards.
    pub fn new(make: MakeRows, several: bool) -> Self {
        CardRows {
            make,
            inner: None,
            several,
        }
    }

    fn sink(&mut self, card_column: bool) -> io::Result<&mut Box<dyn JobSink>> {
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

impl JobSink for CardRows {
    fn job(&mut self, job: &Job, names: &Names<'_>) -> io::Result<()> {
        // An engine carries its card once the run has several.
        self.sink(names.card.is_some())?.job(job, names)
    }
    fn several_cards(&mut self) {
        self.several = true;
    }
    fn finish(&mut self) -> io::Result<()> {
        match &mut self.inner {
            Some((s, _)) => s.finish(),
            None => self.sink(self.several)?.finish(),
        }
    }
}

/// `--jobs`: one line per job.
pub struct JobLines<W: Write> {
    out: W,
    /// The line being written and a cell of it (reused).
    line: Vec<u8>,
    cell: Vec<u8>,
    header: bool,
    /// Several cards: every line starts with its job's card.
    card_column: bool,
}

impl<W: Write> JobLines<W> {
    pub fn new(out: W) -> Self {
        JobLines {
            out,
            line: Vec::new(),
            cell: Vec::new(),
            header: false,
            card_column: false,
        }
    }

    /// Lines of several cards' jobs: a `card` column first.
    pub fn with_card_column(mut self) -> Self {
        self.card_column = true;
        self
    }

    fn header(&mut self) -> io::Result<()> {
        self.header = true;
        if self.card_column {
            writeln!(self.out, "{}", card_header(job_header()))
        } else {
            writeln!(self.out, "{}", job_header())
        }
    }
}

impl<W: Write> JobSink for JobLines<W> {
    fn job(&mut self, job: &Job, names: &Names<'_>) -> io::Result<()> {
        if !self.header {
            self.header()?;
        }
        self.line.clear();
        if let Some(c) = names.card.filter(|_| self.card_column) {
            self.cell.clear();
            push_u64(&mut self.cell, c.into());
            let pad = 5usize.saturating_sub(self.cell.len());
            self.line.resize(pad, b' ');
            self.line.extend_from_slice(&self.cell);
            self.line.push(b' ');
        }
        let cx = Cx::new(names.origin, Some(names.joiner));
        columns::text_row(&mut self.line, &mut self.cell, job, &cx);
        self.line.push(b'\n');
        self.out.write_all(&self.line)
    }
    fn finish(&mut self) -> io::Result<()> {
        if !self.header {
            self.header()?;
        }
        self.out.flush()
    }
}

/// `--csv`: per-job rows with a header.
pub struct JobCsv<W: Write> {
    out: W,
    row: CsvRow,
    /// The record being written (reused).
    line: Vec<u8>,
    /// Several cards: a `card` column first.
    card_column: bool,
}

/// Appends one CSV record of `cells` to `out`, as the `csv` crate's writer does by default
/// (quoted only where a cell holds `,` `"` CR or LF, quotes doubled; `\n` ends it), without
/// its per-byte state machine: millions of job rows, nearly all of them numbers.
pub fn csv_line(out: &mut Vec<u8>, cells: &mut dyn Iterator<Item = &[u8]>) {
    let start = out.len();
    let mut n = 0;
    for c in cells {
        if n > 0 {
            out.push(b',');
        }
        n += 1;
        if c.iter().any(|&b| matches!(b, b',' | b'"' | b'\r' | b'\n')) {
            out.push(b'"');
            for &b in c {
                if b == b'"' {
                    out.push(b'"');
                }
                out.push(b);
            }
            out.push(b'"');
        } else {
            out.extend_from_slice(c);
        }
    }
    if n == 1 && out.len() == start {
        // One empty cell: quoted, or the record would read as an empty line.
        out.extend_from_slice(b"\"\"");
    }
    out.push(b'\n');
}

impl<W: Write> JobCsv<W> {
    /// Rows into `w`, after the header.
    pub fn new(w: W) -> io::Result<Self> {
        Self::with_cards(w, false)
    }

    /// `card_column`: the rows of several cards' jobs, each starting with its card.
    pub fn with_cards(mut out: W, card_column: bool) -> io::Result<Self> {
        let mut h = job_csv_header();
        if card_column {
            h.insert(0, "card".into());
        }
        let mut line = Vec::new();
        csv_line(&mut line, &mut h.iter().map(|c| c.as_bytes()));
        out.write_all(&line)?;
        Ok(JobCsv {
            out,
            row: CsvRow::default(),
            line,
            card_column,
        })
    }
}

impl<W: Write> JobSink for JobCsv<W> {
    fn job(&mut self, job: &Job, names: &Names<'_>) -> io::Result<()> {
        let lead = self.card_column.then(|| names.card.map(u64::from));
        let cx = Cx::new(names.origin, Some(names.joiner));
        let line = &mut self.line;
        line.clear();
        self.row
            .write(job, &cx, lead, |cells| csv_line(line, cells));
        self.out.write_all(line)
    }
    fn finish(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// One sink fed by the engines of several cards (`--jobs`, `--csv` of a multi-card run).
pub struct SharedSink(pub std::rc::Rc<std::cell::RefCell<dyn JobSink>>);

impl JobSink for SharedSink {
    fn job(&mut self, job: &Job, names: &Names<'_>) -> io::Result<()> {
        self.0.borrow_mut().job(job, names)
    }
    fn several_cards(&mut self) {
        self.0.borrow_mut().several_cards();
    }
    fn finish(&mut self) -> io::Result<()> {
        self.0.borrow_mut().finish()
    }
}

#[cfg(test)]
mod tests {
    use super::csv_line;

    /// The same bytes as the `csv` crate's default writer, for cells with every special byte.
    #[test]
    fn csv_line_writes_what_the_csv_crate_writes() {
        let pieces: [&[u8]; 9] = [
            b"", b"1", b"gfx", b"a,b", b"q\"t", b"cr\r", b"lf\n", b" sp ", b"\"\"",
        ];
        let mut rows: Vec<Vec<&[u8]>> = vec![vec![b""], vec![b"", b""], vec![b"x"]];
        for a in pieces {
            for b in pieces {
                rows.push(vec![a, b, b"9"]);
            }
        }
        for r in rows {
            let mut want = csv::Writer::from_writer(Vec::new());
            want.write_record(&r).unwrap();
            let want = want.into_inner().unwrap();
            let mut got = Vec::new();
            csv_line(&mut got, &mut r.iter().copied());
            assert_eq!(got, want, "{r:?}");
        }
    }
}
