//! The text files of the relay device directory (FORMAT.md §7.1): `info`, `state`, `ctl`
//! commands and `consumed` lines.

use std::fmt;
use std::str::FromStr;

use crate::abi::subbuf;
use crate::vocab::RecordType;

/// `"<cpu> <n>\n"`: the line written to `consumed`.
pub fn consumed_line(cpu: u32, n: u64) -> String {
    format!("{cpu} {n}\n")
}

/// Parses one `consumed` line.
pub fn parse_consumed_line(line: &str) -> Option<(u32, u64)> {
    let mut it = line.split_whitespace();
    let cpu = it.next()?.parse().ok()?;
    let n = it.next()?.parse().ok()?;
    it.next().is_none().then_some((cpu, n))
}

/// Device state as `info` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DevState {
    /// `idle`: no relay channel; `setup` creates one.
    Idle,
    /// `setup`: the relay channel exists, nothing is written yet.
    Setup,
    /// `running`: records are being written (after `start`).
    Running,
    /// `stopped`: writing stopped and every sub-buffer with data flushed as `FINAL`.
    Stopped,
}

impl DevState {
    /// The word `info` uses for this state.
    pub fn name(self) -> &'static str {
        match self {
            DevState::Idle => "idle",
            DevState::Setup => "setup",
            DevState::Running => "running",
            DevState::Stopped => "stopped",
        }
    }
    /// The state named by an `info` word, or `None` for an unknown word.
    pub fn from_name(s: &str) -> Option<DevState> {
        Some(match s {
            "idle" => DevState::Idle,
            "setup" => DevState::Setup,
            "running" => DevState::Running,
            "stopped" => DevState::Stopped,
            _ => return None,
        })
    }
}

/// The `info` file (FORMAT.md §7.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Info {
    /// `version`: the protocol and format version, e.g. `1.0` (parsing accepts only 1.x).
    pub version: String,
    /// `card`: the DRM card index N of `cardN`.
    pub card: u32,
    /// `driver`: the driver name, e.g. `virtio_gpu`.
    pub driver: String,
    /// `state`: where the device is in setup, start, stop and teardown.
    pub state: DevState,
    /// `subbuf_size`: bytes per relay sub-buffer; 0 when idle.
    pub subbuf_size: usize,
    /// `n_subbufs`: sub-buffers per CPU relay buffer.
    pub n_subbufs: usize,
    /// `subbuf_header`: size in bytes of the sub-buffer header.
    pub subbuf_header: usize,
    /// `cpus`: the CPUs that have a `trace<cpu>` file.
    pub cpus: Vec<u32>,
    /// `clock`: Linux clock id of every record time.
    pub clock: u32,
    /// `session`: the random session id the stream headers carry.
    pub session: u64,
    /// `anchor` (first number): `CLOCK_REALTIME` ns at the anchor instant.
    pub anchor_realtime_ns: u64,
    /// `anchor` (second number): `CLOCK_MONOTONIC` ns at the same instant.
    pub anchor_clock_ns: u64,
    /// `byte_order`: whether the device writes little-endian records.
    pub little_endian: bool,
    /// `simulated 1`: written by grtsim only (sets the stream header's SIMULATED flag).
    pub simulated: bool,
    /// `refused_cpu`: records refused since setup on CPUs brought online after it (not in
    /// `cpus`, so no recorder drains them); counted in neither `dropped` nor any sub-buffer's
    /// `lost`. 0 when the key is absent (a kernel without CPU hotplug accounting).
    pub refused_cpu: u64,
}

impl Info {
    /// The byte order of the device's records (`little_endian`).
    pub fn endian(&self) -> crate::Endian {
        if self.little_endian {
            crate::Endian::Little
        } else {
            crate::Endian::Big
        }
    }

