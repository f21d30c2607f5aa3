//! # grtrace-cli
//!
//! The command-line layer every grtrace binary (`grtrace`, `grtsim`, `grtparse`, `grtreport`)
//! shares, so that they behave the same at their edges:
//!
//! * exit codes ([`exit`]) and one-line messages ([`error`], [`warning`], [`usage`]) in which
//!   any file name is shown on one line whatever bytes it holds ([`show`], [`one_line`]);
//! * outputs: `-` is standard output, errors name the file, a broken pipe is quiet
//!   ([`is_broken_pipe`]), and an output that is one of the inputs is refused before it is
//!   opened for writing ([`Inputs`], [`open_output`]);
//! * the byte-based progress line on standard error ([`Progress`], [`ProgressArgs`]);
//! * shell completions ([`CompletionArgs`]) and the check that keeps a man page in step
//!   with the real option set ([`man_page_drift`]);
//! * the one `main` of every binary ([`main`]): clap's parse, `--completions`, and the run's
//!   [`Outcome`] (a [`Failure`] is a usage, runtime or write error) turned into the status;
//! * the signals that stop a run ([`signals`]);
//! * the flags every binary takes alike, defined once ([`flags`]: inputs, filters, windows,
//!   devices, outputs);
//! * the reading tools' input words ([`InputWords`], resolved into [`Resolved`]) and their
//!   `-w` window ([`parse_window`]).
//!
//! Every `main.rs` is the same three lines:
//!
//! ```ignore
//! fn main() -> std::process::ExitCode {
//!     grtrace_cli::main(grtparse::run)
//! }
//! ```

mod entry;
pub mod flags;
mod inputs;
pub mod signals;

pub use entry::{is_broken_pipe, main, Failure, Outcome};
pub use flags::{
    BaseOutputArgs, DeviceArgs, FilterArgs, InputArgs, QuietArgs, RingArg, StopwatchArgs,
    ThreadsArgs, WindowArgs,
};
pub use inputs::{parse_window, InputWords, Resolved};

