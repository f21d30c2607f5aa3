//! Counting and the end-of-run summary: per CPU and total counts by event and note, losses
//! split into kernel drops, recorder losses and sequence gaps, unknown records, and the
//! device's dropped counter when the streams carry it. Inputs of several cards are counted
//! per card (card0's CPU 0 is not card1's CPU 0): a table per card, totals across them.

use std::collections::{HashMap, HashSet};
use std::io::{self, Write};

use grtrace_format::abi::lost_source;
use grtrace_format::record::{Body, Lost};
use grtrace_format::view::RecordView;
use grtrace_format::RecordType;
use grtrace_format::RunSummary;

use crate::out::Out;
use crate::printer::{slot_name, Line, Render, NSLOTS, SLOT_NOTE_BASE};

/// CPUs at or above this are counted together as `CPU?`.
const CPU_LIMIT: usize = 1024;
/// Most pids `-s` counts one by one; the others are counted together as `other`, so a
/// trace with millions of pids costs a bounded table (about 2.4 KiB per pid).
pub const PID_LIMIT: usize = 4096;
/// Most stream CPUs remembered as having ended with NOTE_STREAM_INFO.
const INFO_CPU_LIMIT: usize = 1 << 16;

/// The counts of one card.
#[derive(Clone, Default)]
struct CardCounts {
    per_cpu: Vec<[u64; NSLOTS]>,
    /// Per CPU: records lost per the kernel, the recorder, sequence gaps.
    lost: Vec<[u64; 3]>,
    /// Largest device-wide `kernel_dropped` from NOTE_STREAM_INFO.
    dropped: Option<u64>,
}

impl CardCounts {
    /// Shown lines by slot, all CPUs together.
    fn slot_totals(&self) -> [u64; NSLOTS] {
        let mut total = [0u64; NSLOTS];
        for s in &self.per_cpu {
            for (t, v) in total.iter_mut().zip(s) {
                *t += v;
            }
        }
        total
    }

    /// Records lost per cause (kernel, recorder, sequence gap), all CPUs together.
    fn lost_total(&self, cause: usize) -> u64 {
        self.lost
            .iter()
            .fold(0u64, |a, l| a.saturating_add(l[cause]))
    }

    /// CPUs with a count or a loss, in order.
    fn cpus(&self) -> Vec<usize> {
        let ncpu = self.per_cpu.len().max(self.lost.len());
        (0..ncpu)
            .filter(|&c| {
                self.per_cpu
                    .get(c)
                    .is_some_and(|s| s.iter().any(|&x| x > 0))
                    || self.lost.get(c).is_some_and(|l| l.iter().any(|&x| x > 0))
            })
            .collect()
    }
}

#[derive(Default)]
/// The summary's counts: per card, CPU, event and (with `-s`) process.
pub struct Stats {
    /// The counts of the card being read (the hot path touches only these).
    cur: CardCounts,
    /// Which card `cur` counts.
    card: u32,
    /// The other cards' counts, while another is being read.
    others: Vec<(u32, CardCounts)>,
    gaps: u64,
    unclean_streams: u64,
    /// (card, CPU) stamped on NOTE_STREAM_INFO records (a per-CPU stream ends with its own).
    info_cpus: HashSet<(u32, u32)>,
    /// Streams that had no NOTE_STREAM_INFO (set before the summary).
    unended: u64,
    per_proc: Option<HashMap<u32, [u64; NSLOTS]>>,
    /// Counts of the pids past [`PID_LIMIT`], together.
    other_procs: Vec<u64>,
}

#[inline(always)]
fn cpu_index(cpu: u32) -> usize {
    (cpu as usize).min(CPU_LIMIT)
}

impl Stats {
    /// No counts yet; `per_process` keeps `-s`'s per-process figures.
    pub fn new(per_process: bool) -> Stats {
        Stats {
            per_proc: per_process.then(HashMap::new),
            ..Stats::default()
        }
    }

    /// Counts what follows for `card` (the reader's items come per card; the card changes
    /// only between streams, so this is a rare swap, not a per-record lookup).
    pub fn set_card(&mut self, card: u32) {
        if card == self.card {
            return;
        }
        let cur = std::mem::take(&mut self.cur);
        let old = std::mem::replace(&mut self.card, card);
        if cur.per_cpu.is_empty() && cur.lost.is_empty() && cur.dropped.is_none() {
            // Nothing counted for it (yet): no entry, so a card with nothing is not listed.
        } else {
            self.others.push((old, cur));
        }
        if let Some(i) = self.others.iter().position(|(c, _)| *c == card) {
            self.cur = self.others.swap_remove(i).1;
        }
    }

