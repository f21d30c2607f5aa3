//! A writer thread: appends drained chunks to its one output stream (a per-CPU file or the
//! merged stream on stdout), ends the stream with its final notes and `NOTE_STREAM_INFO`,
//! and on a write failure keeps the output ending on a whole record.

use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crossbeam_channel::{Receiver, Sender};
use grtrace_format::abi::INFO_STOPPED_CLEANLY;
use grtrace_format::{Body, Stamp, StreamHeader, StreamInfo, StreamWriter};

use crate::error::RecordError;

/// A message to the writer.
pub enum Chunk {
    /// Whole records for the output.
    Data {
        /// The encoded records.
        bytes: Vec<u8>,
        /// How many.
        records: u64,
    },
    /// One CPU of the output is done: its final notes (already encoded), and the device's
    /// `dropped` at stop. The stream ends when all its CPUs are done.
    Finish {
        /// The final notes, encoded.
        tail: Vec<u8>,
        /// Records in `tail`.
        tail_records: u64,
        /// The device's `dropped` at stop.
        kernel_dropped: u64,
        /// Whether the CPU stopped cleanly (everything drained).
        clean: bool,
        /// Time of the CPU's last record or of the stop, whichever is later.
        end_ns: u64,
    },
}

/// One output stream.
pub struct Output {
    /// File name for messages (`-` for stdout).
    pub path: PathBuf,
    /// The stream; its byte and record counts (header included in bytes) only count whole
    /// records that were written, so they are where a failed file is cut back to.
    pub stream: StreamWriter<File>,
    /// A regular file (cut back to whole records on failure), not a pipe.
    pub is_file: bool,
    /// CPUs that still have to send `Finish`.
    pub cpus_left: u32,
    /// Every CPU finished and the stream ended.
    pub ended: bool,
    /// CPU stamped on the final `NOTE_STREAM_INFO` (0 for a merged stream).
    pub cpu: u32,
    /// Latest `end_ns` of the CPUs finished so far.
    pub end_ns: u64,
}

impl Output {
    /// Creates the output with its stream header written.
    pub fn new(
        path: PathBuf,
        file: File,
        is_file: bool,
        header: &StreamHeader,
        cpus: u32,
    ) -> Result<Output, RecordError> {
        let stream = StreamWriter::new(file, header).map_err(|e| write_error(&path, e))?;
        Ok(Output {
            path,
            stream,
            is_file,
            cpus_left: cpus,
            ended: false,
            cpu: if header.is_merged() { 0 } else { header.cpu },
            end_ns: 0,
        })
    }
}

/// How the writer failed, if it did.
#[derive(Default)]
pub struct WriterFailure {
    /// The first write error.
    pub error: Option<RecordError>,
    /// The reader of `-o -` went away: stop quietly.
    pub pipe_closed: bool,
}

/// The error of a failed write to `path` (a full disk says so).
pub fn write_error(path: &std::path::Path, e: io::Error) -> RecordError {
    match e.raw_os_error() {
        Some(nix::libc::ENOSPC) | Some(nix::libc::EDQUOT) => RecordError::DiskFull {
            path: path.to_path_buf(),
        },
        _ => RecordError::io(format!("writing {}", path.display()), e),
    }
}

/// Creates (or truncates) an output file. A FIFO is opened without blocking, retried until
/// a reader comes or `stop` is set (Ctrl-C, SIGTERM): a blocking open would ignore both,
/// since the standard library retries an open interrupted by a signal.
pub fn open_output(p: &std::path::Path, stop: &AtomicBool) -> Result<File, RecordError> {
    use std::fs::OpenOptions;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let fifo = std::fs::metadata(p).is_ok_and(|m| m.file_type().is_fifo());
    if !fifo {
        return OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(p)
            .map_err(|e| write_error(p, e));
    }
    loop {
        match OpenOptions::new()
            .write(true)
            .custom_flags(nix::libc::O_NONBLOCK)
            .open(p)
        {
            Ok(f) => {
                // Back to blocking writes: the writer thread waits for the reader.
                let flags = nix::fcntl::OFlag::from_bits_truncate(
                    nix::fcntl::fcntl(f.as_raw_fd(), nix::fcntl::FcntlArg::F_GETFL)
                        .map_err(|e| write_error(p, e.into()))?,
                );
                nix::fcntl::fcntl(
                    f.as_raw_fd(),
                    nix::fcntl::FcntlArg::F_SETFL(flags - nix::fcntl::OFlag::O_NONBLOCK),
                )
                .map_err(|e| write_error(p, e.into()))?;
                return Ok(f);
            }
            Err(e) if e.raw_os_error() == Some(nix::libc::ENXIO) => {
                if stop.load(Ordering::Acquire) {
                    return Err(RecordError::io(
                        format!("{}", p.display()),
                        io::Error::other("stopped while waiting for a reader of this FIFO"),
                    ));
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => return Err(write_error(p, e)),
        }
    }
}

/// Runs until every sender is gone; returns the output's path, records and bytes.
pub fn run(
    mut o: Output,
    rx: Receiver<Chunk>,
    pool: Sender<Vec<u8>>,
    failed: Arc<AtomicBool>,
    failure: Arc<Mutex<WriterFailure>>,
) -> (PathBuf, u64, u64) {
    let mut broken = false;
    for msg in rx {
        match msg {
            Chunk::Data { bytes, records } => {
                if !broken {
                    if let Err(e) = o.stream.write_raw(&bytes, records) {
                        broken = true;
                        fail(&mut o, e, &failed, &failure);
                    }
                }
                let _ = pool.try_send(bytes);
            }
            Chunk::Finish {
                tail,
                tail_records,
                kernel_dropped,
                clean,
                end_ns,
            } => {
                if broken {
                    continue;
                }
                o.end_ns = o.end_ns.max(end_ns);
                let mut r = o.stream.write_raw(&tail, tail_records);
                if r.is_ok() {
                    o.cpus_left = o.cpus_left.saturating_sub(1);
                    if o.cpus_left == 0 && !o.ended {
                        let info = StreamInfo {
                            kernel_dropped,
                            records: o.stream.records(),
                            bytes: o.stream.bytes(),
                            flags: if clean { INFO_STOPPED_CLEANLY } else { 0 },
                        };
                        r = o.stream.write(
                            &Stamp {
                                cpu: o.cpu,
                                pid: 0,
                                time_ns: o.end_ns,
                                seq: 0,
                            },
                            &Body::StreamInfo(info),
                        );
                        if r.is_ok() {
                            o.ended = true;
                        }
                    }
                }
                if let Err(e) = r {
                    broken = true;
                    fail(&mut o, e, &failed, &failure);
                }
            }
        }
    }
    let _ = o.stream.get_mut().flush();
    (o.path, o.stream.records(), o.stream.bytes())
}

/// A write failed: cut the file back to its last whole record and tell the recorder.
fn fail(o: &mut Output, e: io::Error, failed: &AtomicBool, failure: &Mutex<WriterFailure>) {
    if o.is_file {
        let whole = o.stream.bytes();
        let _ = o.stream.get_mut().set_len(whole);
    }
    let mut f = failure.lock().unwrap_or_else(|e| e.into_inner());
    if grtrace_cli::is_broken_pipe(&e) {
        f.pipe_closed = true;
    } else if f.error.is_none() {
        f.error = Some(write_error(&o.path, e));
    }
    failed.store(true, Ordering::Release);
}
