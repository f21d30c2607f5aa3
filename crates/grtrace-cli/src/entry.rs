//! The one `main` of every binary ([`main`]) and how a run ends ([`Failure`], [`Outcome`]):
//! exit statuses, one-line messages, and the quiet end of a closed pipe.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU8, Ordering};

use crate::{exit, one_line, write_error, CompletionArgs};

/// Why a run stopped early. Each kind has its exit status ([`Failure::code`]).
#[derive(Debug)]
pub enum Failure {
    /// The command line is wrong (exit status 2).
    Usage(String),
    /// A runtime problem: damaged or missing input, an output that cannot be created
    /// (exit status 1).
    Runtime(String),
    /// A write to the output `name` (`-` is standard output) failed. A broken pipe is the
    /// reader going away (`grtparse run | head`): the run then ends quietly with status 0.
    Write {
        /// The output as given (`-` for standard output).
        name: PathBuf,
        /// What the write returned.
        error: io::Error,
    },
    /// A runtime problem whose messages the run has printed already, one line each as it
    /// met them (a damaged input whose records before the damage were still used, several
    /// outputs that failed): exit status 1, nothing more to say.
    Reported,
}

impl Failure {
    /// A failed write to the output `name`.
    pub fn write(name: impl AsRef<Path>, error: io::Error) -> Failure {
        Failure::Write {
            name: name.as_ref().to_path_buf(),
            error,
        }
    }

    /// Whether this is the reader of an output going away: nothing to report.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, Failure::Write { error, .. } if is_broken_pipe(error))
    }

    /// The exit status: 2 usage, 1 runtime or write error (or one reported already), 0 for
    /// a broken pipe.
    pub fn code(&self) -> i32 {
        match self {
            Failure::Usage(_) => exit::USAGE,
            _ if self.is_broken_pipe() => exit::OK,
            _ => exit::RUNTIME,
        }
    }

    /// The message, on one line, without the program name (None for a broken pipe, or a
    /// failure reported already).
    pub fn message(&self) -> Option<String> {
        match self {
            _ if self.is_broken_pipe() => None,
            Failure::Reported => None,
            Failure::Usage(m) | Failure::Runtime(m) => Some(one_line(m)),
            Failure::Write { name, error } => Some(one_line(&write_error(name, error))),
        }
    }

    /// Writes `prog: message` on one line to `err` (nothing for a broken pipe); returns the
    /// exit status. For a program whose messages go to a writer of its caller's choice.
    pub fn print_to(&self, prog: &str, err: &mut dyn Write) -> i32 {
        if let Some(m) = self.message() {
            let _ = writeln!(err, "{prog}: {m}");
        }
        self.code()
    }

    /// Reports on standard error (a usage error adds the `--help` hint); returns the exit
    /// status.
    pub fn report(&self, prog: &str) -> i32 {
        match self {
            Failure::Usage(m) => crate::usage(prog, m),
            _ => self.print_to(prog, &mut io::stderr().lock()),
        }
    }
}

impl From<String> for Failure {
    /// A runtime failure with this message.
    fn from(m: String) -> Failure {
        Failure::Runtime(m)
    }
}

/// Whether a write failed because the reader went away (`grtparse run | head`): the program
/// then stops quietly with status 0.
pub fn is_broken_pipe(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::BrokenPipe
}

/// What a binary's run returns, turned into its exit status by [`main`].
pub trait Outcome {
    /// The exit status; `prog` names the program in any message still to print.
    fn exit_code(self, prog: &str) -> ExitCode;
}

impl Outcome for ExitCode {
    fn exit_code(self, _: &str) -> ExitCode {
        self
    }
}

impl Outcome for i32 {
    fn exit_code(self, _: &str) -> ExitCode {
        ExitCode::from(u8::try_from(self).unwrap_or(exit::RUNTIME as u8))
    }
}

impl Outcome for Result<(), Failure> {
    fn exit_code(self, prog: &str) -> ExitCode {
        match self {
            Ok(()) => ExitCode::SUCCESS,
            Err(f) => f.report(prog).exit_code(prog),
        }
    }
}

/// The whole `main` of a grtrace binary: parses the command line (a wrong one prints clap's
/// message and exits 2; `--help` and `--version` exit 0), prints the completion script when
/// `--completions SHELL` asks for it ([`CompletionArgs`]), else runs `run` and turns what it
/// returns into the exit status.
///
/// ```no_run
/// # mod grtparse { pub fn run(_: Cli) -> i32 { 0 } #[derive(clap::Parser)] pub struct Cli {} }
/// use std::process::ExitCode;
///
/// fn main() -> ExitCode {
///     grtrace_cli::main(grtparse::run)
/// }
/// ```
pub fn main<A: clap::Parser, O: Outcome>(run: impl FnOnce(A) -> O) -> ExitCode {
    let cmd = A::command();
    let prog = cmd.get_name().to_string();
    let parsed = cmd
        .try_get_matches()
        .and_then(|m| Ok((CompletionArgs::asked(&m), A::from_arg_matches(&m)?)));
    match parsed {
        // clap without its terminal-size feature does not wrap help: long option texts came
        // out as lines of 250 characters.
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => {
            let text = wrap_help(&e.render().to_string(), HELP_WIDTH);
            let _ = io::stdout().lock().write_all(text.as_bytes());
            ExitCode::SUCCESS
        }
        Err(e) => {
            let _ = e.print();
            ExitCode::from(e.exit_code() as u8)
        }
        Ok((Some(shell), _)) => {
            CompletionArgs::print::<A>(shell);
            ExitCode::SUCCESS
        }
        Ok((None, args)) => match stdout_at_start() {
            Ok(()) => run(args).exit_code(&prog),
            Err(m) => Failure::Runtime(m.into()).report(&prog).exit_code(&prog),
        },
    }
}