    /// Every card's counts, in card order (one entry per card that has any).
    fn cards(&self) -> Vec<(u32, &CardCounts)> {
        let mut v: Vec<(u32, &CardCounts)> = self.others.iter().map(|(c, x)| (*c, x)).collect();
        v.push((self.card, &self.cur));
        v.sort_by_key(|(c, _)| *c);
        // The card being read may have nothing if it was never counted, unless it is the only one.
        if v.len() > 1 {
            v.retain(|(_, x)| !(x.per_cpu.is_empty() && x.lost.is_empty() && x.dropped.is_none()));
        }
        v
    }

    /// Counts a shown event per CPU only (the fast path runs without `-s`).
    #[inline(always)]
    pub fn count_event(&mut self, cpu: u32, slot: usize) {
        let c = cpu_index(cpu);
        let per_cpu = &mut self.cur.per_cpu;
        if c >= per_cpu.len() {
            per_cpu.resize(c + 1, [0; NSLOTS]);
        }
        per_cpu[c][slot] += 1;
    }

    /// Counts a shown line.
    #[inline(always)]
    pub fn count(&mut self, l: &Line<'_>, r: &RecordView<'_>) {
        self.count_event(l.cpu, l.slot);
        if let Some(p) = self.per_proc.as_mut() {
            if let Some(c) = p.get_mut(&l.pid) {
                c[l.slot] += 1;
            } else if p.len() < PID_LIMIT {
                let mut c = [0; NSLOTS];
                c[l.slot] = 1;
                p.insert(l.pid, c);
            } else {
                self.other_procs.resize(NSLOTS, 0);
                self.other_procs[l.slot] += 1;
            }
        }
        if l.slot >= SLOT_NOTE_BASE {
            self.note_facts(r);
        }
    }

    fn lost_slot(&mut self, cpu: u32) -> &mut [u64; 3] {
        let c = cpu_index(cpu);
        let lost = &mut self.cur.lost;
        if c >= lost.len() {
            lost.resize(c + 1, [0; 3]);
        }
        &mut lost[c]
    }

    /// Losses and drop counts carried by a note (counted whether or not it is shown).
    pub fn note_facts(&mut self, r: &RecordView<'_>) {
        match r.rtype() {
            RecordType::NOTE_LOST | RecordType::NOTE_STREAM_INFO => {}
            _ => return,
        }
        match r.body() {
            Body::Lost(l) => {
                let i = match l.source {
                    lost_source::KERNEL => 0,
                    lost_source::RECORDER => 1,
                    _ => 2,
                };
                if i == 2 {
                    self.gaps += 1;
                }
                let slot = &mut self.lost_slot(l.cpu)[i];
                *slot = slot.saturating_add(l.count);
            }
            Body::StreamInfo(s) => {
                if self.info_cpus.len() < INFO_CPU_LIMIT {
                    self.info_cpus.insert((self.card, r.cpu()));
                }
                let d = &mut self.cur.dropped;
                *d = Some(d.unwrap_or(0).max(s.kernel_dropped));
                if s.flags & grtrace_format::abi::INFO_STOPPED_CLEANLY == 0 {
                    self.unclean_streams += 1;
                }
            }
            _ => {}
        }
    }

    /// Whether the stream with this header ended with a NOTE_STREAM_INFO: a per-CPU stream
    /// with one of its card stamped with its CPU, a merged stream with any of its card.
    pub fn ended_cleanly(&self, h: &grtrace_format::StreamHeader) -> bool {
        if h.is_merged() {
            self.info_cpus.iter().any(|(c, _)| *c == h.card)
        } else {
            self.info_cpus.contains(&(h.card, h.cpu))
        }
    }

    /// Streams that had no NOTE_STREAM_INFO (a recorder killed with SIGKILL writes none).
    pub fn set_unended(&mut self, n: u64) {
        self.unended = n;
    }

