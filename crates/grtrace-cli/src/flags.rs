//! The flags the binaries share, defined once: each binary flattens the groups it takes
//! (`#[command(flatten)]`), so that a flag has one name, one type and one parser everywhere.
//! A binary whose flag means a little more (the recorder filters in the kernel) says so by
//! changing the help of the flattened argument (`#[command(mut_arg(...))]`), not its type.
//!
//! | group | flags | taken by |
//! |---|---|---|
//! | [`InputArgs`] | `INPUT...`, `-i/--input` | grtparse, grtreport |
//! | [`FilterArgs`] | `--ctx`, `--ring`, `--pid` | grtparse, grtreport, grtrace |
//! | [`WindowArgs`] | `-w/--stopwatch/--window [START:]END` | grtparse, grtreport |
//! | [`ThreadsArgs`] | `-j/--threads N` | grtparse |
//! | [`QuietArgs`] | `-q/--quiet` | grtparse, grtimport |
//! | [`DeviceArgs`] | `-d/--dev DEV` (a [`Card`]) | grtrace |
//! | [`BaseOutputArgs`] | `-o/--output BASE`, `-D/--output-dir DIR` | grtrace, grtimport |
//! | [`StopwatchArgs`] | `-w/--stopwatch SECONDS` | grtrace (both back-ends) |
//!
//! grtreport takes the same flags with the same meaning; its definitions move onto these
//! groups with its restructuring.

// The fields' doc comments are their `--help` texts, where `<cpu>` is meant as written.
#![allow(rustdoc::invalid_html_tags)]

use std::ffi::OsString;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use grtrace_format::Card;

use crate::{is_dash, one_line, parse_window};

/// A context, ring or process id on the command line: decimal, or hex with `0x`.
pub fn parse_id(s: &str) -> Result<u32, String> {
    let t = s.trim();
    let v = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) if !h.starts_with('+') => u32::from_str_radix(h, 16).ok(),
        Some(_) => None,
        None if t.starts_with('+') => None,
        None => t.parse().ok(),
    };
    v.ok_or_else(|| {
        format!(
            "'{}' is not a number (decimal, or hex with 0x)",
            one_line(s)
        )
    })
}

/// A `--ring` item: a ring id (a number, as [`parse_id`] reads it) or a ring name, which the
/// ring notes of the input resolve ([`crate::RingSelect`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RingArg {
    /// A ring id.
    Id(u32),
    /// A ring name (`gfx`), found in the ring notes while reading.
    Name(String),
}

impl FromStr for RingArg {
    type Err = String;

    fn from_str(s: &str) -> Result<RingArg, String> {
        let t = s.trim();
        if t.is_empty() {
            return Err("an empty ring (give an id or a name)".into());
        }
        let number = t.bytes().next().is_some_and(|b| b.is_ascii_digit());
        Ok(match parse_id(t) {
            Ok(id) => RingArg::Id(id),
            // `12x` or `0xZZ` is a typo of a number more likely than the name of a ring.
            Err(e) if number => return Err(e),
            Err(_) => RingArg::Name(t.to_string()),
        })
    }
}

/// The reading tools' inputs: positional INPUTs and `-i`, taken alike.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct InputArgs {
    /// Inputs: a base name (`run` reads every run.grtrace.<cpu>), files, or `-` for stdin.
    #[arg(value_name = "INPUT")]
    pub inputs: Vec<OsString>,
    /// Input, like a positional INPUT (repeatable; `-i -` is stdin).
    #[arg(short = 'i', long = "input", value_name = "INPUT")]
    pub input: Vec<OsString>,
}

impl InputArgs {
    /// Every input word: the `-i` ones first, then the positional ones.
    pub fn words(&self) -> Vec<OsString> {
        self.input.iter().chain(&self.inputs).cloned().collect()
    }
}

/// Which events to keep: `--ctx`, `--ring`, `--pid`, each a comma-separated list (and
/// repeatable). Empty lists select everything.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct FilterArgs {
    /// Only events of these context ids (comma-separated).
    #[arg(long = "ctx", value_name = "IDS", value_delimiter = ',', value_parser = parse_id)]
    pub ctx: Vec<u32>,
    /// Only events on these rings (ids or names from the ring notes, comma-separated).
    #[arg(long = "ring", value_name = "RINGS", value_delimiter = ',')]
    pub ring: Vec<RingArg>,
    /// Only events (and messages and process notes) of these pids (comma-separated).
    #[arg(long = "pid", value_name = "PIDS", value_delimiter = ',', value_parser = parse_id)]
    pub pid: Vec<u32>,
}

