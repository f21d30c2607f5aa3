//! The end-of-run summary (blktrace style) and the drop warning.

use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Duration;

use crate::error::RecordError;

#[derive(Clone, Debug)]
/// What one CPU's drain did.
pub struct CpuReport {
    /// The CPU.
    pub cpu: u32,
    /// Events recorded.
    pub events: u64,
    /// Records recorded (events and notes).
    pub records: u64,
    /// Bytes recorded.
    pub bytes: u64,
    /// Records the kernel refused on this CPU (sub-buffer headers + pending at stop).
    pub lost: u64,
    /// Time from the first to the last drain pass that found data.
    pub streaming: Duration,
    /// Bytes of damaged records skipped.
    pub corrupt_bytes: u64,
}

#[derive(Clone, Debug)]
/// What was recorded of one device.
pub struct DeviceReport {
    /// The device as shown (`card0`, `ftrace amdgpu`).
    pub name: String,
    /// Its CPUs.
    pub cpus: Vec<CpuReport>,
    /// The device's `dropped` at stop.
    pub dropped: u64,
    /// `refused_cpu` of the device's `info` at stop: records refused on CPUs brought online
    /// after setup, which no stream holds (FORMAT.md §7.1).
    pub refused_cpu: u64,
}

#[derive(Debug)]
/// What a recording did, for the summary.
pub struct RunReport {
    /// Per device.
    pub devices: Vec<DeviceReport>,
    /// (path, records, bytes) of each output stream.
    pub outputs: Vec<(PathBuf, u64, u64)>,
    /// Wall time of the recording.
    pub elapsed: Duration,
    /// User + system CPU time of the recorder process during the run.
    pub cpu_time: Duration,
    /// The system (kernel) part of `cpu_time`: mostly writing the output.
    pub sys_time: Duration,
    /// `-o -` reader went away (recording stopped quietly).
    pub pipe_closed: bool,
    /// The error that ended or spoiled the run (files are still valid).
    pub failure: Option<RecordError>,
}

impl RunReport {
    /// Events recorded, all devices.
    pub fn events(&self) -> u64 {
        self.devices
            .iter()
            .flat_map(|d| &d.cpus)
            .map(|c| c.events)
            .sum()
    }
}

/// (user, system) CPU time of this process.
pub fn cpu_time() -> (Duration, Duration) {
    use nix::sys::resource::{getrusage, UsageWho};
    match getrusage(UsageWho::RUSAGE_SELF) {
        Ok(u) => {
            let tv = |t: nix::sys::time::TimeVal| {
                Duration::new(t.tv_sec() as u64, t.tv_usec() as u32 * 1000)
            };
            (tv(u.user_time()), tv(u.system_time()))
        }
        Err(_) => (Duration::ZERO, Duration::ZERO),
    }
}

/// Per-device statistics, as blktrace prints them.
pub fn print_stats(r: &RunReport, w: &mut dyn Write) -> io::Result<()> {
    for d in &r.devices {
        writeln!(w, "=== {} ===", d.name)?;
        let (mut ev, mut bytes) = (0, 0);
        for c in &d.cpus {
            writeln!(
                w,
                "  CPU {:>2}: {:>20} events, {:>8} KiB data",
                c.cpu,
                c.events,
                c.bytes.div_ceil(1024)
            )?;
            ev += c.events;
            bytes += c.bytes;
        }
        // Named only when there are some: the line stays blktrace's otherwise.
        let refused = match d.refused_cpu {
            0 => String::new(),
            n => format!(", refused {n} on CPUs online after setup"),
        };
        writeln!(
            w,
            "  Total:  {:>20} events (dropped {}{refused}), {:>8} KiB data",
            ev,
            d.dropped,
            bytes.div_ceil(1024)
        )?;
    }
    Ok(())
}

/// The drop warning, one per device that dropped anything.
pub fn print_drop_warnings(r: &RunReport, w: &mut dyn Write) -> io::Result<()> {
    for d in &r.devices {
        if d.dropped == 0 {
            continue;
        }
        let ev: u64 = d.cpus.iter().map(|c| c.events).sum();
        let pct = 100.0 * d.dropped as f64 / (ev + d.dropped).max(1) as f64;
        writeln!(
            w,
            "You have {} ({:.1}%) dropped events on {}\n\
             Consider using a larger buffer size (-b) and/or more buffers (-n)",
            d.dropped, pct, d.name
        )?;
    }
    print_refused_warnings(r, w)
}

/// One line per device whose kernel refused records on CPUs brought online after setup:
/// those CPUs are not in the `cpus` the recorder drains, so their records are in no stream.
pub fn print_refused_warnings(r: &RunReport, w: &mut dyn Write) -> io::Result<()> {
    for d in r.devices.iter().filter(|d| d.refused_cpu > 0) {
        writeln!(
            w,
            "You have {} records refused on {} on CPUs brought online after setup: they are in no stream (start grtrace after the CPUs are online)",
            d.refused_cpu, d.name
        )?;
    }
    Ok(())
}

/// `-v`: how fast each CPU was drained and what the recorder cost.
pub fn print_perf(r: &RunReport, w: &mut dyn Write) -> io::Result<()> {
    for d in &r.devices {
        for c in &d.cpus {
            let s = c.streaming.as_secs_f64();
            if s > 0.0 {
                writeln!(
                    w,
                    "{} cpu {}: drained {} events ({} bytes) in {:.3} s: {:.2} M events/s, {:.3} GB/s",
                    d.name,
                    c.cpu,
                    c.events,
                    c.bytes,
                    s,
                    c.events as f64 / s / 1e6,
                    c.bytes as f64 / s / 1e9
                )?;
            }
            if c.corrupt_bytes > 0 {
                writeln!(
                    w,
                    "{} cpu {}: skipped {} bytes of damaged records",
                    d.name, c.cpu, c.corrupt_bytes
                )?;
            }
        }
    }
    let ev = r.events();
    writeln!(
        w,
        "recorder: {:.3} s CPU ({:.3} s system) in {:.3} s wall; {:.1} ms CPU per million events",
        r.cpu_time.as_secs_f64(),
        r.sys_time.as_secs_f64(),
        r.elapsed.as_secs_f64(),
        if ev > 0 {
            r.cpu_time.as_secs_f64() * 1e3 / (ev as f64 / 1e6)
        } else {
            0.0
        }
    )
}