    /// A reader-detected sequence gap.
    pub fn gap(&mut self, g: &Lost) {
        self.gaps += 1;
        let slot = &mut self.lost_slot(g.cpu)[2];
        *slot = slot.saturating_add(g.count);
    }

    /// Records lost by any cause.
    pub fn total_lost(&self) -> u64 {
        (0..3).fold(0u64, |a, i| a.saturating_add(self.lost_total(i)))
    }

    /// Records lost per cause (kernel, recorder, sequence gap), all cards and CPUs together.
    fn lost_total(&self, cause: usize) -> u64 {
        self.cards()
            .iter()
            .fold(0u64, |a, (_, x)| a.saturating_add(x.lost_total(cause)))
    }

    /// Shown lines by slot, all cards and CPUs together.
    fn slot_totals(&self) -> [u64; NSLOTS] {
        let mut total = [0u64; NSLOTS];
        for (_, x) in self.cards() {
            for (t, v) in total.iter_mut().zip(x.slot_totals()) {
                *t += v;
            }
        }
        total
    }

    /// The devices' dropped counters at stop, added over the cards that report one.
    fn dropped(&self) -> Option<u64> {
        self.cards()
            .iter()
            .filter_map(|(_, x)| x.dropped)
            .reduce(|a, b| a.saturating_add(b))
    }

    /// Events of unknown codes among `total` (code 0 and codes past the known ones).
    fn unknown_codes(total: &[u64; NSLOTS]) -> u64 {
        total[0] + total[26..SLOT_NOTE_BASE].iter().sum::<u64>()
    }

    /// The summary as one JSON object (`--summary-json`, schema in grtparse(1)): the same
    /// figures as the text summary, for scripts. Inputs of several cards: a `cpus` entry per
    /// card and CPU (with its `card`) and `per_card`, each card's own figures; the other
    /// members are totals over the cards.
    pub fn write_json(
        &self,
        w: &mut dyn Write,
        render: &Render,
        sum: &RunSummary,
    ) -> io::Result<()> {
        let total = self.slot_totals();
        let events: u64 = total[..SLOT_NOTE_BASE].iter().sum();
        let notes: u64 = total[SLOT_NOTE_BASE..].iter().sum();
        let cards = self.cards();
        let several = cards.len() > 1;
        let cpus: Vec<String> = cards
            .iter()
            .flat_map(|(c, x)| cpu_entries(several.then_some(*c), x))
            .collect();
        let dropped = json_opt(self.dropped());
        writeln!(w, "{{")?;
        writeln!(w, "  \"schema\": \"grtparse-summary/1\",")?;
        writeln!(w, "  \"cards\": {},", json_str(&render.cards_label()))?;
        writeln!(w, "  \"events\": {events},")?;
        writeln!(w, "  \"notes\": {notes},")?;
        writeln!(w, "  \"counts\": {},", counts_json(&total))?;
        writeln!(w, "  \"cpus\": [{}],", cpus.join(", "))?;
        writeln!(
            w,
            "  \"lost\": {{\"kernel\": {}, \"recorder\": {}, \"gap\": {}}},",
            self.lost_total(0),
            self.lost_total(1),
            self.lost_total(2)
        )?;
        writeln!(w, "  \"sequence_gaps\": {},", self.gaps)?;
        writeln!(w, "  \"sequence_errors\": {},", sum.seq_backwards)?;
        writeln!(w, "  \"device_dropped\": {dropped},")?;
        writeln!(w, "  \"unknown_records\": {},", sum.unknown_records)?;
        writeln!(
            w,
            "  \"unknown_event_codes\": {},",
            Self::unknown_codes(&total)
        )?;
        writeln!(w, "  \"streams_not_ended\": {},", self.unended)?;
        writeln!(
            w,
            "  \"streams_not_stopped_cleanly\": {},",
            self.unclean_streams
        )?;
        write!(w, "  \"damaged_inputs\": {}", sum.errors.len())?;
        if several {
            writeln!(w, ",\n  \"per_card\": [")?;
            for (i, (c, x)) in cards.iter().enumerate() {
                let t = x.slot_totals();
                write!(
                    w,
                    "    {{\"card\": {c}, \"events\": {}, \"notes\": {}, \"counts\": {}, \"cpus\": [{}], \"lost\": {{\"kernel\": {}, \"recorder\": {}, \"gap\": {}}}, \"device_dropped\": {}}}",
                    t[..SLOT_NOTE_BASE].iter().sum::<u64>(),
                    t[SLOT_NOTE_BASE..].iter().sum::<u64>(),
                    counts_json(&t),
                    cpu_entries(None, x).join(", "),
                    x.lost_total(0),
                    x.lost_total(1),
                    x.lost_total(2),
                    json_opt(x.dropped)
                )?;
                writeln!(w, "{}", if i + 1 < cards.len() { "," } else { "" })?;
            }
            write!(w, "  ]")?;
        }
        writeln!(w, "\n}}")
    }