/// Standard output as the process found it: not looked at (not Linux), open for writing,
/// closed, or open for reading only.
const STDOUT_UNKNOWN: u8 = 0;
const STDOUT_OK: u8 = 1;
const STDOUT_CLOSED: u8 = 2;
const STDOUT_READ_ONLY: u8 = 3;

static STDOUT_STATE: AtomicU8 = AtomicU8::new(STDOUT_UNKNOWN);

/// Looks at file descriptor 1 before Rust's runtime does: the runtime reopens a closed
/// standard output on /dev/null (and its stdout ignores EBADF), so that from `main` on every
/// write "succeeds" into nowhere and `grtrace -o - >&-` would drain a recording away with
/// status 0. glibc runs `.init_array` entries before `main`, the runtime's set-up included.
#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array"]
static PROBE_STDOUT: extern "C" fn() = probe_stdout;

#[cfg(target_os = "linux")]
extern "C" fn probe_stdout() {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    let state = match fcntl(1, FcntlArg::F_GETFL) {
        Err(_) => STDOUT_CLOSED,
        Ok(fl) if OFlag::from_bits_truncate(fl) & OFlag::O_ACCMODE == OFlag::O_RDONLY => {
            STDOUT_READ_ONLY
        }
        Ok(_) => STDOUT_OK,
    };
    STDOUT_STATE.store(state, Ordering::Relaxed);
}

/// Whether standard output was open for writing when the process started (as `cat` needs
/// it to be): every binary may write to it, and one that cannot must not run to the end and
/// exit 0 having written nothing.
fn stdout_at_start() -> Result<(), &'static str> {
    match STDOUT_STATE.load(Ordering::Relaxed) {
        STDOUT_CLOSED => Err("standard output is closed: nothing written to it could be kept (redirect it to a file, a pipe or /dev/null)"),
        STDOUT_READ_ONLY => Err("standard output is open for reading only: nothing could be written to it (redirect it to a file, a pipe or /dev/null)"),
        _ => Ok(()),
    }
}

/// The width `--help` is wrapped to (clap's own default).
pub const HELP_WIDTH: usize = 100;

/// Wraps every line of `text` longer than `width` characters at spaces; a continuation is
/// indented to where the line's description begins (after the option and a run of two or
/// more spaces), else as the line itself is. A word longer than the width stays whole.
pub fn wrap_help(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for line in text.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        if body.chars().count() <= width {
            out.push_str(line);
            continue;
        }
        let lead = body.len() - body.trim_start().len();
        let indent = body[lead..]
            .find("  ")
            .map(|p| lead + p)
            .map(|p| p + body[p..].len() - body[p..].trim_start().len())
            .filter(|&q| q < width * 2 / 3)
            .unwrap_or(lead);
        let mut col = 0;
        out.push_str(&body[..lead]);
        col += lead;
        let mut first = true;
        let mut rest = &body[lead..];
        while !rest.is_empty() {
            // The next word and the spaces before it.
            let spaces = rest.len() - rest.trim_start_matches(' ').len();
            let word_end = rest[spaces..].find(' ').map_or(rest.len(), |e| e + spaces);
            let (gap, word) = (&rest[..spaces], &rest[spaces..word_end]);
            rest = &rest[word_end..];
            let wlen = word.chars().count();
            if !first && col + gap.len() + wlen > width && col > indent {
                out.push('\n');
                out.extend(std::iter::repeat_n(' ', indent));
                col = indent;
            } else {
                out.push_str(gap);
                col += gap.len();
            }
            out.push_str(word);
            col += wlen;
            first = false;
        }
        out.push_str(nl);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::wrap_help;

    #[test]
    fn long_help_lines_wrap_under_their_description() {
        let text = "Options:\n  -q, --quiet        one two three four five six seven\n      --x\n          alpha beta gamma delta epsilon zeta eta\n";
        let w = wrap_help(text, 40);
        assert_eq!(
            w,
            "Options:\n  -q, --quiet        one two three four\n                     five six seven\n      --x\n          alpha beta gamma delta epsilon\n          zeta eta\n"
        );
        assert!(w.lines().all(|l| l.chars().count() <= 40));
        // Short lines are left alone.
        assert_eq!(wrap_help("a  b\n", 30), "a  b\n");
    }
}
