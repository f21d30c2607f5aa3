//! Where an import writes: the streams' target (files `BASE.grtrace.<cpu>` or stdout),
//! checked against the input; and how a failed write or a damaged input ends it (a
//! [`Failure`]).

use std::io;
use std::path::{Path, PathBuf};

use grtrace_cli::{BaseOutputArgs, Failure};
use grtrace_format::MappedFile;
use grtrace_ftrace::out::{Streams, Target};

/// A failed output: the error names the file (and what was removed); a closed pipe is the
/// reader going away ([`Failure::is_broken_pipe`]: a quiet end, status 0).
pub(crate) fn output(e: io::Error) -> Failure {
    if grtrace_cli::is_broken_pipe(&e) {
        Failure::write("-", e)
    } else {
        Failure::Runtime(e.to_string())
    }
}

/// A [`Failure`] as the end of a run: a closed pipe is a success.
pub(crate) trait IntoResult {
    fn into_result(self) -> Result<(), Failure>;
}

impl IntoResult for Failure {
    fn into_result(self) -> Result<(), Failure> {
        if self.is_broken_pipe() {
            Ok(())
        } else {
            Err(self)
        }
    }
}

/// Where the streams of `input` go: stdout (`-o -`), or files `BASE.grtrace.<cpu>` (BASE:
/// `-o`, else the input's name without its extension; below `-D DIR` if given).
pub(crate) fn output_target(out: &BaseOutputArgs, input: &str) -> Result<Target, Failure> {
    if out.is_pipe() {
        return Ok(Target::Merged(Box::new(io::BufWriter::with_capacity(
            1 << 20,
            io::stdout(),
        ))));
    }
    let base = out
        .output
        .clone()
        .unwrap_or_else(|| default_base(input).into());
    let base = match &out.output_dir {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", grtrace_cli::show(d)))?;
            d.join(base)
        }
        None => PathBuf::from(base),
    };
    refuse_overwriting_the_input(input, &base)?;
    Ok(Target::Files(base))
}

/// The input file (mapped while the output is written) must not be one of the
/// `BASE.grtrace.<cpu>` files about to be created: `grtimport run.grtrace.0 -o run` would
/// truncate what it reads. Only the CPU number the input's own name ends in can collide.
fn refuse_overwriting_the_input(input: &str, base: &Path) -> Result<(), Failure> {
    let Some(cpu) = input
        .rsplit_once(".grtrace.")
        .and_then(|(_, n)| n.parse::<u32>().ok())
    else {
        return Ok(());
    };
    let mut read = grtrace_cli::Inputs::new();
    read.add(input);
    read.check_output("-o", Streams::file_name(base, cpu))
        .map_err(Failure::Runtime)
}

/// `trace.dat` -> `trace`, `dir/run.dat` -> `run` (written in the current directory).
fn default_base(input: &str) -> String {
    if input == "-" {
        return "imported".into();
    }
    Path::new(input)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "imported".into())
}

/// The damage `e` met in the input `name`: said as the file shrinking under the import when
/// its mapping says so (the zeros read there are no trace), else as it is.
pub(crate) fn input_error(
    name: &str,
    e: impl std::fmt::Display,
    map: Option<&MappedFile>,
) -> Failure {
    match shrank(name, map) {
        Err(f) => f,
        Ok(()) => Failure::Runtime(format!("{name}: {e} (everything before it was imported)")),
    }
}

/// An error if the mapped input shrank while it was imported. Asked after an import that met
/// no damage too: the pages past the new end read as zeros, which a trace.dat reader takes
/// for empty pages and a text reader for NULs, so the import would end early as if whole.
pub(crate) fn shrank(name: &str, map: Option<&MappedFile>) -> Result<(), Failure> {
    let (Some(m), Some(s)) = (map, map.and_then(MappedFile::shrunk)) else {
        return Ok(());
    };
    Err(Failure::Runtime(format!(
        "{name}: offset {}: the file shrank while being imported ({} bytes when opened, {}): everything before it was imported",
        s.end,
        m.bytes().len(),
        s.now.map_or("now unreadable".to_string(), |n| format!("{n} now")),
    )))
}