use std::ffi::OsStr;
use std::fmt::Display;
use std::fs::File;
use std::io::{self, IsTerminal, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Exit statuses shared by every binary.
pub mod exit {
    /// Everything went well.
    pub const OK: i32 = 0;
    /// A runtime problem: damaged, missing or unreadable input, an output that failed.
    pub const RUNTIME: i32 = 1;
    /// The command line itself is wrong.
    pub const USAGE: i32 = 2;
}

/// `bytes` as text on one line: control characters become `\n`, `\t`, `\r`, `\e` or `\xNN`,
/// and bytes that are not UTF-8 become `\xNN`, so a hostile file name can neither break a
/// message into several lines nor send escape sequences to the terminal.
pub fn escape_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                '\x1b' => out.push_str("\\e"),
                c if c.is_control() => {
                    let mut buf = [0u8; 4];
                    for b in c.encode_utf8(&mut buf).bytes() {
                        out.push_str(&format!("\\x{b:02x}"));
                    }
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// A message on one line (see [`escape_bytes`]).
pub fn one_line(msg: &str) -> String {
    escape_bytes(msg.as_bytes())
}

/// A path for a message: the bytes of the name, on one line (see [`escape_bytes`]).
pub fn show(p: impl AsRef<Path>) -> String {
    escape_bytes(p.as_ref().as_os_str().as_bytes())
}

/// A path as one shell word for a hint the user can paste (`'/tmp/my sim'`), on one line.
pub fn shell_word(p: impl AsRef<Path>) -> String {
    let text = show(p);
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+,:@%=".contains(&b));
    if plain {
        text
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// Prints `prog: msg` on standard error, on one line.
pub fn error(prog: &str, msg: impl Display) {
    let _ = writeln!(
        io::stderr().lock(),
        "{prog}: {}",
        one_line(&msg.to_string())
    );
}

/// Writes `prog: msg` to `err`, on one line: [`error`] for a program whose messages go to
/// a writer of its caller's choice.
pub fn error_to(err: &mut dyn Write, prog: &str, msg: impl Display) {
    let _ = writeln!(err, "{prog}: {}", one_line(&msg.to_string()));
}

/// Prints `prog: warning: msg` on standard error, on one line.
pub fn warning(prog: &str, msg: impl Display) {
    error(prog, format_args!("warning: {msg}"));
}

/// Prints a usage error and the `--help` hint; returns [`exit::USAGE`].
pub fn usage(prog: &str, msg: impl Display) -> i32 {
    error(prog, msg);
    let _ = writeln!(
        io::stderr().lock(),
        "Try '{prog} --help' for more information."
    );
    exit::USAGE
}

/// `-` (standard input or output) or a path.
pub fn is_dash(p: impl AsRef<OsStr>) -> bool {
    p.as_ref() == OsStr::new("-")
}

/// A blkparse/blktrace `-A` event mask: hex digits, `0x` optional, bit N = event code N.
/// A mask that selects nothing is an error too.
pub fn parse_hex_mask(opt: &str, s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    let mask = u64::from_str_radix(digits, 16)
        .ok()
        .filter(|_| !digits.starts_with('+'))
        .ok_or_else(|| {
            format!(
                "{opt} wants a hex event mask (bit N = event code N, e.g. 0x88), not `{}`",
                one_line(s)
            )
        })?;
    if mask == 0 {
        return Err(format!(
            "{opt} {}: the event mask selects nothing",
            one_line(s)
        ));
    }
    Ok(mask)
}

/// `--ring` as the reading tools take it: ring ids and ring names, the names resolved to
/// ids from the ring notes as they go by. A name that matches no ring note is an error,
/// known only at the end of the input ([`RingSelect::check_names`]).
#[derive(Clone, Debug, Default)]
pub struct RingSelect {
    ids: Vec<u32>,
    names: Vec<String>,
    found: Vec<bool>,
    /// Ring names seen (for the error message; at most 64).
    seen: Vec<String>,
}

impl RingSelect {
    /// Comma-separated items (`gfx,3,0x10`): numbers (decimal or 0x hex) are ids, anything
    /// else is a name.
    pub fn parse<S: AsRef<str>>(items: &[S]) -> RingSelect {
        let mut r = RingSelect::default();
        for item in items.iter().flat_map(|s| s.as_ref().split(',')) {
            let item = item.trim();
            if item.is_empty() {
                continue;
            }
            let id = match item.strip_prefix("0x") {
                Some(h) => u32::from_str_radix(h, 16).ok(),
                None => item.parse().ok(),
            };
            r.add(&match id {
                Some(id) => RingArg::Id(id),
                None => RingArg::Name(item.to_string()),
            });
        }
        r
    }

    /// The rings of `--ring` as [`FilterArgs`] parsed them.
    pub fn new(items: &[RingArg]) -> RingSelect {
        let mut r = RingSelect::default();
        for item in items {
            r.add(item);
        }
        r
    }

    fn add(&mut self, item: &RingArg) {
        match item {
            RingArg::Id(id) => self.ids.push(*id),
            RingArg::Name(name) => {
                self.names.push(name.clone());
                self.found.push(false);
            }
        }
    }

    /// Whether any ring was asked for.
    pub fn is_active(&self) -> bool {
        !self.ids.is_empty() || !self.names.is_empty()
    }

    /// Learns a ring name from a NOTE_RING (other records are ignored).
    pub fn learn(&mut self, rec: &grtrace_format::RecordView<'_>) {
        if self.names.is_empty() || rec.rtype() != grtrace_format::RecordType::NOTE_RING {
            return;
        }
        if let grtrace_format::Body::Ring(n) = rec.body() {
            let name = String::from_utf8_lossy(n.name);
            if let Some(i) = self.names.iter().position(|x| *x == name) {
                if !self.ids.contains(&n.ring) {
                    self.ids.push(n.ring);
                }
                self.found[i] = true;
            }
            if self.seen.len() < 64 && !self.seen.iter().any(|x| *x == name) {
                self.seen.push(name.into_owned());
            }
        }
    }

    /// Whether events on `ring` are selected (once names are learnt).
    #[inline]
    pub fn selects(&self, ring: u32) -> bool {
        self.ids.contains(&ring)
    }

    /// At the end of the input: an error for the first name that matched no ring.
    pub fn check_names(&self) -> Result<(), String> {
        let Some(i) = self.found.iter().position(|f| !f) else {
            return Ok(());
        };
        let known = if self.seen.is_empty() {
            "the input has no ring notes: give ring ids".to_string()
        } else {
            format!("rings: {}", self.seen.join(", "))
        };
        Err(format!(
            "--ring {}: no ring of that name in the input ({known})",
            one_line(&self.names[i])
        ))
    }
}

/// The files a run reads, by device and inode, so that no output can be one of them.
#[derive(Debug, Default, Clone)]
pub struct Inputs {
    ids: Vec<(u64, u64, PathBuf)>,
}

impl Inputs {
    /// No inputs yet.
    pub fn new() -> Inputs {
        Inputs::default()
    }

    /// Remembers an input file (names that cannot be examined are skipped: opening them
    /// fails later with its own message).
    pub fn add(&mut self, p: impl AsRef<Path>) {
        let p = p.as_ref();
        if is_dash(p) {
            return;
        }
        if let Ok(m) = std::fs::metadata(p) {
            self.ids.push((m.dev(), m.ino(), p.to_path_buf()));
        }
    }

    /// Inputs remembered.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether no input was remembered.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The input `out` is (same device and inode), if it is one. Checked before an output
    /// is opened, because opening it for writing would already truncate the input.
    pub fn same_as(&self, out: impl AsRef<Path>) -> Option<&Path> {
        let out = out.as_ref();
        if is_dash(out) {
            return None;
        }
        let m = std::fs::metadata(out).ok()?;
        self.ids
            .iter()
            .find(|(dev, ino, _)| *dev == m.dev() && *ino == m.ino())
            .map(|(_, _, p)| p.as_path())
    }

    /// A one-line refusal when `out` (given with `opt`) is one of the inputs.
    pub fn check_output(&self, opt: &str, out: impl AsRef<Path>) -> Result<(), String> {
        let out = out.as_ref();
        match self.same_as(out) {
            Some(input) if input == out => Err(format!(
                "{opt} {}: is also an input: refusing to overwrite it",
                show(out)
            )),
            Some(input) => Err(format!(
                "{opt} {}: is the input {}: refusing to overwrite it",
                show(out),
                show(input)
            )),
            None => Ok(()),
        }
    }
}

/// The message for an input that could not be resolved: a directory gets a hint (give a
/// base name in it, or its files; not `-D`, which only grtparse has) instead of "no such
/// file".
pub fn input_error(file: &str, msg: &str) -> String {
    if Path::new(file).is_dir() {
        format!(
            "{}: is a directory: give a base name in it ({}/run) or its files",
            one_line(file),
            one_line(file.trim_end_matches('/')),
        )
    } else {
        msg.to_string()
    }
}

/// An opened output: standard output for `-`, else a created file.
pub struct Output {
    /// The name as given (`-` for standard output), for messages.
    pub name: PathBuf,
    /// The file, or None for standard output.
    pub file: Option<File>,
}

impl Output {
    /// The name for messages (`-` for standard output), on one line.
    pub fn display(&self) -> String {
        show(&self.name)
    }

    /// The output as a writer.
    pub fn into_writer(self) -> Box<dyn Write + Send> {
        match self.file {
            Some(f) => Box::new(f),
            None => Box::new(io::stdout()),
        }
    }

    /// The output as a writer whose errors name it (`FILE: error`, an [`OutputError`] of the
    /// error's own kind, so that a closed standard output still ends quietly; a named pipe
    /// whose reader left is an error like any other: the export is not whole), and which
    /// removes the file at the first
    /// failed write when it is a regular file: half an export or stream is never left
    /// behind to be read as a whole one (a zero-byte file after "No space left on device").
    pub fn into_checked_writer(self) -> Box<dyn Write + Send> {
        let remove = self
            .file
            .as_ref()
            .is_some_and(|f| f.metadata().is_ok_and(|m| m.is_file()));
        let name = self.name.clone();
        let stdout = self.file.is_none();
        Box::new(CheckedWriter {
            w: self.into_writer(),
            name,
            stdout,
            remove,
            failed: false,
        })
    }

    /// A handle on the file when it is a regular file (to rewrite a header at the end).
    pub fn regular_file(&self) -> Option<File> {
        let f = self.file.as_ref()?;
        let regular = f.metadata().map(|m| m.is_file()).unwrap_or(false);
        if regular {
            f.try_clone().ok()
        } else {
            None
        }
    }

    /// A one-line write error that names this output.
    pub fn write_error(&self, e: &io::Error) -> String {
        write_error(&self.name, e)
    }
}

/// See [`Output::into_checked_writer`].
struct CheckedWriter {
    w: Box<dyn Write + Send>,
    name: PathBuf,
    stdout: bool,
    remove: bool,
    failed: bool,
}

impl CheckedWriter {
    fn fail(&mut self, e: io::Error) -> io::Error {
        let mut msg = write_error(&self.name, &e);
        if self.remove && !self.failed && std::fs::remove_file(&self.name).is_ok() {
            msg.push_str(" (removed)");
        }
        self.failed = true;
        let kind = match e.kind() {
            io::ErrorKind::BrokenPipe if !self.stdout => io::ErrorKind::Other,
            kind => kind,
        };
        io::Error::new(kind, OutputError(msg))
    }
}

/// A failed write of an output, naming it (`FILE: error`): the errors of
/// [`Output::into_checked_writer`].
#[derive(Debug)]
pub struct OutputError(String);

impl Display for OutputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for OutputError {}

/// Whether `e` names the output it failed on already ([`OutputError`]): shown as it is,
/// not under the name of another output.
pub fn names_its_output(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<OutputError>())
}

impl Write for CheckedWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.w.write(buf).map_err(|e| self.fail(e))
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.w.write_all(buf).map_err(|e| self.fail(e))
    }
    fn flush(&mut self) -> io::Result<()> {
        self.w.flush().map_err(|e| self.fail(e))
    }
}

/// `FILE: <error>` (`-` names standard output).
pub fn write_error(name: &Path, e: &io::Error) -> String {
    let name = if is_dash(name) {
        "standard output".to_string()
    } else {
        show(name)
    };
    format!("{name}: {e}")
}

/// Opens an output given with option `opt`: `-` is standard output; a file is created only
/// after checking that it is none of `inputs`. The error is one line naming the file.
pub fn open_output(opt: &str, name: impl AsRef<Path>, inputs: &Inputs) -> Result<Output, String> {
    let name = name.as_ref();
    if is_dash(name) {
        return Ok(Output {
            name: name.to_path_buf(),
            file: None,
        });
    }
    if name.as_os_str().is_empty() {
        return Err(format!("{opt}: the file name is empty"));
    }
    inputs.check_output(opt, name)?;
    match File::create(name) {
        Ok(f) => Ok(Output {
            name: name.to_path_buf(),
            file: Some(f),
        }),
        Err(e) => Err(format!("{}: cannot create: {e}", show(name))),
    }
}

/// When to show the progress line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgressMode {
    /// When standard error is a terminal and the input is big.
    Auto,
    /// Always (also into a file or pipe: one line per update).
    Always,
    /// Never.
    Never,
}