    /// Parses `info`. Unknown keys are ignored; `#` starts a comment.
    pub fn parse(text: &str) -> Result<Info, String> {
        let mut info = Info {
            version: String::new(),
            card: 0,
            driver: String::new(),
            state: DevState::Idle,
            subbuf_size: 0,
            n_subbufs: 0,
            subbuf_header: subbuf::HEADER_SIZE,
            cpus: Vec::new(),
            clock: crate::abi::CLOCK_MONOTONIC,
            session: 0,
            anchor_realtime_ns: 0,
            anchor_clock_ns: 0,
            little_endian: cfg!(target_endian = "little"),
            simulated: false,
            refused_cpu: 0,
        };
        let mut seen_state = false;
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("");
            let mut it = line.split_whitespace();
            let Some(key) = it.next() else { continue };
            let vals: Vec<&str> = it.collect();
            let one = || -> Result<&str, String> {
                vals.first()
                    .copied()
                    .ok_or_else(|| format!("info: `{key}` has no value"))
            };
            fn num<T: FromStr>(key: &str, s: &str) -> Result<T, String> {
                s.parse()
                    .map_err(|_| format!("info: `{key}` has a bad value `{s}`"))
            }
            match key {
                "version" => info.version = one()?.to_string(),
                "card" => info.card = num(key, one()?)?,
                "driver" => info.driver = one()?.to_string(),
                "state" => {
                    info.state = DevState::from_name(one()?)
                        .ok_or_else(|| format!("info: unknown state `{}`", vals[0]))?;
                    seen_state = true;
                }
                "subbuf_size" => info.subbuf_size = num(key, one()?)?,
                "n_subbufs" => info.n_subbufs = num(key, one()?)?,
                "subbuf_header" => info.subbuf_header = num(key, one()?)?,
                "cpus" => {
                    info.cpus = parse_cpu_list(&vals.join(""))
                        .ok_or_else(|| format!("info: bad cpu list `{}`", vals.join(" ")))?
                }
                "clock" => info.clock = num(key, one()?)?,
                "session" => info.session = num(key, one()?)?,
                "anchor" => {
                    info.anchor_realtime_ns = num(key, one()?)?;
                    info.anchor_clock_ns = num(key, vals.get(1).copied().unwrap_or("0"))?;
                }
                "byte_order" => info.little_endian = one()? == "little",
                "simulated" => info.simulated = one()? != "0",
                "refused_cpu" => info.refused_cpu = num(key, one()?)?,
                _ => {}
            }
        }
        if !seen_state {
            return Err("info: no `state` line".into());
        }
        if !info.version.starts_with("1.") {
            return Err(format!(
                "info: unsupported protocol version `{}`",
                info.version
            ));
        }
        Ok(info)
    }
}

impl fmt::Display for Info {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cpus: Vec<String> = self.cpus.iter().map(|c| c.to_string()).collect();
        writeln!(f, "version {}", self.version)?;
        writeln!(f, "card {}", self.card)?;
        writeln!(f, "driver {}", self.driver)?;
        writeln!(f, "state {}", self.state.name())?;
        writeln!(f, "subbuf_size {}", self.subbuf_size)?;
        writeln!(f, "n_subbufs {}", self.n_subbufs)?;
        writeln!(f, "subbuf_header {}", self.subbuf_header)?;
        writeln!(f, "cpus {}", cpus.join(","))?;
        writeln!(f, "clock {}", self.clock)?;
        writeln!(f, "session {}", self.session)?;
        writeln!(
            f,
            "anchor {} {}",
            self.anchor_realtime_ns, self.anchor_clock_ns
        )?;
        writeln!(
            f,
            "byte_order {}",
            if self.little_endian { "little" } else { "big" }
        )?;
        writeln!(f, "refused_cpu {}", self.refused_cpu)?;
        if self.simulated {
            writeln!(f, "simulated 1")?;
        }
        Ok(())
    }
}

/// Most CPUs a CPU list may name (Linux's NR_CPUS is at most 8192 today).
const MAX_LISTED_CPUS: u32 = 65536;

/// Parses `0,1` or `0-3,8` (empty = no CPUs); None past 65536 CPUs in all.
pub fn parse_cpu_list(s: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
                if b < a || b - a > MAX_LISTED_CPUS {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().ok()?),
        }
        // Many ranges add up too: the list is bounded as a whole, not only per range.
        if out.len() > MAX_LISTED_CPUS as usize {
            return None;
        }
    }
    Some(out)
}

/// One line of `state`: `<cpu> <produced> <consumed> <lost_pending>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuState {
    /// The CPU this line is about.
    pub cpu: u32,
    /// Sub-buffers produced on this CPU since setup.
    pub produced: u64,
    /// Sub-buffers consumed on this CPU since setup.
    pub consumed: u64,
    /// Records refused on this CPU since the last sub-buffer switch.
    pub lost_pending: u64,
}

impl CpuState {
    /// Parses every non-empty line of a `state` file; an error names the bad line.
    pub fn parse_all(text: &str) -> Result<Vec<CpuState>, String> {
        let mut out = Vec::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let v: Vec<u64> = line
                .split_whitespace()
                .map(|t| t.parse::<u64>())
                .collect::<Result<_, _>>()
                .map_err(|_| format!("state: bad line `{line}`"))?;
            if v.len() != 4 || v[0] > u32::MAX as u64 {
                return Err(format!("state: bad line `{line}`"));
            }
            out.push(CpuState {
                cpu: v[0] as u32,
                produced: v[1],
                consumed: v[2],
                lost_pending: v[3],
            });
        }
        Ok(out)
    }
}

impl fmt::Display for CpuState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} {} {} {}",
            self.cpu, self.produced, self.consumed, self.lost_pending
        )
    }
}

