//! What a recording can measure. A filtered recording (`grtrace -a submit -a end`) or a
//! stream imported from tracepoints lacks some event codes altogether; the phases that need
//! them are unmeasurable and shown as `-` (JSON `null`), never as 0, and the report says
//! which events are missing. "Present" is decided from the event codes actually seen, and
//! for an imported stream also from what its source says it cannot measure (its
//! `grtrace-import:` note, IMPORT.md §1).

use grtrace_format::Event;

use crate::job::{GPU_WAIT, N_PHASES, PHASE_NAMES, SUBMIT_HOST};

/// The lifecycle events, which bound the phases (named as the vocabulary names them).
const LIFECYCLE: [Event; 6] = [
    Event::COMMIT,
    Event::SUBMIT,
    Event::START,
    Event::END,
    Event::IRQ,
    Event::SIGNAL,
];

/// What an imported stream's first record, a `NOTE_MSG` starting `grtrace-import:`, says
/// about its source (IMPORT.md §1): `key=value` pairs separated by `; `, unknown keys ignored.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Import {
    /// `source`: `trace.dat v7 (zstd)`, `text (...)`, `tracefs trace_pipe_raw (...)`.
    pub source: String,
    /// `tool`: `grtimport 0.1.0`.
    pub tool: String,
    pub clock: String,
    pub recorder: String,
    pub kernel: String,
    /// `start=inferred`: every START is inferred (and flagged so).
    pub start_inferred: bool,
    /// `unmeasured`: bit i = phase i (PHASE_NAMES order) cannot be measured from the source.
    pub unmeasured: u8,
    /// `unmeasured` names `preemption`: no event of the source tells a preemption, so
    /// preempt-thrash cannot be judged.
    pub no_preemption: bool,
    /// `late_ends` (the closing note): jobs whose END is an event the CPU runs after the GPU
    /// finished (i915_request_retire without a fence signal).
    pub late_ends: u64,
    /// `not_mapped` (the closing note): events of GPU tracepoints the import did not use
    /// because their layout is not known, and which (IMPORT.md §2).
    pub not_mapped: u64,
    /// What the note says of them (`i915_request_add 545: format with fields ...`).
    pub not_mapped_what: String,
}

/// The prefix of an import note.
pub const IMPORT_NOTE: &[u8] = b"grtrace-import:";

impl Import {
    /// Reads an import note; None for any other message.
    pub fn parse(text: &[u8]) -> Option<Import> {
        let rest = text.strip_prefix(IMPORT_NOTE)?;
        let rest = String::from_utf8_lossy(rest);
        let mut im = Import::default();
        for pair in rest.split("; ") {
            let Some((k, v)) = pair.trim().split_once('=') else {
                continue;
            };
            let v = v.trim().to_string();
            match k.trim() {
                "source" => im.source = v,
                "tool" => im.tool = v,
                "clock" => im.clock = v,
                "recorder" => im.recorder = v,
                "kernel" => im.kernel = v,
                "start" => im.start_inferred = v == "inferred",
                "not_mapped" => {
                    let (n, what) = v.split_once(' ').unwrap_or((&v, ""));
                    im.not_mapped = n.parse().unwrap_or(0);
                    im.not_mapped_what = what.trim_matches(['(', ')']).to_string();
                }
                "late_ends" => {
                    let n = v.split_whitespace().next().unwrap_or("");
                    im.late_ends = n.parse().unwrap_or(0);
                }
                "unmeasured" => {
                    for name in v.split(',').map(str::trim) {
                        match PHASE_NAMES.iter().position(|p| *p == name) {
                            Some(i) => im.unmeasured |= 1 << i,
                            None if name == "preemption" => im.no_preemption = true,
                            None => {}
                        }
                    }
                }
                _ => {}
            }
        }
        Some(im)
    }

    /// Adds what a later note of the same import says (the closing note's `late_ends`).
    pub fn merge(&mut self, later: &Import) {
        self.late_ends = self.late_ends.max(later.late_ends);
        if later.not_mapped > self.not_mapped {
            self.not_mapped = later.not_mapped;
            self.not_mapped_what = later.not_mapped_what.clone();
        }
    }

    /// Names of the phases the source cannot measure, in PHASE_NAMES order.
    pub fn unmeasured_names(&self) -> Vec<&'static str> {
        (0..N_PHASES)
            .filter(|i| self.unmeasured & (1 << i) != 0)
            .map(|i| PHASE_NAMES[i])
            .collect()
    }

    /// `imported by grtimport 0.1.0 from trace.dat v7 (zstd 1.5.4), clock mono, kernel ...`
    pub fn describe(&self) -> String {
        let mut s = format!("imported by {} from {}", self.tool, self.source);
        if !self.recorder.is_empty() {
            s.push_str(&format!(" ({})", self.recorder));
        }
        if !self.clock.is_empty() {
            s.push_str(&format!(", clock {}", self.clock));
        }
        if !self.kernel.is_empty() {
            s.push_str(&format!(", kernel {}", self.kernel));
        }
        s
    }
}

