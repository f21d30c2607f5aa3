//! One pass over the merged trace: every item is filtered ([`Filters`]), printed as a line,
//! copied into the binary dump ([`Dump`]) and counted for the summary ([`Pass`]).

use std::fs::File;
use std::io::{self, Write};
use std::ops::ControlFlow;
use std::os::unix::fs::FileExt;

use grtrace_format::abi;
use grtrace_format::record::{Body, EventBody, Lost, Stamp, StreamHeader};
use grtrace_format::view::RecordView;
use grtrace_format::RecordType;
use grtrace_format::{encode, Endian, Item, Native, RawItem, RunSummary, Trace};

use crate::cli::{Cli, UsageError};
use crate::out::Out;
use crate::par::Parallel;
use crate::printer::{slot_by_name, slot_of, Line, Render, NSLOTS, SLOT_NOTE_BASE};
use crate::stats::Stats;

/// Writes `grtparse: ...` to `err` on one line, whatever file names the message holds.
macro_rules! say {
    ($err:expr, $($t:tt)*) => {
        writeln!($err, "{}", grtrace_cli::one_line(&format!($($t)*)))
    };
}
pub(crate) use say;

/// Filters compiled from the command line.
pub(crate) struct Filters {
    /// Slot → shown.
    show: [bool; NSLOTS],
    ctx: Vec<u32>,
    /// `--ring`; names are learnt from the ring notes as the pass goes.
    pub(crate) rings: grtrace_cli::RingSelect,
    pid: Vec<u32>,
    /// Seconds window, resolved against genesis once it is known.
    window: Option<(u64, u64)>,
    /// Event filters (ctx/ring/pid) present.
    any_event_filter: bool,
    /// Anything at all filtered (-a/-A/-w/ctx/ring/pid).
    pub(crate) any: bool,
}

/// The counting slots of event or note names (`-a`, `--exclude`, `-F`).
pub(crate) fn slots_of(names: &[String], opt: &str) -> Result<Vec<usize>, UsageError> {
    names
        .iter()
        .filter(|n| !n.is_empty())
        .map(|n| {
            slot_by_name(n.trim()).ok_or_else(|| {
                UsageError(format!(
                    "{opt}: unknown event '{n}' (names: {}, PROCESS RING MSG CLOCK_SYNC LOST STREAM_INFO, EVENT_<n>)",
                    grtrace_format::Event::known().filter_map(|e| e.name()).collect::<Vec<_>>().join(" ")
                ))
            })
        })
        .collect()
}

impl Filters {
    pub(crate) fn new(cli: &Cli) -> Result<Filters, UsageError> {
        let mut show = [true; NSLOTS];
        let only = slots_of(&cli.events, "-a")?;
        let mask = cli
            .mask
            .as_deref()
            .map(|m| grtrace_cli::parse_hex_mask("-A", m))
            .transpose()
            .map_err(UsageError)?;
        if !only.is_empty() || mask.is_some() {
            show = [false; NSLOTS];
            for s in only {
                show[s] = true;
            }
            if let Some(m) = mask {
                // Like blkparse: the mask selects events; notes stay unless -a names some.
                for (code, shown) in show[..SLOT_NOTE_BASE.min(64)].iter_mut().enumerate() {
                    *shown |= m & (1 << code) != 0;
                }
                if cli.events.is_empty() {
                    show[SLOT_NOTE_BASE..].fill(true);
                }
            }
        }
        for s in slots_of(&cli.exclude, "--exclude")? {
            show[s] = false;
        }
        let window = cli.window.window.map(|w| (w.start, w.end));
        let f = &cli.filter;
        let any_event_filter = f.any();
        let any = any_event_filter
            || window.is_some()
            || !cli.events.is_empty()
            || mask.is_some()
            || !cli.exclude.is_empty();
        Ok(Filters {
            show,
            ctx: f.ctx.clone(),
            rings: grtrace_cli::RingSelect::new(&f.ring),
            pid: f.pid.clone(),
            window,
            any_event_filter,
            any,
        })
    }

    /// Whether an event passes (its slot is shown and it is in the window).
    #[inline]
    fn event_passes(&self, slot: usize, in_window: bool, ev: &EventBody, pid: u32) -> bool {
        let mut pass = self.show[slot] && in_window;
        if pass && self.any_event_filter {
            pass = (self.ctx.is_empty() || self.ctx.contains(&ev.ctx))
                && (self.pid.is_empty() || self.pid.contains(&pid))
                && (!self.rings.is_active() || self.rings.selects(ev.ring));
        }
        pass
    }