/// `--progress` / `--no-progress`, for binaries that read big inputs.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct ProgressArgs {
    /// Show the progress line on stderr even when it is not a terminal
    #[arg(long, conflicts_with = "no_progress")]
    pub progress: bool,
    /// Never show the progress line (shown by default on a terminal for inputs of 64 MiB or more)
    #[arg(long)]
    pub no_progress: bool,
}

impl ProgressArgs {
    /// The mode the options ask for.
    pub fn mode(&self) -> ProgressMode {
        match (self.progress, self.no_progress) {
            (true, _) => ProgressMode::Always,
            (_, true) => ProgressMode::Never,
            _ => ProgressMode::Auto,
        }
    }
}

/// Inputs below this size finish too fast to need a progress line (in `Auto` mode).
pub const PROGRESS_MIN_BYTES: u64 = 64 << 20;
/// Time between two progress lines.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// A byte-based progress line on standard error: `grtparse: 42% (113 of 270 MiB)`.
///
/// [`update`](Self::update) is cheap enough for every record: it compares one number and
/// only looks at the clock every 1/1024 of the input (or 1 MiB when the size is unknown).
pub struct Progress {
    prog: &'static str,
    total: u64,
    enabled: bool,
    terminal: bool,
    next_at: u64,
    step: u64,
    last: Instant,
    shown: bool,
}