    /// Writes the blkparse-style summary.
    pub fn write_summary(&self, o: &mut Out, render: &Render, sum: &RunSummary) {
        let total = self.slot_totals();
        o.bytes(b"\nSummary (");
        o.bytes(&render.cards_label());
        o.bytes(b"):\n");
        let cards = self.cards();
        if let [(_, x)] = &cards[..] {
            write_table(o, x);
        } else {
            // A table per card: each card's CPUs are its own.
            for (c, x) in &cards {
                o.bytes(b"card");
                o.u64(*c as u64);
                o.bytes(b":\n");
                write_table(o, x);
            }
        }
        let lt = |i: usize| self.lost_total(i);
        let ev_total: u64 = total[..SLOT_NOTE_BASE].iter().sum();
        let notes_total: u64 = total[SLOT_NOTE_BASE..].iter().sum();
        o.bytes(b"Events: ");
        o.u64(ev_total);
        o.bytes(b" entries, ");
        o.u64(notes_total);
        o.bytes(b" notes\n");
        o.bytes(b"Kernel dropped: ");
        o.u64(lt(0));
        o.bytes(b" records in LOST notes");
        if let Some(d) = self.dropped() {
            o.bytes(b"; device dropped counter at stop: ");
            o.u64(d);
        }
        o.byte(b'\n');
        if lt(1) > 0 {
            o.bytes(b"Recorder lost: ");
            o.u64(lt(1));
            o.bytes(b" records\n");
        }
        o.bytes(b"Sequence gaps: ");
        o.u64(self.gaps);
        o.bytes(b" gaps, ");
        o.u64(lt(2));
        o.bytes(b" records\n");
        o.bytes(b"Sequence errors: ");
        o.u64(sum.seq_backwards);
        o.bytes(b" repeated or backwards\n");
        o.bytes(b"Unknown records: ");
        o.u64(sum.unknown_records);
        o.bytes(b" skipped; unknown event codes: ");
        o.u64(Self::unknown_codes(&total));
        o.byte(b'\n');
        if self.unended > 0 {
            o.bytes(b"Streams not ended: ");
            o.u64(self.unended);
            o.bytes(b" (no STREAM_INFO record: the recording did not end cleanly)\n");
        }
        if self.unclean_streams > 0 {
            o.bytes(b"Streams not stopped cleanly: ");
            o.u64(self.unclean_streams);
            o.byte(b'\n');
        }
        if !sum.errors.is_empty() {
            o.bytes(b"Damaged inputs: ");
            o.u64(sum.errors.len() as u64);
            o.bytes(b" (see stderr)\n");
        }

        if let Some(p) = &self.per_proc {
            o.bytes(b"\nPer process:\n");
            let mut procs: Vec<(&u32, &[u64; NSLOTS])> = p.iter().collect();
            let name = |pid: u32| -> Vec<u8> {
                if pid == 0 {
                    b"-".to_vec()
                } else {
                    render.names.comm(pid).unwrap_or(b"?").to_vec()
                }
            };
            procs.sort_by(|a, b| name(*a.0).cmp(&name(*b.0)).then(a.0.cmp(b.0)));
            for (pid, counts) in procs {
                o.bytes(&name(*pid));
                o.bytes(b" (");
                o.u64(*pid as u64);
                o.bytes(b"): ");
                write_counts(o, counts);
            }
            if self.other_procs.iter().any(|&n| n > 0) {
                o.bytes(b"other (pids past the first ");
                o.u64(PID_LIMIT as u64);
                o.bytes(b"): ");
                write_counts(o, &self.other_procs);
            }
        }
    }
}