impl FilterArgs {
    /// Whether any of the three selects something.
    pub fn any(&self) -> bool {
        !self.ctx.is_empty() || !self.ring.is_empty() || !self.pid.is_empty()
    }
}

/// The reading tools' `-w`: a time window since the first record.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct WindowArgs {
    /// Time window in seconds from the first record: END or START:END (e.g. 0.5:2).
    #[arg(short = 'w', long = "stopwatch", visible_alias = "window", value_name = "[START:]END",
          value_parser = window_value)]
    pub window: Option<Window>,
}

/// A `-w` window in nanoseconds since the first record: `[start, end]`, `end` `u64::MAX`
/// when open ([`parse_window`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Start, in nanoseconds since the first record.
    pub start: u64,
    /// End, in nanoseconds since the first record (`u64::MAX`: open).
    pub end: u64,
}

fn window_value(s: &str) -> Result<Window, String> {
    parse_window(s).map(|(start, end)| Window { start, end })
}

/// `-j N`: how many threads a tool may use.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct ThreadsArgs {
    /// Threads for the text: N-1 format lines while one merges (default: the CPUs
    /// available; 1 = one thread). Standard input and small inputs use one thread.
    #[arg(short = 'j', long = "threads", value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,
}

/// `-q`: no summary.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct QuietArgs {
    /// No summary at the end.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
}

/// The recorder's devices: `-d DEV`, repeatable, and bare DEV words.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct DeviceArgs {
    /// Device to trace: card0, 0 or /dev/dri/card0 (repeat for several)
    #[arg(short = 'd', long = "dev", value_name = "DEV")]
    pub dev: Vec<Card>,
    /// Devices may also be given without -d
    #[arg(value_name = "DEV", hide = true)]
    pub more_dev: Vec<Card>,
}

impl DeviceArgs {
    /// Every device, `-d` ones first; a card given twice (`-d card0 -d 0`) is a usage error.
    pub fn cards(&self) -> Result<Vec<Card>, String> {
        let cards: Vec<Card> = self.dev.iter().chain(&self.more_dev).copied().collect();
        for (i, c) in cards.iter().enumerate() {
            if cards[..i].contains(c) {
                return Err(format!("device {c} given twice"));
            }
        }
        Ok(cards)
    }

    /// Whether any device was given.
    pub fn is_empty(&self) -> bool {
        self.dev.is_empty() && self.more_dev.is_empty()
    }
}

/// Where a writer of streams puts them: `-o BASE` (`BASE.grtrace.<cpu>`, or `-` for one
/// merged stream on stdout) and `-D DIR`.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct BaseOutputArgs {
    /// Output base name: BASE.grtrace.<cpu>; `-` writes one merged stream to stdout
    #[arg(short = 'o', long = "output", value_name = "BASE")]
    pub output: Option<OsString>,
    /// Directory for the output files (created if missing)
    #[arg(short = 'D', long = "output-dir", value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
}

impl BaseOutputArgs {
    /// Whether the streams go to standard output (`-o -`).
    pub fn is_pipe(&self) -> bool {
        self.output.as_deref().is_some_and(is_dash)
    }

    /// The checks every writer of streams makes: an empty base name, binary records on a
    /// terminal, `-D` with `-o -`. The message is a usage error.
    pub fn check(&self) -> Result<(), String> {
        if self.output.as_ref().is_some_and(|o| o.is_empty()) {
            return Err(
                "-o: the base name is empty (it would write hidden .grtrace.<cpu> files)".into(),
            );
        }
        if self.is_pipe() && std::io::IsTerminal::is_terminal(&std::io::stdout()) {
            return Err(
                "-o - writes binary records: pipe them into `grtparse -i -` or a file".into(),
            );
        }
        if self.is_pipe() && self.output_dir.is_some() {
            return Err("-D makes no sense with -o -".into());
        }
        Ok(())
    }
}

/// A recording's `-w`: how long to record.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct StopwatchArgs {
    /// Stop after SECONDS (fractions allowed)
    #[arg(short = 'w', long = "stopwatch", value_name = "SECONDS",
          value_parser = stopwatch_value)]
    pub stopwatch: Option<Duration>,
}

