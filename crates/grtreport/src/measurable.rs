//! What a recording can measure. A filtered recording (`grtrace -a submit -a end`) or a
//! stream imported from tracepoints lacks some event codes altogether; the phases that need
//! them are unmeasurable and shown as `-` (JSON `null`), never as 0, and the report says
//! which events are missing. "Present" is decided from the event codes actually seen.

use grtrace_format::Event;

use crate::job::{N_PHASES, PHASE_NAMES};

/// Lifecycle events and the phases each one bounds.
const LIFECYCLE: [(Event, &str); 6] = [
    (Event::COMMIT, "COMMIT"),
    (Event::SUBMIT, "SUBMIT"),
    (Event::START, "START"),
    (Event::END, "END"),
    (Event::IRQ, "IRQ"),
    (Event::SIGNAL, "SIGNAL"),
];

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
}

fn bit(c: Event) -> u64 {
    1u64 << (c.0 & 63)
}

impl Measurable {
    /// From the codes seen (`seen`, bit N = code N).
    pub fn new(seen: u64, driver: String, simulated: bool) -> Measurable {
        let has = |c| seen & bit(c) != 0;
        let done = has(Event::IRQ) || has(Event::SIGNAL) || has(Event::END);
        // A missing START is inferred as max(SUBMIT, previous END on the ring) (flag
        // `inferred`), so queue and exec need only one of START and the other bound.
        let start = has(Event::START) || (has(Event::SUBMIT) && has(Event::END));
        let phases = [
            has(Event::COMMIT) && has(Event::SUBMIT),
            has(Event::SUBMIT) && start,
            start && has(Event::END),
            has(Event::END) && (has(Event::IRQ) || has(Event::SIGNAL)),
            true,
            true,
            has(Event::COMMIT) && done,
        ];
        Measurable {
            seen,
            driver,
            simulated,
            phases,
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
            .iter()
            .filter(|(c, _)| self.seen & bit(*c) == 0)
            .map(|(_, n)| *n)
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