/// One card's table: a row per event and note name and for events and losses, a column
/// per CPU and the total.
fn write_table(o: &mut Out, x: &CardCounts) {
    let cpus = x.cpus();
    let total = x.slot_totals();
    let lt = |i: usize| x.lost_total(i);
    let ev_total: u64 = total[..SLOT_NOTE_BASE].iter().sum();
    // Columns grow with the largest count so that 19- and 20-digit counts stay apart.
    let widest = total
        .iter()
        .copied()
        .chain([ev_total, lt(0), lt(1), lt(2)])
        .max()
        .unwrap_or(0);
    let w = 12.max(widest.checked_ilog10().unwrap_or(0) as usize + 3);
    o.str_left(b"name", 16);
    for &c in &cpus {
        let label = if c == CPU_LIMIT {
            "CPU?".to_string()
        } else {
            format!("CPU{c}")
        };
        o.str_right(label.as_bytes(), w);
    }
    o.str_right(b"Total", w);
    o.byte(b'\n');
    let row = |o: &mut Out, name: &str, f: &dyn Fn(usize) -> u64, t: u64| {
        o.str_left(name.as_bytes(), 16);
        for &c in &cpus {
            o.u64_w(f(c), w);
        }
        o.u64_w(t, w);
        o.byte(b'\n');
    };
    let slot_of_cpu = |c: usize, s: usize| x.per_cpu.get(c).map_or(0, |v| v[s]);
    for (s, &t) in total.iter().enumerate() {
        if t > 0 {
            row(o, &slot_name(s), &|c| slot_of_cpu(c, s), t);
        }
    }
    let events = |c: usize| (0..SLOT_NOTE_BASE).map(|s| slot_of_cpu(c, s)).sum::<u64>();
    row(o, "events", &events, ev_total);
    let lost = |c: usize, i: usize| x.lost.get(c).map_or(0, |l| l[i]);
    row(o, "lost(kernel)", &|c| lost(c, 0), lt(0));
    if lt(1) > 0 {
        row(o, "lost(recorder)", &|c| lost(c, 1), lt(1));
    }
    row(o, "lost(gap)", &|c| lost(c, 2), lt(2));
    o.byte(b'\n');
}

/// `events=N NAME=N ...\n`: the events total, then every non-zero count by name.
fn write_counts(o: &mut Out, counts: &[u64]) {
    o.bytes(b"events=");
    o.u64(counts[..SLOT_NOTE_BASE].iter().sum());
    for (s, &n) in counts.iter().enumerate() {
        if n > 0 {
            o.byte(b' ');
            o.bytes(slot_name(s).as_bytes());
            o.byte(b'=');
            o.u64(n);
        }
    }
    o.byte(b'\n');
}

/// `{"NAME": N, ...}` of the non-zero counts by slot.
fn counts_json(total: &[u64; NSLOTS]) -> String {
    let counts: Vec<String> = total
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(s, n)| format!("{}: {n}", json_str(slot_name(s).as_bytes())))
        .collect();
    format!("{{{}}}", counts.join(", "))
}

/// The `cpus` entries of one card's counts (`card`: labelled with it).
fn cpu_entries(card: Option<u32>, x: &CardCounts) -> Vec<String> {
    x.cpus()
        .into_iter()
        .map(|c| {
            let slots = x.per_cpu.get(c).copied().unwrap_or([0; NSLOTS]);
            let lost = x.lost.get(c).copied().unwrap_or([0; 3]);
            let cpu = if c == CPU_LIMIT {
                "null".to_string()
            } else {
                c.to_string()
            };
            let card = card.map_or(String::new(), |k| format!("\"card\": {k}, "));
            format!(
                "{{{card}\"cpu\": {cpu}, \"events\": {}, \"lost\": {{\"kernel\": {}, \"recorder\": {}, \"gap\": {}}}}}",
                slots[..SLOT_NOTE_BASE].iter().sum::<u64>(),
                lost[0],
                lost[1],
                lost[2]
            )
        })
        .collect()
}

/// A number or `null`.
fn json_opt(v: Option<u64>) -> String {
    v.map_or_else(|| "null".to_string(), |d| d.to_string())
}

/// `bytes` as a JSON string (names are ASCII; anything else is escaped or replaced).
fn json_str(bytes: &[u8]) -> String {
    let mut out = String::from("\"");
    for c in String::from_utf8_lossy(bytes).chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