fn stopwatch_value(s: &str) -> Result<Duration, String> {
    match s.trim().parse::<f64>() {
        Ok(w) if w > 0.0 && w < 1e9 => Ok(Duration::from_secs_f64(w)),
        _ => Err("-w wants a positive number of seconds".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// What clap says refusing the arguments `args` of a command line of `P`.
    fn refusal<P: Parser + std::fmt::Debug>(args: &[&str]) -> String {
        let argv = std::iter::once("t").chain(args.iter().copied());
        P::try_parse_from(argv).unwrap_err().to_string()
    }

    #[derive(Parser, Debug)]
    struct All {
        #[command(flatten)]
        input: InputArgs,
        #[command(flatten)]
        filter: FilterArgs,
        #[command(flatten)]
        window: WindowArgs,
    }

    #[test]
    fn ids_are_decimal_or_hex_and_nothing_else() {
        assert_eq!(parse_id("12"), Ok(12));
        assert_eq!(parse_id("0x1f"), Ok(31));
        assert_eq!(parse_id(" 7 "), Ok(7));
        for bad in ["", "x", "-1", "+1", "0x", "0x+1", "4294967296", "1.5"] {
            let e = parse_id(bad).unwrap_err();
            assert!(e.contains("is not a number"), "{bad}: {e}");
        }
        assert_eq!("gfx".parse(), Ok(RingArg::Name("gfx".into())));
        assert_eq!("0x10".parse(), Ok(RingArg::Id(16)));
        assert!("12x".parse::<RingArg>().is_err());
        assert!("".parse::<RingArg>().is_err());
    }

    #[test]
    fn the_groups_parse_as_every_tool_takes_them() {
        let a = All::try_parse_from([
            "t", "run", "-i", "-", "--ctx", "2,0x3", "--ctx", "9", "--ring", "gfx,1", "--pid", "7",
            "-w", "0.5:2",
        ])
        .unwrap();
        assert_eq!(a.input.words(), ["-", "run"]);
        assert_eq!(a.filter.ctx, [2, 3, 9]);
        assert_eq!(a.filter.ring, [RingArg::Name("gfx".into()), RingArg::Id(1)]);
        assert_eq!(a.filter.pid, [7]);
        assert!(a.filter.any());
        assert_eq!(
            a.window.window,
            Some(Window {
                start: 500_000_000,
                end: 2_000_000_000
            })
        );
        let e = refusal::<All>(&["--ctx", "two"]);
        assert!(e.contains("'two' is not a number"), "{e}");
        let e = refusal::<All>(&["-w", "3:1"]);
        assert!(e.contains("ends before it starts"), "{e}");
        assert!(!All::try_parse_from(["t"]).unwrap().filter.any());
        // -w's long names: --stopwatch (blkparse's) and --window.
        for long in ["--stopwatch", "--window"] {
            let a = All::try_parse_from(["t", long, "2"]).unwrap();
            assert_eq!(
                a.window.window.map(|w| w.end),
                Some(2_000_000_000),
                "{long}"
            );
        }
    }

    #[derive(Parser, Debug)]
    struct Rec {
        #[command(flatten)]
        dev: DeviceArgs,
        #[command(flatten)]
        out: BaseOutputArgs,
        #[command(flatten)]
        stopwatch: StopwatchArgs,
    }

    #[test]
    fn a_recording_takes_cards_a_base_name_and_a_stopwatch() {
        let r = Rec::try_parse_from(["t", "-d", "card1", "0", "-o", "run", "-w", "2.5"]).unwrap();
        assert_eq!(r.dev.cards(), Ok(vec![Card(1), Card(0)]));
        assert_eq!(r.stopwatch.stopwatch, Some(Duration::from_millis(2500)));
        assert!(!r.out.is_pipe() && r.out.check().is_ok());
        let r = Rec::try_parse_from(["t", "-d", "1", "-d", "/dev/dri/card1"]).unwrap();
        assert_eq!(r.dev.cards().unwrap_err(), "device card1 given twice");
        let r = Rec::try_parse_from(["t", "-o", "-", "-D", "/tmp"]).unwrap();
        assert!(r.out.is_pipe());
        assert!(r.out.check().is_err());
        for bad in ["0", "1e10", "nan", "x"] {
            let e = refusal::<Rec>(&["-w", bad]);
            assert!(e.contains("positive number of seconds"), "{bad}: {e}");
        }
        let e = refusal::<Rec>(&["-d", "renderD128"]);
        assert!(e.contains("render node"), "{e}");
    }
}
