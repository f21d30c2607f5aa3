//! The command line of grtparse ([`Cli`]) and its usage error, below the passes that read it.

use std::path::PathBuf;

use clap::Parser;
use grtrace_cli::Failure;

const AFTER_HELP: &str = "\
Examples:
  grtparse run                     every run.grtrace.<cpu> file, merged by time
  grtparse run.grtrace.*           the same, with the files named
  grtrace -o - | grtparse -i -     a live stream on stdin
  grtparse run -a SUBMIT,END --ring gfx -w 0.5:2
  grtparse run -f '%T.%t %c %a %x %n\\n'
  grtparse run -q -O -d merged.bin  merge into one binary stream, no text
  grtparse -D /tmp/traces run      run.grtrace.<cpu> files in /tmp/traces

Default line (whitespace-separated, stable for grep and awk):
  device cpu seq sec.nsec pid EVENT ring ctx seqno [key=value details...] [comm]
Notes (PROCESS RING MSG CLOCK_SYNC LOST STREAM_INFO) use '-' for ring ctx seqno (a RING
note shows its ring id); a RING note adds flags=ctx-seqno,virtual when set.
Lost records print inline as LOST lines (source=kernel|recorder|gap).

Format fields for -f/-F (%[-][width]X; \\n \\t escapes; %% for %):
  %a event name  %c cpu  %C process name  %d details  %D device  %f flags
  %n job seqno  %p pid  %r ring (name)  %R ring id  %s sequence  %T seconds
  %t nanoseconds  %x ctx  %z wall clock sec.nsec  %0 %1 %2 %3 event args

Exit status: 0 ok, 1 damaged/missing/empty input or output error, 2 usage error.";

/// Command line of grtparse.
#[derive(Parser, Debug, Default)]
#[command(
    name = "grtparse",
    version,
    about = "Turn grtrace streams into one line per GPU event (like blkparse)",
    long_about = "Reads the per-CPU streams written by `grtrace -o run` (run.grtrace.<cpu>), \
merged streams (`grtrace -o -`, `grtparse -d`), or stdin, merges them by time and prints one \
line per event. Sequence gaps and kernel drops are shown inline and in the summary.",
    after_help = AFTER_HELP
)]
pub struct Cli {
    #[command(flatten)]
    /// The inputs (INPUT words and `-i`).
    pub input: grtrace_cli::InputArgs,
    /// Look for the inputs (those not starting with `/`) in DIR, like blkparse -D.
    #[arg(short = 'D', long = "input-directory", value_name = "DIR")]
    pub input_dir: Option<PathBuf>,
    /// Write text to FILE instead of stdout (`-` = stdout).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Format string for every line (see the fields below).
    #[arg(short = 'f', long = "format", value_name = "FORMAT")]
    pub format: Option<String>,
    /// Format string for one event or note, e.g. `-F 'END,%T.%t %x %n status=%2\n'`.
    #[arg(short = 'F', long = "format-spec", value_name = "EVENT,FORMAT")]
    pub format_spec: Vec<String>,
    /// Show only these events/notes (comma-separated names, e.g. SUBMIT,END,MSG).
    #[arg(
        short = 'a',
        long = "events",
        value_name = "NAMES",
        value_delimiter = ','
    )]
    pub events: Vec<String>,
    /// Show only the events whose bits are set in this hex mask (bit N = event code N,
    /// as blkparse and grtrace -A); notes are still shown.
    #[arg(short = 'A', long = "set-mask", value_name = "HEX")]
    pub mask: Option<String>,
    /// Show everything except these events/notes (comma-separated names).
    #[arg(long = "exclude", value_name = "NAMES", value_delimiter = ',')]
    pub exclude: Vec<String>,
    #[command(flatten)]
    /// `--ctx`, `--ring`, `--pid`.
    pub filter: grtrace_cli::FilterArgs,
    #[command(flatten)]
    /// `-w`: the time window.
    pub window: grtrace_cli::WindowArgs,
    #[command(flatten)]
    /// `-q`: no summary.
    pub quiet: grtrace_cli::QuietArgs,
    /// No text output (use with -d).
    #[arg(short = 'O', long = "no-text-output")]
    pub no_text: bool,
    /// Dump the merged stream, in the same binary format, to FILE (`-` = stdout).
    #[arg(short = 'd', long = "dump-binary", value_name = "FILE")]
    pub dump: Option<PathBuf>,
    /// Per-process statistics in the summary.
    #[arg(short = 's', long = "per-program-stats")]
    pub per_process: bool,
    /// Also write the summary's figures as JSON to FILE (`-` = stdout; schema in grtparse(1)).
    #[arg(long = "summary-json", value_name = "FILE")]
    pub summary_json: Option<PathBuf>,
    /// Verbose: inputs, gaps and warnings on stderr as they happen.
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,
    /// Print absolute wall-clock time (seconds since the epoch) instead of relative time.
    #[arg(long = "wall")]
    pub wall: bool,
    /// Merge files of different recording sessions of one card (refused by default).
    #[arg(long = "force")]
    pub force: bool,
    #[command(flatten)]
    /// `-j`: text threads.
    pub threads: grtrace_cli::ThreadsArgs,
    /// Lines per batch handed to a text thread (tests).
    #[arg(long = "batch-lines", value_name = "N", hide = true)]
    pub batch_lines: Option<usize>,
    #[command(flatten)]
    /// `--progress` / `--no-progress`.
    pub progress: grtrace_cli::ProgressArgs,
    #[command(flatten)]
    /// `--completions SHELL`.
    pub completions: grtrace_cli::CompletionArgs,
}

/// A usage problem (exit status 2).
#[derive(Debug)]
pub struct UsageError(pub String);

impl From<UsageError> for Failure {
    fn from(u: UsageError) -> Failure {
        Failure::Usage(u.0)
    }
}