    /// Whether a note passes: LOST always (losses are never filtered out), messages and
    /// process notes by pid too.
    #[inline]
    fn note_passes(&self, slot: usize, in_window: bool, rt: RecordType, pid: u32) -> bool {
        rt == RecordType::NOTE_LOST
            || (self.show[slot]
                && in_window
                && ((rt != RecordType::NOTE_MSG && rt != RecordType::NOTE_PROCESS)
                    || self.pid.is_empty()
                    || self.pid.contains(&pid)))
    }
}

/// Where `-d` writes; `file` (a regular file) lets the header be rewritten at the end.
pub(crate) struct Dump {
    pub(crate) out: Out,
    header: StreamHeader,
    file: Option<File>,
    scratch: Vec<u8>,
}

impl Dump {
    /// A merged stream of the first input's card, its header written: SEQ_CHECKED when the
    /// inputs were (or filters leave holes, or the header cannot be rewritten at the end).
    pub(crate) fn new(
        out: Out,
        first: &StreamHeader,
        seq_checked: bool,
        file: Option<File>,
    ) -> Dump {
        let mut h = StreamHeader::new(abi::CPU_MERGED, first.card, &first.driver);
        h.flags = abi::STREAM_MERGED
            | (first.flags & abi::STREAM_SIMULATED)
            | if seq_checked || file.is_none() {
                abi::STREAM_SEQ_CHECKED
            } else {
                0
            };
        h.clock_id = first.clock_id;
        h.session_id = first.session_id;
        h.anchor_realtime_ns = first.anchor_realtime_ns;
        h.anchor_clock_ns = first.anchor_clock_ns;
        let mut out = out;
        out.bytes(&h.encode());
        Dump {
            out,
            header: h,
            file,
            scratch: Vec::with_capacity(2048),
        }
    }

    /// A record in native byte order (re-encoded when it is not).
    fn record(&mut self, r: &RecordView<'_>) {
        if r.endian() == Endian::NATIVE {
            self.out.bytes(r.bytes());
        } else {
            self.encoded(&r.stamp(), &r.body());
        }
    }

    /// A sequence gap, as a NOTE_LOST (source gap) at the gap's end.
    fn gap(&mut self, g: Lost) {
        let st = Stamp {
            cpu: g.cpu,
            pid: 0,
            time_ns: g.last_ns,
            seq: 0,
        };
        self.encoded(&st, &Body::Lost(g));
    }

    fn encoded(&mut self, st: &Stamp, body: &Body<'_>) {
        self.scratch.clear();
        encode(st, body, Endian::NATIVE, &mut self.scratch);
        self.out.bytes(&self.scratch);
    }

    /// Flushes the dump. When sequence gaps were written into it as NOTE_LOST (source 3),
    /// a regular file's header is marked sequence-checked, so that a reader does not count
    /// them twice.
    pub(crate) fn finish(&mut self, gaps_written: bool) -> io::Result<()> {
        self.out.finish()?;
        match &self.file {
            Some(f) if gaps_written && self.header.flags & abi::STREAM_SEQ_CHECKED == 0 => {
                self.header.flags |= abi::STREAM_SEQ_CHECKED;
                f.write_all_at(&self.header.encode(), 0)
            }
            _ => Ok(()),
        }
    }
}

/// Continue unless `out` failed (the pass then stops: the end of the run says why).
#[inline]
fn go_on(out: &Out) -> ControlFlow<()> {
    if out.failed() {
        ControlFlow::Break(())
    } else {
        ControlFlow::Continue(())
    }
}

/// The state of one pass: outputs, filters, counts, and where time 0 is.
pub(crate) struct Pass<'e> {
    pub(crate) render: Render,
    pub(crate) text: Option<Out>,
    /// Text lines formatted on worker threads ([`Pass::parallel`]).
    par: Option<Parallel>,
    pub(crate) dump: Option<Dump>,
    pub(crate) stats: Stats,
    pub(crate) filters: Filters,
    pub(crate) progress: grtrace_cli::Progress,
    /// Input bytes done, for the progress line.
    pub(crate) done_bytes: u64,
    /// Card of the stream the last item came from (lines carry their card).
    card: u32,
    /// Time of the first item: time 0 of the lines and of the `-w` window.
    genesis: Option<u64>,
    window_ns: (u64, u64),
    /// Default text, no filters, no dump: native-endian events take the fast path.
    fast_text: bool,
    verbose: bool,
    gaps_told: u32,
    /// Headers found inside inputs that started a card or session (FORMAT.md §6): checked
    /// for a clean end like the inputs' own.
    pub(crate) embedded: Vec<StreamHeader>,
    /// Where messages go.
    pub(crate) err: &'e mut dyn Write,
}