impl Progress {
    /// A progress line for `total` input bytes (0 when unknown, e.g. stdin).
    pub fn new(prog: &'static str, total: u64, mode: ProgressMode) -> Progress {
        let terminal = io::stderr().is_terminal();
        let enabled = match mode {
            ProgressMode::Always => true,
            ProgressMode::Never => false,
            ProgressMode::Auto => terminal && total >= PROGRESS_MIN_BYTES,
        };
        let step = if total > 0 {
            (total / 1024).max(1)
        } else {
            1 << 20
        };
        let mut p = Progress {
            prog,
            total,
            enabled,
            terminal,
            next_at: 0,
            step,
            last: Instant::now(),
            shown: false,
        };
        if p.enabled && mode == ProgressMode::Always {
            p.print(0);
        }
        p
    }

    /// Whether the line is shown at all.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// `done` bytes of the input are processed.
    #[inline(always)]
    pub fn update(&mut self, done: u64) {
        if self.enabled && done >= self.next_at {
            self.tick(done);
        }
    }

    #[cold]
    fn tick(&mut self, done: u64) {
        self.next_at = done.saturating_add(self.step);
        if self.last.elapsed() >= PROGRESS_EVERY {
            self.last = Instant::now();
            self.print(done);
        }
    }

    fn print(&mut self, done: u64) {
        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        let text = if self.total > 0 {
            format!(
                "{}: {:3}% ({:.0} of {:.0} MiB)",
                self.prog,
                (done.min(self.total) as u128 * 100 / self.total as u128),
                mib(done),
                mib(self.total)
            )
        } else {
            format!("{}: {:.0} MiB read", self.prog, mib(done))
        };
        let mut e = io::stderr().lock();
        let _ = if self.terminal {
            write!(e, "\r{text}\x1b[K")
        } else {
            writeln!(e, "{text}")
        };
        self.shown = true;
    }