/// Kernel-side filters of `setup`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Filters {
    /// `events=`: mask of admitted event codes (bit N = code N); `None` = all.
    pub events: Option<u64>,
    /// `pid=`: only events of this thread id; `None` = all.
    pub pid: Option<u32>,
    /// `ctx=`: only events of this context id; `None` = all.
    pub ctx: Option<u32>,
    /// `ring=`: only events of this ring id; `None` = all.
    pub ring: Option<u32>,
}

impl Filters {
    /// Whether a record passes (notes other than events pass the event mask).
    #[inline]
    pub fn admits(&self, rtype: RecordType, code: u16, pid: u32, ctx: u32, ring: u32) -> bool {
        if rtype != RecordType::EVENT {
            return true;
        }
        self.events
            .is_none_or(|m| code < 64 && m & (1u64 << code) != 0)
            && self.pid.is_none_or(|p| p == pid)
            && self.ctx.is_none_or(|c| c == ctx)
            && self.ring.is_none_or(|r| r == ring)
    }
}

/// A session command: a line written to `ctl` (its `Display` form), or, on the kernel, the
/// `DRM_IOCTL_GRTRACE_*` ioctl of the same name ([`crate::ioctl`]); both make the same
/// transition and fail with the same errno.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CtlCommand {
    /// `setup`: create the relay channel with this geometry and these filters.
    Setup {
        /// Bytes per sub-buffer (4 KiB to 64 MiB, a multiple of 8).
        subbuf_size: usize,
        /// Sub-buffers per CPU (2 to 4096).
        n_subbufs: usize,
        /// Kernel-side filters; filtered-out records take no sequence number.
        filters: Filters,
    },
    /// `start`: begin writing records (ring-table notes first).
    Start,
    /// `stop`: stop writing, wait for writers and flush every sub-buffer with data as `FINAL`.
    Stop,
    /// `teardown`: remove the `trace<cpu>` files (from setup or stopped).
    Teardown,
}

impl fmt::Display for CtlCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CtlCommand::Setup {
                subbuf_size,
                n_subbufs,
                filters,
            } => {
                write!(f, "setup subbuf_size={subbuf_size} n_subbufs={n_subbufs}")?;
                if let Some(m) = filters.events {
                    write!(f, " events={m:x}")?;
                }
                if let Some(p) = filters.pid {
                    write!(f, " pid={p}")?;
                }
                if let Some(c) = filters.ctx {
                    write!(f, " ctx={c}")?;
                }
                if let Some(r) = filters.ring {
                    write!(f, " ring={r}")?;
                }
                Ok(())
            }
            CtlCommand::Start => f.write_str("start"),
            CtlCommand::Stop => f.write_str("stop"),
            CtlCommand::Teardown => f.write_str("teardown"),
        }
    }
}

/// Whether `setup` may ask for sub-buffers of `size` bytes (the kernel's range, a multiple
/// of the record alignment).
pub fn subbuf_size_ok(size: usize) -> bool {
    (subbuf::MIN_SUBBUF_SIZE..=subbuf::MAX_SUBBUF_SIZE).contains(&size)
        && size.is_multiple_of(crate::abi::RECORD_ALIGN)
}

/// Whether `setup` may ask for `n` sub-buffers (the kernel's range).
pub fn n_subbufs_ok(n: usize) -> bool {
    (subbuf::MIN_N_SUBBUFS..=subbuf::MAX_N_SUBBUFS).contains(&n)
}