impl<'e> Pass<'e> {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        render: Render,
        text: Option<Out>,
        dump: Option<Dump>,
        filters: Filters,
        progress: grtrace_cli::Progress,
        done_bytes: u64,
        cli: &Cli,
        card: u32,
        err: &'e mut dyn Write,
    ) -> Pass<'e> {
        let fast_text = text.is_some()
            && dump.is_none()
            && !filters.any
            && !cli.per_process
            && render.default_fmt.is_none()
            && render.per_slot.iter().all(|f| f.is_none());
        let mut stats = Stats::new(cli.per_process);
        stats.set_card(card);
        Pass {
            render,
            text,
            par: None,
            dump,
            stats,
            filters,
            progress,
            done_bytes,
            card,
            genesis: None,
            window_ns: (0, u64::MAX),
            fast_text,
            verbose: cli.verbose,
            gaps_told: 0,
            embedded: Vec::new(),
            err,
        }
    }

    /// Formats the text on `workers` threads besides this one, in batches of `batch_lines`
    /// lines ([`crate::par`]); without text, or when no thread starts, it stays here.
    pub(crate) fn parallel(&mut self, workers: usize, batch_lines: usize) {
        if self.text.is_some() {
            self.par = Parallel::start(&self.render, workers, batch_lines);
        }
    }

    /// Reads the whole trace. `-q -O -d` without filters (`dump_only`) copies runs of native
    /// event records straight from the mapping into the dump.
    pub(crate) fn run(&mut self, trace: &mut Trace, dump_only: bool) -> RunSummary {
        let summary = self.merge(trace, dump_only);
        // The lines still with the workers, written before anything that follows them.
        if let (Some(p), Some(o)) = (self.par.take(), self.text.as_mut()) {
            let write = !o.failed();
            p.finish(self.render.genesis, o, write);
        }
        summary
    }

    fn merge(&mut self, trace: &mut Trace, dump_only: bool) -> RunSummary {
        if dump_only {
            let card = self.card;
            trace.for_each_raw(|raw| match raw {
                RawItem::Events { bytes, .. } => self.event_run(bytes),
                RawItem::Item(i) => self.rare_item(card, i),
            })
        } else {
            trace.for_each_card(|card, i| self.item(card, i))
        }
    }

    /// Native event records (consecutive ones of one CPU file): one copy into the dump.
    /// Not inlined: in the merge loop its body costs more (register pressure in the loop:
    /// 177 against 163 instructions per event on the 1M bench) than one call per run.
    #[inline(never)]
    fn event_run(&mut self, bytes: &[u8]) -> ControlFlow<()> {
        self.done_bytes += bytes.len() as u64;
        self.progress.update(self.done_bytes);
        match self.dump.as_mut() {
            Some(d) => {
                d.out.bytes(bytes);
                go_on(&d.out)
            }
            None => ControlFlow::Continue(()),
        }
    }

    /// An item between runs of events (notes, the first event of a run), kept out of the
    /// dump-only pass's merge loop like [`Self::event_run`].
    #[inline(never)]
    fn rare_item(&mut self, card: u32, item: Item<'_>) -> ControlFlow<()> {
        self.item(card, item)
    }

    /// A merged item of card `card`.
    #[inline]
    fn item(&mut self, card: u32, item: Item<'_>) -> ControlFlow<()> {
        // Lines carry their own card; it changes only between streams.
        if card != self.card {
            self.card = card;
            self.render.set_card(card);
            self.stats.set_card(card);
        }
        match item {
            Item::Record(r) => {
                self.done_bytes += r.bytes().len() as u64;
                self.progress.update(self.done_bytes);
                if self.fast_text && self.genesis.is_some() {
                    if let Some(flow) = self.fast_event(&r) {
                        return flow;
                    }
                }
                let in_window = self.at(r.time_ns());
                self.record(&r, in_window)
            }
            Item::Gap(g) => {
                self.at(g.last_ns);
                self.gap(g)
            }
            Item::Stream(s) => self.stream(&s),
        }
    }

    /// A card or session that starts inside an input, before its records: said like an
    /// input under `-v`, and its end checked like an input's. Another recording of a card
    /// comes only under `--force`, with a warning.
    #[cold]
    fn stream(&mut self, s: &grtrace_format::EmbeddedStream<'_>) -> ControlFlow<()> {
        if let Some(e) = s.session_conflict() {
            let _ = say!(self.err, "grtparse: warning: {e} (merged: --force)");
        }
        if self.verbose {
            let at = format!(", from byte {}", s.offset);
            describe_stream(s.file, s.header, &at, self.err);
        }
        self.embedded.push(s.header.clone());
        ControlFlow::Continue(())
    }

    /// The hot case: a native-endian event printed with the default line, decoded once from
    /// its fixed layout. None when the record is something else.
    #[inline(always)]
    fn fast_event(&mut self, r: &RecordView<'_>) -> Option<ControlFlow<()>> {
        let o = self.text.as_mut()?;
        let b = <&[u8; abi::rsize::EVENT]>::try_from(r.bytes()).ok()?;
        // Foreign-endian events take the general path (`EventView::fields`, the same generic
        // decoder): decoding them here too costs every native record 1 % (8 instructions on
        // the 1M bench), as the swapped copy crowds this loop.
        if !r.endian().is_native() {
            return None;
        }
        if let Some(p) = self.par.as_mut() {
            // The workers decode and format it: only what the counts need is read here.
            if r.rtype() != RecordType::EVENT {
                return None;
            }
            self.stats
                .count_event(r.cpu(), slot_of(RecordType::EVENT, r.code()));
            return Some(p.record(self.card, r, self.render.genesis, o));
        }
        let ev = EventBody::read_record::<Native>(b)?;
        let line = Line::event(r, ev);
        self.stats.count_event(line.cpu, line.slot);
        self.render.event_line(o, &line, &ev);
        Some(go_on(o))
    }

    /// Time `t` seen: the first one fixes time 0 (and the -w window), like blkparse's
    /// genesis. Returns whether `t` is in the window.
    #[inline]
    fn at(&mut self, t: u64) -> bool {
        if self.genesis.is_none() {
            self.genesis = Some(t);
            self.render.genesis = t;
            if let Some((a, b)) = self.filters.window {
                self.window_ns = (t.saturating_add(a), t.saturating_add(b));
            }
        }
        t >= self.window_ns.0 && t <= self.window_ns.1
    }

    /// A sequence gap: never filtered out (it says the data is incomplete).
    fn gap(&mut self, g: Lost) -> ControlFlow<()> {
        self.stats.gap(&g);
        if self.verbose && self.gaps_told < 1000 {
            self.gaps_told += 1;
            let _ = say!(
                self.err,
                "grtparse: cpu {}: {} record(s) missing (sequence gap) between times {} and {} ns",
                g.cpu,
                g.count,
                g.first_ns,
                g.last_ns
            );
        }
        if let Some(o) = self.text.as_mut() {
            match self.par.as_mut() {
                Some(p) => p.gap(self.card, g, self.render.genesis, o)?,
                None => self.render.line(o, &Line::gap(g)),
            }
            go_on(o)?;
        }
        if let Some(d) = self.dump.as_mut() {
            d.gap(g);
            go_on(&d.out)?;
        }
        ControlFlow::Continue(())
    }

    /// A record: filtered, printed, counted, and dumped (the dump keeps every note: names,
    /// losses and drop counts, and the selected events).
    fn record(&mut self, r: &RecordView<'_>, in_window: bool) -> ControlFlow<()> {
        let rt = r.rtype();
        let is_event = rt == RecordType::EVENT;
        let code = if is_event { r.code() } else { 0 };
        let slot = slot_of(rt, code);
        let (pass, line) = if is_event {
            let ev = grtrace_format::EventView::fields(&r.event().expect("event record"));
            let pass = self.filters.event_passes(slot, in_window, &ev, r.pid());
            (pass, Line::event(r, ev))
        } else {
            self.render.names.learn(r);
            if let Some(p) = self.par.as_mut() {
                p.name_note(r);
            }
            self.filters.rings.learn(r);
            let pass = self.filters.note_passes(slot, in_window, rt, r.pid());
            (pass, Line::note(r))
        };
        if pass {
            self.stats.count(&line, r);
            if let Some(o) = self.text.as_mut() {
                match self.par.as_mut() {
                    Some(p) => p.record(self.card, r, self.render.genesis, o)?,
                    None => self.render.line(o, &line),
                }
                go_on(o)?;
            }
        } else if !is_event {
            // Hidden notes still carry losses and drop counts for the summary.
            self.stats.note_facts(r);
        }
        if let Some(d) = self.dump.as_mut() {
            if pass || !is_event {
                d.record(r);
                go_on(&d.out)?;
            }
        }
        ControlFlow::Continue(())
    }

    /// Whether a write to the text or the dump failed during the pass.
    pub(crate) fn output_failed(&self) -> bool {
        self.text.as_ref().is_some_and(|o| o.failed())
            || self.dump.as_ref().is_some_and(|d| d.out.failed())
    }
}

/// `-v`: the line of one stream header, `at` saying where it is (an input's length, or
/// where inside an input a card or session started: such a card is described like one
/// known at open).
pub(crate) fn describe_stream(name: &str, h: &StreamHeader, at: &str, err: &mut dyn Write) {
    let cpu = if h.is_merged() {
        "merged".to_string()
    } else {
        format!("cpu {}", h.cpu)
    };
    let _ = say!(
        err,
        "grtparse: input {name}: {cpu}, {}, {}, {}-endian, version {}.{}, session {:#x}{at}",
        grtrace_format::Card(h.card),
        h.driver,
        h.endian.name(),
        h.version_major,
        h.version_minor,
        h.session_id,
    );
}