    /// The work is over: a terminal line is cleared (messages follow on a clean line);
    /// elsewhere the final figure is printed.
    pub fn finish(&mut self, done: u64) {
        if !self.enabled {
            return;
        }
        if self.terminal {
            if self.shown {
                let _ = write!(io::stderr().lock(), "\r\x1b[K");
            }
        } else {
            self.print(done);
        }
        self.enabled = false;
    }
}

/// Bytes of the regular files among `paths` (for the progress line's total).
pub fn total_size<P: AsRef<Path>>(paths: impl IntoIterator<Item = P>) -> u64 {
    paths
        .into_iter()
        .filter_map(|p| std::fs::metadata(p.as_ref()).ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

/// `--completions SHELL`, shared by every binary.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct CompletionArgs {
    /// Print a completion script for SHELL (bash, zsh, fish, elvish, powershell) and exit
    #[arg(long, value_name = "SHELL")]
    pub completions: Option<clap_complete::Shell>,
}

impl CompletionArgs {
    /// The shell `--completions` asks for, in parsed arguments of a command that has
    /// [`CompletionArgs`] (None when it was not given or the command has no such option).
    pub fn asked(m: &clap::ArgMatches) -> Option<clap_complete::Shell> {
        m.try_get_one::<clap_complete::Shell>("completions")
            .ok()
            .flatten()
            .copied()
    }

    /// Writes the completion script of `C` for `shell` to standard output.
    pub fn print<C: clap::CommandFactory>(shell: clap_complete::Shell) {
        let mut cmd = C::command();
        let name = cmd.get_name().to_string();
        clap_complete::generate(shell, &mut cmd, name, &mut io::stdout());
    }
}

/// The two tests of every binary's `tests/man_page.rs`, so that neither its man page nor its
/// completion scripts can drift from its options: `man/PAGE` lists exactly the options of
/// `ARGS` ([`assert_man_page_matches`]), and the completion scripts the binary prints offer
/// every one ([`assert_completions_offer`]). Called as
/// `grtrace_cli::man_page_tests!(ARGS, "PAGE", env!("CARGO_BIN_EXE_NAME"));` from a crate
/// two levels below the repository root (`crates/NAME`), where `man/` is.
#[macro_export]
macro_rules! man_page_tests {
    ($args:ty, $page:literal, $bin:expr) => {
        #[test]
        fn man_page_lists_exactly_the_real_options() {
            let text = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../man/", $page));
            $crate::assert_man_page_matches::<$args>($page, text);
        }

        #[test]
        fn completions_offer_every_option_in_bash_zsh_and_fish() {
            $crate::assert_completions_offer::<$args>(::std::path::Path::new($bin));
        }
    };
}

/// Runs `cmd` to its end, its output captured, and asserts that it succeeded (the command
/// and its standard error in the message); returns what it did. For tests.
pub fn succeed(cmd: &mut std::process::Command) -> std::process::Output {
    let out = cmd.output().expect("the command runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{cmd:?}: {err}");
    out
}

/// Runs `cmd` to its end and asserts that it failed as a run fails, exit status 1 (its
/// standard error in the message); returns its standard error. For tests.
pub fn fail(cmd: &mut std::process::Command) -> String {
    let out = cmd.output().expect("the command runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{cmd:?}: {err}");
    err
}

/// Runs `cmd` as `cmd | head -1` would: reads the first line it writes on standard output,
/// then closes the pipe and waits for it to end. Returns the line and what the command did
/// (its standard error captured). For the tests that a closed pipe ends a binary quietly.
pub fn first_line_then_close(cmd: &mut std::process::Command) -> (String, std::process::Output) {
    use std::io::BufRead;
    use std::process::Stdio;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the command starts");
    let mut first = String::new();
    io::BufReader::new(child.stdout.take().expect("piped stdout"))
        .read_line(&mut first)
        .expect("a line of output");
    // The reader is dropped here, like `head -1` exiting.
    (first, child.wait_with_output().expect("the command ends"))
}

/// Runs `cmd` fed `input` on its standard input, as `... | cmd` would, its output captured;
/// returns what it did and how writing the pipe went (a command that stops reading early
/// breaks it). A thread of its own writes the input, so a command that writes while it
/// reads cannot stall on a full pipe.
pub fn run_fed(
    cmd: &mut std::process::Command,
    input: &[u8],
) -> (std::process::Output, io::Result<()>) {
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the command starts");
    let mut stdin = child.stdin.take().expect("piped stdin");
    let input = input.to_vec();
    let feeder = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("the command ends");
    (out, feeder.join().expect("the feeding thread"))
}

/// Runs binary `bin` with `args` and its standard output closed (`bin args >&-`, through
/// `sh`), and asserts that it refuses to run as every binary must: exit status 1 and one
/// line of error, `NAME: standard output is closed: ...`, NAME being the binary's.
pub fn assert_refuses_closed_stdout<S: AsRef<std::ffi::OsStr>>(
    bin: &Path,
    args: impl IntoIterator<Item = S>,
) {
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c")
        .arg("exec \"$0\" \"$@\" >&-")
        .arg(bin)
        .args(args);
    let o = cmd.output().expect("sh runs");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{cmd:?}: {err}");
    let name = bin.file_name().expect("a binary's path").to_string_lossy();
    let refusal = format!("{name}: standard output is closed: ");
    assert!(err.starts_with(&refusal), "{cmd:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{cmd:?}: {err}");
}

/// Panics, naming every disagreement ([`man_page_drift`]), unless the man page `page` (its
/// text `man`) lists exactly the options of `C`.
pub fn assert_man_page_matches<C: clap::CommandFactory>(page: &str, man: &str) {
    let cmd = C::command();
    let drift = man_page_drift(&cmd, man);
    assert!(
        drift.is_empty(),
        "man/{page} and {} disagree: {drift:#?}",
        cmd.get_name()
    );
}

/// Panics, naming what is wrong ([`completion_drift`]), unless the completion scripts that
/// binary `bin` prints offer every option of `C`.
pub fn assert_completions_offer<C: clap::CommandFactory>(bin: &Path) {
    let drift = completion_drift(bin, &C::command());
    assert!(drift.is_empty(), "{}: {drift:#?}", bin.display());
}

/// Where a man page and the real command line disagree: options clap knows that the page's
/// OPTIONS section does not list, and options the page lists that clap does not know. Empty
/// when they agree. Hidden options are not expected on the page.
pub fn man_page_drift(cmd: &clap::Command, man: &str) -> Vec<String> {
    let mut real: Vec<String> = vec!["--help".into(), "-h".into(), "--version".into()];
    if cmd.get_version().is_some() {
        real.push("-V".into());
    }
    for a in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        if let Some(l) = a.get_long() {
            real.push(format!("--{l}"));
        }
        if let Some(s) = a.get_short() {
            real.push(format!("-{s}"));
        }
        for l in a.get_visible_aliases().into_iter().flatten() {
            real.push(format!("--{l}"));
        }
    }
    let listed = man_options(man);
    let mut drift = Vec::new();
    for o in &real {
        if !listed.contains(o) {
            drift.push(format!("{o}: an option the man page does not list"));
        }
    }
    for o in &listed {
        if !real.contains(o) {
            drift.push(format!(
                "{o}: listed in the man page, unknown to the program"
            ));
        }
    }
    drift
}

