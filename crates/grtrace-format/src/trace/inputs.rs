//! Input discovery: command-line words to [`InputSource`]s (base names, files, FIFOs, stdin).

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use super::{ErrorKind, TraceError, Warning};

/// Where records come from.
#[non_exhaustive]
pub enum InputSource {
    /// A regular file, mapped read-only.
    File(PathBuf),
    /// A byte stream read incrementally (stdin, a FIFO).
    Stream {
        /// Name used in messages.
        name: String,
        /// Where the bytes are read from (`Send`: a [`Trace`](super::Trace) may be merged
        /// on another thread than the one that opened it).
        reader: Box<dyn Read + Send>,
    },
    /// Bytes already in memory (tests, fuzzing).
    Bytes {
        /// Name used in messages.
        name: String,
        /// The stream's bytes, header included.
        data: Vec<u8>,
    },
}

impl InputSource {
    /// Standard input, named `-` in messages... like blkparse's `-i -`.
    pub fn stdin() -> InputSource {
        InputSource::Stream {
            name: "(stdin)".to_string(),
            reader: Box::new(io::stdin()),
        }
    }

    /// The name messages use for this input: the file path, or the stream's name.
    pub fn name(&self) -> String {
        match self {
            InputSource::File(p) => p.display().to_string(),
            InputSource::Stream { name, .. } | InputSource::Bytes { name, .. } => name.clone(),
        }
    }
}

impl fmt::Debug for InputSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputSource::File(p) => write!(f, "File({})", p.display()),
            InputSource::Stream { name, .. } => write!(f, "Stream({name})"),
            InputSource::Bytes { name, data } => write!(f, "Bytes({name}, {} bytes)", data.len()),
        }
    }
}

/// Turns command-line input words into sources.
///
/// * `-` is stdin.
/// * An existing regular file is mapped; a FIFO or character device is read as a stream.
/// * Anything else is a base name: every `<base>.grtrace.<cpu>` in its directory, sorted by CPU.
///   Holes in the CPU numbers and empty files are reported as warnings (empty files are left
///   out); a base name with no files at all is an error.
pub fn resolve_inputs<S: AsRef<std::ffi::OsStr>>(
    args: &[S],
) -> Result<(Vec<InputSource>, Vec<Warning>), TraceError> {
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    for arg in args {
        // Any path, UTF-8 or not (names in messages are shown lossily).
        let path = Path::new(arg.as_ref());
        let name = || path.display().to_string();
        if path.as_os_str() == "-" {
            out.push(InputSource::stdin());
            continue;
        }
        match std::fs::metadata(path) {
            Ok(m) if m.is_file() => out.push(InputSource::File(path.to_path_buf())),
            Ok(m) if !m.is_dir() => {
                let f = File::open(path).map_err(|e| TraceError {
                    file: name(),
                    error: ErrorKind::Input(e.to_string()),
                })?;
                out.push(InputSource::Stream {
                    name: name(),
                    reader: Box::new(f),
                });
            }
            _ => {
                let (found, mut w) = find_cpu_files(path).map_err(|m| TraceError {
                    file: name(),
                    error: ErrorKind::Input(m),
                })?;
                warnings.append(&mut w);
                out.extend(found.into_iter().map(InputSource::File));
            }
        }
    }
    Ok((out, warnings))
}

/// Most ranges a "missing CPU files" warning lists; the rest are counted.
const MAX_RANGES_SHOWN: usize = 8;

/// `1,3-7,9` for sorted, distinct CPU numbers missing between the files found; at most
/// [`MAX_RANGES_SHOWN`] ranges, then how many more. Computed from the files present, so its
/// cost and length do not depend on the CPU numbers (a stray `run.grtrace.4294967295` is one
/// range, not four billion numbers).
fn missing_ranges(present: &[u32]) -> Option<String> {
    let mut ranges = Vec::new();
    let mut more = 0u64;
    let mut expect = 0u32;
    for &cpu in present {
        if cpu > expect {
            if ranges.len() < MAX_RANGES_SHOWN {
                ranges.push(if cpu - 1 == expect {
                    expect.to_string()
                } else {
                    format!("{expect}-{}", cpu - 1)
                });
            } else {
                more += 1;
            }
        }
        expect = cpu.saturating_add(1);
    }
    if ranges.is_empty() {
        return None;
    }
    let mut s = ranges.join(",");
    if more > 0 {
        s.push_str(&format!(" and {more} more range(s)"));
    }
    Some(s)
}

/// The device part of a recorder file name `BASE.<dev>.grtrace.<cpu>` (`card<N>`), as
/// written by `grtrace -d card0 -d card1 -o BASE`.
fn is_card_name(s: &str) -> bool {
    crate::Card::from_label(s).is_some()
}