impl FromStr for CtlCommand {
    type Err = String;
    fn from_str(s: &str) -> Result<CtlCommand, String> {
        let mut it = s.split_whitespace();
        let cmd = it.next().ok_or("empty command")?;
        let cmd = match cmd {
            "start" => CtlCommand::Start,
            "stop" => CtlCommand::Stop,
            "teardown" => CtlCommand::Teardown,
            "setup" => {
                let (mut size, mut n, mut filters) = (None, None, Filters::default());
                for arg in it.by_ref() {
                    let (k, v) = arg
                        .split_once('=')
                        .ok_or_else(|| format!("setup: bad argument `{arg}`"))?;
                    let bad = || format!("setup: bad value in `{arg}`");
                    match k {
                        "subbuf_size" => size = Some(v.parse().map_err(|_| bad())?),
                        "n_subbufs" => n = Some(v.parse().map_err(|_| bad())?),
                        "events" => {
                            let v = v.trim_start_matches("0x");
                            filters.events = Some(u64::from_str_radix(v, 16).map_err(|_| bad())?)
                        }
                        "pid" => filters.pid = Some(v.parse().map_err(|_| bad())?),
                        "ctx" => filters.ctx = Some(v.parse().map_err(|_| bad())?),
                        "ring" => filters.ring = Some(v.parse().map_err(|_| bad())?),
                        _ => return Err(format!("setup: unknown argument `{k}`")),
                    }
                }
                let (subbuf_size, n_subbufs) = (
                    size.ok_or("setup: subbuf_size missing")?,
                    n.ok_or("setup: n_subbufs missing")?,
                );
                if !subbuf_size_ok(subbuf_size) || !n_subbufs_ok(n_subbufs) {
                    return Err("setup: sub-buffer size or count out of range".into());
                }
                CtlCommand::Setup {
                    subbuf_size,
                    n_subbufs,
                    filters,
                }
            }
            other => return Err(format!("unknown command `{other}`")),
        };
        if it.next().is_some() {
            return Err(format!("`{cmd}` takes no arguments"));
        }
        Ok(cmd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `refused_cpu` as the kernel prints it (`seq_printf(m, "refused_cpu %lld\n", ...)`,
    /// with a comment as FORMAT.md shows it); absent (an older kernel, an idle device) is 0;
    /// a value that is not a count is an error naming the key, not a silent 0.
    #[test]
    fn info_reads_records_refused_on_cpus_brought_online_after_setup() {
        let kernel = "version 1.0\ncard 0\ndriver virtio_gpu\nstate stopped\nsubbuf_size 8192\n\
                      n_subbufs 4\nsubbuf_header 32\ncpus 0\nclock 1\nsession 77\n\
                      anchor 1 2\nbyte_order little\nrefused_cpu 218   # cpu 1 came online\n";
        let info = Info::parse(kernel).unwrap();
        assert_eq!(info.refused_cpu, 218);
        assert_eq!(info.cpus, vec![0]);
        let without = kernel.replace("refused_cpu 218   # cpu 1 came online\n", "");
        assert_eq!(Info::parse(&without).unwrap().refused_cpu, 0);
        for bad in ["refused_cpu -3", "refused_cpu many", "refused_cpu"] {
            let doc = kernel.replace("refused_cpu 218   # cpu 1 came online", bad);
            let err = Info::parse(&doc).unwrap_err();
            assert!(err.contains("refused_cpu"), "{bad}: {err}");
        }
    }

    #[test]
    fn text_files_round_trip() {
        let info = Info {
            version: "1.0".into(),
            card: 1,
            driver: "virtio_gpu".into(),
            state: DevState::Running,
            subbuf_size: 262144,
            n_subbufs: 8,
            subbuf_header: 32,
            cpus: vec![0, 1, 2, 3],
            clock: 1,
            session: 1234567890,
            anchor_realtime_ns: 1763740000123456789,
            anchor_clock_ns: 123456789,
            little_endian: true,
            simulated: true,
            refused_cpu: 218,
        };
        assert_eq!(Info::parse(&info.to_string()).unwrap(), info);
        let doc = "version 1.0\ncard 0\ndriver virtio_gpu\nstate setup            # idle\n\
                   subbuf_size 262144\nn_subbufs 8\nsubbuf_header 32\ncpus 0,1\nclock 1\n\
                   session 1234567890\nanchor 1763740000123456789 123456789\nbyte_order little\n\
                   future_key 7\n";
        let parsed = Info::parse(doc).unwrap();
        assert_eq!(parsed.state, DevState::Setup);
        assert_eq!(parsed.cpus, vec![0, 1]);
        assert_eq!(parse_cpu_list("0-2,5"), Some(vec![0, 1, 2, 5]));
        // Bounded as a whole: many large ranges do not add up to millions of CPUs.
        assert_eq!(parse_cpu_list(&["0-65535"; 64].join(",")), None);
        assert_eq!(parse_cpu_list("0-65535").map(|v| v.len()), Some(65536));
        let st = CpuState {
            cpu: 1,
            produced: 9,
            consumed: 7,
            lost_pending: 3,
        };
        assert_eq!(CpuState::parse_all(&st.to_string()).unwrap(), vec![st]);
        let setup = CtlCommand::Setup {
            subbuf_size: 65536,
            n_subbufs: 4,
            filters: Filters {
                events: Some(0xc0),
                pid: Some(42),
                ctx: None,
                ring: Some(1),
            },
        };
        assert_eq!(
            setup.to_string(),
            "setup subbuf_size=65536 n_subbufs=4 events=c0 pid=42 ring=1"
        );
        assert_eq!(setup.to_string().parse::<CtlCommand>().unwrap(), setup);
        assert_eq!("stop\n".parse::<CtlCommand>().unwrap(), CtlCommand::Stop);
        assert!("setup subbuf_size=100 n_subbufs=4"
            .parse::<CtlCommand>()
            .is_err());
        assert_eq!(parse_consumed_line(&consumed_line(3, 2)), Some((3, 2)));
    }
}