/// Checks the completion scripts a binary prints (`BIN --completions SHELL`) for bash, zsh
/// and fish: each must offer every visible long option of `cmd`, and the bash one must
/// parse (`bash -n`). Returns what is wrong, empty when all is well.
pub fn completion_drift(bin: &Path, cmd: &clap::Command) -> Vec<String> {
    let mut drift = Vec::new();
    for shell in ["bash", "zsh", "fish"] {
        let out = match std::process::Command::new(bin)
            .args(["--completions", shell])
            .output()
        {
            Ok(o) if o.status.success() => o.stdout,
            Ok(o) => {
                drift.push(format!("{shell}: exit status {}", o.status));
                continue;
            }
            Err(e) => {
                drift.push(format!("{shell}: {e}"));
                continue;
            }
        };
        let script = String::from_utf8_lossy(&out);
        for a in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
            if let Some(l) = a.get_long() {
                // fish writes `-l name`, bash and zsh `--name`.
                let offered =
                    script.contains(&format!("--{l}")) || script.contains(&format!("-l {l}"));
                if !offered {
                    drift.push(format!("{shell}: --{l} not offered"));
                }
            }
        }
        if shell == "bash" {
            let ok = std::process::Command::new("bash")
                .args(["-n", "-c", &script])
                .status()
                .map(|s| s.success())
                .unwrap_or(true);
            if !ok {
                drift.push("bash: the script does not parse".into());
            }
        }
    }
    drift
}