/// Whether the stream file at `p` has [`abi::STREAM_CPUS_WHOLE`] in its header (an
/// unreadable or damaged header: no).
fn cpus_whole(p: &Path) -> bool {
    let mut buf = [0u8; crate::abi::STREAM_HEADER_SIZE];
    File::open(p)
        .and_then(|mut f| f.read_exact(&mut buf))
        .ok()
        .and_then(|_| crate::StreamHeader::parse(&buf).ok())
        .is_some_and(|h| h.flags & crate::abi::STREAM_CPUS_WHOLE != 0)
}

/// Every file a base name stands for (`<base>.grtrace.<cpu>` and
/// `<base>.card<N>.grtrace.<cpu>`, empty ones included), in no particular order: what
/// [`resolve_inputs`] would read, for a recorder that must not leave stale ones beside the
/// files it writes. An unreadable directory lists nothing.
pub fn base_files(base: &Path) -> Vec<PathBuf> {
    scan_base(base).map_or_else(|_| Vec::new(), |v| v.into_iter().map(|c| c.2).collect())
}

/// (device: "" or "cardN", cpu, path, length) of every file of a base name.
type BaseFile = (String, u32, PathBuf, u64);

fn scan_base(base: &Path) -> Result<Vec<BaseFile>, String> {
    use std::os::unix::ffi::OsStrExt;
    // Keep names as the user wrote them: `run` finds `run.grtrace.0`, not `./run.grtrace.0`.
    let (dir, prefix_dir) = match base.parent() {
        Some(d) if !d.as_os_str().is_empty() => (d.to_path_buf(), d.to_path_buf()),
        _ => (PathBuf::from("."), PathBuf::new()),
    };
    let stem = base
        .file_name()
        .ok_or_else(|| "not a file name".to_string())?;
    // Matched as bytes: a base name need not be UTF-8; the rest of a name must be.
    let mut prefix = stem.to_os_string();
    prefix.push(".");
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("no such file ({e})"))?;
    let mut cpus: Vec<BaseFile> = Vec::new();
    for ent in entries.flatten() {
        let name = ent.file_name();
        let Some(rest) = name
            .as_bytes()
            .strip_prefix(prefix.as_bytes())
            .and_then(|n| std::str::from_utf8(n).ok())
        else {
            continue;
        };
        let Some((dev, num)) = rest.rsplit_once("grtrace.") else {
            continue;
        };
        let dev = match dev {
            "" => "",
            d => match d.strip_suffix('.') {
                Some(d) if is_card_name(d) => d,
                _ => continue,
            },
        };
        if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(cpu) = num.parse::<u32>() else {
            continue;
        };
        let len = ent.metadata().map(|m| m.len()).unwrap_or(0);
        cpus.push((dev.to_string(), cpu, prefix_dir.join(name), len));
    }
    Ok(cpus)
}

/// Every `<base>.grtrace.<cpu>` and `<base>.card<N>.grtrace.<cpu>` file, sorted by device then
/// CPU, with warnings for holes (per device) and empty files.
fn find_cpu_files(base: &Path) -> Result<(Vec<PathBuf>, Vec<Warning>), String> {
    let mut cpus = scan_base(base)?;
    let mut prefix = base.file_name().unwrap_or_default().to_os_string();
    prefix.push(".");
    if cpus.is_empty() {
        return Err(format!(
            "no such file, and no {}grtrace.<cpu> or {}card<N>.grtrace.<cpu> files",
            base.with_file_name(&prefix).display(),
            base.with_file_name(&prefix).display()
        ));
    }
    // Devices in numeric order (card2 before card10), then CPUs.
    let dev_key = |d: &str| crate::Card::from_label(d);
    cpus.sort_by(|a, b| (dev_key(&a.0), &a.0, a.1).cmp(&(dev_key(&b.0), &b.0, b.1)));
    let mut warnings = Vec::new();
    for group in cpus.chunk_by(|a, b| a.0 == b.0) {
        let present: Vec<u32> = group.iter().map(|c| c.1).collect();
        // An importer's files say when the set is whole (a CPU without a file had nothing).
        let whole = group.iter().any(|c| c.3 > 0 && cpus_whole(&c.2));
        if let Some(missing) = missing_ranges(&present).filter(|_| !whole) {
            let who = match group[0].0.as_str() {
                "" => base.display().to_string(),
                d => format!("{}.{d}", base.display()),
            };
            warnings.push(Warning::MissingCpuFiles { base: who, missing });
        }
    }
    let mut files = Vec::new();
    for (_, _, path, len) in cpus {
        if len == 0 {
            warnings.push(Warning::EmptyFile {
                file: path.display().to_string(),
            });
        } else {
            files.push(path);
        }
    }
    Ok((files, warnings))
}
