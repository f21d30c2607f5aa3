//! What the reading tools (`grtparse`, `grtreport`) make of their input words and of `-w`:
//! the words checked ([`InputWords`]), resolved into sources with every file they read
//! remembered ([`Resolved`]), and the time window ([`parse_window`]).

use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use grtrace_format::{resolve_inputs, InputSource};

use crate::{input_error, is_dash, show, Failure, Inputs};

/// The input words of a reading tool (positional INPUTs and `-i`), checked.
#[derive(Debug, Clone)]
pub struct InputWords(Vec<OsString>, bool);

impl InputWords {
    /// The words in the order the tool takes them. An empty word is a usage error.
    pub fn new(words: Vec<OsString>) -> Result<InputWords, Failure> {
        if words.iter().any(|w| w.is_empty()) {
            return Err(Failure::Usage("an input name is empty".into()));
        }
        Ok(InputWords(words, false))
    }

    /// `-D DIR`: the relative words (not `-`) are looked for in DIR, like blkparse -D.
    /// The tool has the option: a directory given as input gets `-D` in its hint.
    pub fn in_dir(mut self, dir: Option<&Path>) -> Result<InputWords, Failure> {
        self.1 = true;
        let Some(d) = dir else { return Ok(self) };
        if !d.is_dir() {
            return Err(Failure::Usage(format!("-D {}: not a directory", show(d))));
        }
        for w in self.0.iter_mut() {
            if !is_dash(&*w) && Path::new(w).is_relative() {
                *w = d.join(&*w).into_os_string();
            }
        }
        Ok(self)
    }

    /// No words: a usage error with `msg`.
    pub fn required(self, msg: &str) -> Result<InputWords, Failure> {
        if self.0.is_empty() {
            return Err(Failure::Usage(msg.into()));
        }
        self.stdin_once()
    }

    /// No words: standard input, unless it is a terminal (then a usage error with `msg`),
    /// so that `producer | tool` works without `-`.
    pub fn or_stdin(mut self, msg: &str) -> Result<InputWords, Failure> {
        if self.0.is_empty() {
            if std::io::stdin().is_terminal() {
                return Err(Failure::Usage(msg.into()));
            }
            self.0.push("-".into());
        }
        self.stdin_once()
    }

    fn stdin_once(self) -> Result<InputWords, Failure> {
        if self.0.iter().filter(|w| is_dash(w)).count() > 1 {
            return Err(Failure::Usage(
                "stdin (-) is given more than once: it can be read only once".into(),
            ));
        }
        Ok(self)
    }

    /// The words.
    pub fn words(&self) -> &[OsString] {
        &self.0
    }

    /// Whether standard input is one of the inputs.
    pub fn reads_stdin(&self) -> bool {
        self.0.iter().any(is_dash)
    }

    /// Resolves the words into sources (see [`grtrace_format::resolve_inputs`]: base names,
    /// files, pipes, `-`). A word that names nothing is a runtime error; a directory gets a
    /// hint ([`input_error`]).
    pub fn resolve(&self) -> Result<Resolved, Failure> {
        let (sources, warnings) = resolve_inputs(&self.0).map_err(|e| {
            let mut m = input_error(&e.file, &e.to_string());
            if self.1 && Path::new(&e.file).is_dir() {
                m.push_str(&format!(", or use -D {} run", crate::one_line(&e.file)));
            }
            Failure::Runtime(m)
        })?;
        // Every file read, by device and inode: no output may be one of them.
        let mut read = Inputs::new();
        for w in &self.0 {
            read.add(w);
        }
        let mut files = Vec::new();
        for s in &sources {
            if let InputSource::File(p) = s {
                read.add(p);
                files.push(p.clone());
            }
        }
        Ok(Resolved {
            sources,
            warnings: warnings.iter().map(ToString::to_string).collect(),
            read,
            files,
        })
    }
}

/// Input words resolved into what a tool opens.
pub struct Resolved {
    /// The sources, for `Trace::open`.
    pub sources: Vec<InputSource>,
    /// Warnings of the resolution (holes in the CPU numbers, empty files left out).
    pub warnings: Vec<String>,
    /// Every file named or found, by device and inode, to refuse an output that is one.
    pub read: Inputs,
    /// The regular files among the sources (their total size drives the progress line).
    pub files: Vec<PathBuf>,
}

/// The `-w` time window the reading tools share: `END` or `START:END` in seconds since the
/// first record; an empty START is 0 and an empty END leaves the window open
/// (`u64::MAX`). Returns nanoseconds, or a message saying what is wrong.
pub fn parse_window(w: &str) -> Result<(u64, u64), String> {
    let ns = |s: &str, open: u64| -> Result<u64, String> {
        let s = s.trim();
        if s.is_empty() {
            return Ok(open);
        }
        match s.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => Ok((v * 1e9).round() as u64),
            _ => Err(format!("-w '{w}': '{s}' is not a number of seconds")),
        }
    };
    let (a, b) = match w.split_once(':') {
        Some((a, b)) => (ns(a, 0)?, ns(b, u64::MAX)?),
        None if w.trim().is_empty() => return Err(format!("-w '{w}': expected END or START:END")),
        None => (0, ns(w, u64::MAX)?),
    };
    if b < a {
        return Err(format!("-w '{w}': the window ends before it starts"));
    }
    Ok((a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_end_or_start_end_in_seconds() {
        assert_eq!(parse_window("0.5"), Ok((0, 500_000_000)));
        assert_eq!(parse_window("0.5:2"), Ok((500_000_000, 2_000_000_000)));
        assert_eq!(parse_window("1:"), Ok((1_000_000_000, u64::MAX)));
        assert_eq!(parse_window(":1"), Ok((0, 1_000_000_000)));
        assert_eq!(parse_window("1:1"), Ok((1_000_000_000, 1_000_000_000)));
        let e = parse_window("3:1").unwrap_err();
        assert!(
            e.starts_with("-w '3:1'") && e.contains("ends before"),
            "{e}"
        );
        for bad in ["", " ", "x", "1:y", "-1", "nan", "inf", "NaN:1", "1:2:3"] {
            let e = parse_window(bad).unwrap_err();
            assert!(e.starts_with(&format!("-w '{bad}'")), "{e}");
        }
    }

    #[test]
    fn input_words_are_checked_before_anything_is_opened() {
        let w = |v: &[&str]| InputWords::new(v.iter().map(OsString::from).collect());
        let msg = |r: Result<InputWords, Failure>| r.unwrap_err().message().unwrap();
        assert_eq!(msg(w(&["run", ""])), "an input name is empty");
        assert_eq!(
            msg(w(&["-", "-"]).unwrap().required("none")),
            "stdin (-) is given more than once: it can be read only once"
        );
        assert_eq!(msg(w(&[]).unwrap().required("none")), "none");
        let dir = std::env::temp_dir();
        let got = w(&["run", "/abs", "-"])
            .unwrap()
            .in_dir(Some(&dir))
            .unwrap();
        assert_eq!(
            got.words(),
            [dir.join("run").into_os_string(), "/abs".into(), "-".into()]
        );
        assert!(got.reads_stdin());
        let e = msg(w(&["run"]).unwrap().in_dir(Some(Path::new("/no/such/dir"))));
        assert_eq!(e, "-D /no/such/dir: not a directory");
    }
}