/// The options named on the item lines (after `.TP`) of a man page's OPTIONS section.
fn man_options(man: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_options = false;
    let mut after_tp = false;
    for line in man.lines() {
        if let Some(title) = line.strip_prefix(".SH") {
            in_options = title.trim().trim_matches('"') == "OPTIONS";
            continue;
        }
        if !in_options {
            continue;
        }
        if line.starts_with(".TP") {
            after_tp = true;
            continue;
        }
        if !after_tp {
            continue;
        }
        after_tp = false;
        // Drop font changes (\fB, \fR, \fP, \fI), then un-escape hyphens.
        let mut text = String::new();
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\\' && chars.peek() == Some(&'f') {
                chars.next();
                chars.next();
            } else {
                text.push(c);
            }
        }
        let text = text.replace("\\-", "-");
        for tok in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')) {
            let long = tok.len() > 2 && tok.starts_with("--");
            let short = tok.len() == 2 && tok.starts_with('-') && tok != "--";
            if (long || short) && !out.iter().any(|o| o == tok) {
                out.push(tok.to_string());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_masks_follow_blkparse() {
        assert_eq!(parse_hex_mask("-A", "88"), Ok(0x88));
        assert_eq!(parse_hex_mask("-A", "0xFF"), Ok(0xff));
        for bad in [
            "",
            "0",
            "0x",
            "xyz",
            "+5",
            "SUBMIT,END",
            "1ffffffffffffffff",
        ] {
            assert!(parse_hex_mask("-A", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn hints_quote_paths_for_the_shell() {
        assert_eq!(shell_word("/tmp/sim"), "/tmp/sim");
        assert_eq!(shell_word("/tmp/my sim"), "'/tmp/my sim'");
        assert_eq!(shell_word("/tmp/it's"), "'/tmp/it'\\''s'");
    }

    #[test]
    fn hostile_names_stay_on_one_line() {
        assert_eq!(escape_bytes(b"run\nx\t\x1b[2J"), "run\\nx\\t\\e[2J");
        assert_eq!(escape_bytes(b"caf\xe9.grtrace.0"), "caf\\xe9.grtrace.0");
        assert_eq!(escape_bytes("ünï".as_bytes()), "ünï");
        assert_eq!(escape_bytes(b"\x00\x7f"), "\\x00\\x7f");
        let p = Path::new(OsStr::from_bytes(b"a\nb\xff"));
        assert_eq!(show(p), "a\\nb\\xff");
    }

    #[test]
    fn an_output_that_is_an_input_is_refused_before_it_is_opened() {
        let dir = std::env::temp_dir().join(format!("grtrace-cli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("in");
        std::fs::write(&input, b"precious").unwrap();
        let link = dir.join("link");
        let _ = std::fs::remove_file(&link);
        std::fs::hard_link(&input, &link).unwrap();
        let mut inputs = Inputs::new();
        inputs.add(&input);
        inputs.add("-");
        assert_eq!(inputs.len(), 1);
        let e = open_output("-o", &input, &inputs).err().unwrap();
        assert!(e.contains("is also an input"), "{e}");
        let e = open_output("-o", &link, &inputs).err().unwrap();
        assert!(e.contains("is the input"), "{e}");
        assert_eq!(std::fs::read(&input).unwrap(), b"precious");
        assert!(open_output("-o", "-", &inputs).unwrap().file.is_none());
        let e = open_output("-o", dir.join("no/such/dir"), &inputs)
            .err()
            .unwrap();
        assert!(e.contains("no/such/dir: cannot create"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn man_options_are_read_from_item_lines_only() {
        let man = ".SH OPTIONS\n.TP\n.BI \\-i \" INPUT\" \"\\fR, \\fP\\-\\-input \" INPUT\nText about \\-\\-other.\n.TP\n.B \\-\\-wall\n.SH SEE ALSO\n.TP\n.B \\-\\-nope\n";
        assert_eq!(man_options(man), ["-i", "--input", "--wall"]);
    }
}