/// Event codes seen in the recording and where it came from.
#[derive(Clone, Debug, Default)]
pub struct Measurable {
    /// Bit N: event code N was seen.
    pub seen: u64,
    /// Driver named by the stream header(s), and whether a simulator wrote the stream.
    pub driver: String,
    pub simulated: bool,
    /// Per phase (PHASE_NAMES order): can the recording measure it?
    pub phases: [bool; N_PHASES],
    /// The import note of an imported stream.
    pub import: Option<Import>,
}

fn bit(c: Event) -> u64 {
    1u64 << (c.0 & 63)
}

impl Measurable {
    /// From the codes seen (`seen`, bit N = code N) and, for an imported stream, its note.
    pub fn new(seen: u64, driver: String, simulated: bool, import: Option<&Import>) -> Measurable {
        let has = |c| seen & bit(c) != 0;
        let done = has(Event::IRQ) || has(Event::SIGNAL) || has(Event::END);
        // A missing START is inferred as max(SUBMIT, previous END on the ring) (flag
        // `inferred`), so queue and exec need only one of START and the other bound.
        let start = has(Event::START) || (has(Event::SUBMIT) && has(Event::END));
        let mut phases = [
            has(Event::COMMIT) && has(Event::SUBMIT),
            has(Event::SUBMIT) && start,
            start && has(Event::END),
            has(Event::END) && (has(Event::IRQ) || has(Event::SIGNAL)),
            true,
            true,
            has(Event::COMMIT) && done,
        ];
        let unmeasured = import.map_or(0, |i| i.unmeasured);
        for (i, p) in phases.iter_mut().enumerate() {
            *p &= unmeasured & (1 << i) == 0;
        }
        Measurable {
            seen,
            driver,
            simulated,
            phases,
            import: import.cloned(),
        }
    }

    /// Whether a blocking class can be judged from this recording (tag index, Tags::NAMES
    /// order): not when a phase its rule needs is unmeasured (host-submit: submit_host,
    /// queue-wait: queue, exec-tail: exec, dep-wait: gpu_wait, vm-fault: vm_fault), nor
    /// preempt-thrash when the source tells no preemption.
    pub fn judged(&self, tag: usize) -> bool {
        match tag {
            0 => self.phases[SUBMIT_HOST],
            1 => self.phases[1],
            2 => self.phases[2],
            3 => self.phases[GPU_WAIT],
            4 => self.phases[5],
            _ => !self.import.as_ref().is_some_and(|i| i.no_preemption),
        }
    }

    /// Every phase measurable (an empty recording is not called filtered).
    pub fn all(&self) -> bool {
        self.seen == 0 || self.phases.iter().all(|&p| p)
    }

    /// Names of the event codes seen, in code order.
    pub fn codes(&self) -> Vec<&'static str> {
        (0..64u16)
            .filter(|c| self.seen & (1 << c) != 0)
            .filter_map(|c| Event(c).name())
            .collect()
    }

    /// Lifecycle events the recording lacks.
    pub fn missing(&self) -> Vec<&'static str> {
        if self.seen == 0 {
            return Vec::new();
        }
        LIFECYCLE
            .into_iter()
            .filter(|&c| self.seen & bit(c) == 0)
            .filter_map(Event::name)
            .collect()
    }

    /// Phases the recording cannot measure.
    pub fn unmeasurable(&self) -> Vec<&'static str> {
        if self.seen == 0 {
            return Vec::new();
        }
        (0..N_PHASES)
            .filter(|&i| !self.phases[i])
            .map(|i| PHASE_NAMES[i])
            .collect()
    }

    /// One line for the report header, or None when everything is measurable.
    pub fn line(&self) -> Option<String> {
        if self.all() {
            return None;
        }
        if let Some(im) = &self.import {
            let by_source = im.unmeasured_names();
            let missing = self.missing();
            let measured: Vec<&str> = (0..N_PHASES)
                .filter(|&i| self.phases[i])
                .map(|i| PHASE_NAMES[i])
                .collect();
            let mut s = format!(
                "imported from kernel tracepoints: {} cannot be measured from this source (shown as -)",
                by_source.join(", ")
            );
            let others: Vec<&str> = self
                .unmeasurable()
                .into_iter()
                .filter(|p| !by_source.contains(p))
                .collect();
            if !others.is_empty() {
                s.push_str(&format!(
                    ", nor {} (the recording has no {} events)",
                    others.join(", "),
                    missing.join("/")
                ));
            }
            // COMMIT and SUBMIT are the hand-off to the driver: the time a job spent in a
            // scheduler's queue before it (QUEUE to hand-off) is in no phase.
            s.push_str(&format!(
                "; queue counts from the hand-off to the driver, not from QUEUE; measured: {}",
                measured.join(", ")
            ));
            return Some(s);
        }
        let measured: Vec<&str> = (0..N_PHASES)
            .filter(|&i| self.phases[i])
            .map(|i| PHASE_NAMES[i])
            .collect();
        Some(format!(
            "the recording has no {} events: {} cannot be measured (shown as -); measured: {}",
            self.missing().join("/"),
            self.unmeasurable().join(", "),
            measured.join(", ")
        ))
    }
}
