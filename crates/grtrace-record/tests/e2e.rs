//! End to end on the simulator: grtsim (in process) -> grtrace (in process or the binary) ->
//! the stream files, read back with grtrace_format's reader.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use grtrace_format::abi::INFO_STOPPED_CLEANLY;
use grtrace_format::relay::{DevState, Filters};
use grtrace_format::RecordType;
use grtrace_format::{Body, Card, Event, Records, StreamHeader};
use grtrace_record::device::Control;
use grtrace_record::{Device, Options, RecordError};
use grtrace_sim::{Sim, SimConfig};

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A fresh directory, removed when dropped.
struct TempDir(PathBuf);
impl TempDir {
    fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!(
            "grtrace-e2e-{}-{}-{tag}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn sim_cfg(root: &Path, events: u64) -> SimConfig {
    let mut c = SimConfig::new(root);
    c.cpus = 2;
    c.rate = None;
    c.events = Some(events);
    c.seed = 11;
    c
}

/// What a set of stream files holds.
#[derive(Debug, Default)]
struct Seen {
    events: u64,
    records: u64,
    lost_notes: u64,
    lost_count: u64,
    kernel_dropped: Vec<u64>,
    clean_ends: u64,
    /// (cpu, seq, pid, record bytes after the time field) of every kernel record.
    kernel_records: Vec<(u32, u64, u32, Vec<u8>)>,
    codes: std::collections::BTreeSet<u16>,
    msgs: Vec<String>,
}

/// Reads one stream completely; panics on any damage (the recorder must never write any).
fn read_stream(path: &Path, seen: &mut Seen) -> StreamHeader {
    let data = std::fs::read(path).unwrap();
    read_stream_bytes(&data, &path.display().to_string(), seen)
}

fn read_stream_bytes(data: &[u8], name: &str, seen: &mut Seen) -> StreamHeader {
    let h = StreamHeader::parse(data).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut last_type = RecordType(0);
    let mut last_seq: std::collections::HashMap<u32, u64> = Default::default();
    for r in Records::new(data, &h) {
        let r = r.unwrap_or_else(|e| panic!("{name}: {e}"));
        seen.records += 1;
        last_type = r.rtype();
        if r.seq() != 0 {
            let prev = last_seq.insert(r.cpu(), r.seq()).unwrap_or(0);
            assert_eq!(r.seq(), prev + 1, "{name}: sequence of cpu {}", r.cpu());
            let b = r.bytes();
            let mut rest = b[..16].to_vec();
            rest.extend_from_slice(&b[32..]);
            seen.kernel_records.push((r.cpu(), r.seq(), r.pid(), rest));
        }
        match r.body() {
            Body::Event(e) => {
                seen.events += 1;
                seen.codes.insert(e.code.0);
            }
            Body::Lost(l) => {
                seen.lost_notes += 1;
                seen.lost_count += l.count;
                assert_eq!(l.source, 1);
                assert!(l.first_ns <= l.last_ns, "{name}: {l:?}");
            }
            Body::StreamInfo(i) => {
                seen.kernel_dropped.push(i.kernel_dropped);
                if i.flags & INFO_STOPPED_CLEANLY != 0 {
                    seen.clean_ends += 1;
                }
            }
            Body::Msg { text } => seen.msgs.push(String::from_utf8_lossy(text).into()),
            _ => {}
        }
    }
    assert_eq!(
        last_type,
        RecordType::NOTE_STREAM_INFO,
        "{name}: the last record is NOTE_STREAM_INFO"
    );
    h
}

fn read_files(base: &Path, cpus: u32, seen: &mut Seen) {
    for cpu in 0..cpus {
        let mut p = base.as_os_str().to_owned();
        p.push(format!(".grtrace.{cpu}"));
        let h = read_stream(Path::new(&p), seen);
        assert_eq!(h.cpu, cpu);
        assert_ne!(h.flags & grtrace_format::abi::STREAM_SIMULATED, 0);
    }
}

/// Runs the recorder in a thread; `until` decides when to stop it.
fn record_until(
    opts: Options,
    until: impl FnOnce(),
) -> Result<grtrace_record::RunReport, RecordError> {
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let h = std::thread::spawn(move || grtrace_record::record(&opts, &s2));
    until();
    stop.store(true, Ordering::Release);
    h.join().unwrap()
}

/// Waits until the running session of `card` has produced its quota.
fn wait_produced(sim: &Sim, card: usize) {
    let t0 = Instant::now();
    while !sim.stats(card).running_events().1 {
        assert!(t0.elapsed() < Duration::from_secs(60), "simulator stalled");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn opts(root: &Path, out: &Path, devs: &[&str]) -> Options {
    let mut o = Options::new(devs.iter().map(|s| s.parse::<Card>().unwrap()).collect());
    o.root = root.to_path_buf();
    o.output = Some(out.join("run").into_os_string());
    o.subbuf_size = 1 << 20;
    o.n_subbufs = 16;
    o
}

#[test]
fn every_event_produced_is_recorded_once_and_nothing_is_lost() {
    let (root, out) = (TempDir::new("root"), TempDir::new("out"));
    const N: u64 = 120_000;
    let sim = Sim::start(&sim_cfg(&root.0, N)).unwrap();
    let report =
        record_until(opts(&root.0, &out.0, &["card0"]), || wait_produced(&sim, 0)).unwrap();
    assert!(report.failure.is_none(), "{:?}", report.failure);
    let mut seen = Seen::default();
    read_files(&out.0.join("run"), 2, &mut seen);
    assert_eq!(seen.events, N);
    assert_eq!(report.events(), N);
    assert_eq!((seen.lost_notes, seen.lost_count), (0, 0));
    assert_eq!(seen.kernel_dropped, vec![0, 0]);
    assert_eq!(seen.clean_ends, 2);
    assert_eq!(sim.stats(0).last_dropped.load(Ordering::Acquire), 0);
    assert_eq!(sim.stats(0).last_events_written.load(Ordering::Acquire), N);
    // Notes the kernel writes at start are there too.
    let recs = sim.stats(0).last_records.load(Ordering::Acquire);
    assert_eq!(seen.kernel_records.len() as u64, recs);
}

#[test]
fn overflow_losses_in_the_files_equal_the_kernel_dropped_count() {
    let (root, out) = (TempDir::new("root"), TempDir::new("out"));
    const N: u64 = 60_000;
    let sim = Sim::start(&sim_cfg(&root.0, N)).unwrap();
    let mut o = opts(&root.0, &out.0, &["card0"]);
    o.subbuf_size = 4096;
    o.n_subbufs = 2;
    let report = record_until(o, || wait_produced(&sim, 0)).unwrap();
    let dropped = sim.stats(0).last_dropped.load(Ordering::Acquire);
    assert!(dropped > 0, "8 KiB per CPU at full speed must overflow");
    assert_eq!(report.devices[0].dropped, dropped);
    let mut seen = Seen::default();
    read_files(&out.0.join("run"), 2, &mut seen);
    assert_eq!(seen.lost_count, dropped, "every drop is shown inline");
    assert_eq!(seen.events + dropped, N);
    assert_eq!(seen.kernel_dropped, vec![dropped, dropped]);
    let mut warn = Vec::new();
    grtrace_record::summary::print_drop_warnings(&report, &mut warn).unwrap();
    let warn = String::from_utf8(warn).unwrap();
    assert!(warn.contains(&format!("You have {dropped} (")), "{warn}");
    assert!(warn.contains("larger buffer size (-b)"), "{warn}");
}

#[test]
fn two_devices_record_at_once() {
    let (root, out) = (TempDir::new("root"), TempDir::new("out"));
    const N: u64 = 30_000;
    let mut cfg = sim_cfg(&root.0, N);
    cfg.cards = 2;
    let sim = Sim::start(&cfg).unwrap();
    let report = record_until(opts(&root.0, &out.0, &["card0", "card1"]), || {
        wait_produced(&sim, 0);
        wait_produced(&sim, 1);
    })
    .unwrap();
    assert!(report.failure.is_none());
    assert_eq!(report.devices.len(), 2);
    for card in ["card0", "card1"] {
        let mut seen = Seen::default();
        read_files(&out.0.join(format!("run.{card}")), 2, &mut seen);
        assert_eq!(seen.events, N, "{card}");
        assert_eq!(seen.lost_count, 0);
    }
}

#[test]
fn kernel_filters_reach_the_device_and_messages_become_notes() {
    let (root, out) = (TempDir::new("root"), TempDir::new("out"));
    let mut cfg = sim_cfg(&root.0, 20_000);
    cfg.rate = Some(50_000.0);
    let sim = Sim::start(&cfg).unwrap();
    let mut o = opts(&root.0, &out.0, &["card0"]);
    o.filters = Filters {
        events: Some(Event::SUBMIT.mask_bit().unwrap() | Event::END.mask_bit().unwrap()),
        ..Default::default()
    };
    let msg_path = root.0.join("grtrace/card0/msg");
    let report = record_until(o, || {
        let t0 = Instant::now();
        while sim.stats(0).running_events().0 < 100 {
            assert!(t0.elapsed() < Duration::from_secs(30));
            std::thread::sleep(Duration::from_millis(5));
        }
        grtrace_sim::device::write_ctl(&msg_path, "hello from the test\n").unwrap();
        std::thread::sleep(Duration::from_millis(200));
    })
    .unwrap();
    assert!(report.failure.is_none());
    let mut seen = Seen::default();
    read_files(&out.0.join("run"), 2, &mut seen);
    assert!(seen.events > 0);
    let want: std::collections::BTreeSet<u16> = [Event::SUBMIT.0, Event::END.0].into();
    assert_eq!(seen.codes, want);
    assert_eq!(seen.msgs, vec!["hello from the test".to_string()]);
}

#[test]
fn busy_device_is_refused_and_kill_frees_it() {
    let root = TempDir::new("root");
    let sim = Sim::start(&sim_cfg(&root.0, 10)).unwrap();
    let dev = Device::find(&root.0, Card(0)).unwrap();
    // A crashed recorder left the device set up.
    grtrace_sim::device::write_ctl(
        &root.0.join("grtrace/card0/ctl"),
        "setup subbuf_size=4096 n_subbufs=2\n",
    )
    .unwrap();
    dev.wait_state(DevState::Setup).unwrap();
    let out = TempDir::new("out");
    let err = grtrace_record::record(&opts(&root.0, &out.0, &["card0"]), &AtomicBool::new(true))
        .unwrap_err();
    // The hint repeats -r ROOT: without it `grtrace -k` would look in /sys/kernel/debug.
    assert_eq!(
        err.to_string(),
        format!(
            "card0: busy: another grtrace is recording (or a crashed one left it set up: run \
             `grtrace -k -r {} -d card0` to tear it down)",
            root.0.display()
        )
    );
    let mut o = Options::new(vec![Card(0)]);
    o.root = root.0.clone();
    assert_eq!(
        grtrace_record::kill(&o).unwrap(),
        vec!["card0: torn down (was setup)"]
    );
    assert_eq!(dev.info().unwrap().state, DevState::Idle);
    let r =
        grtrace_record::record(&opts(&root.0, &out.0, &["card0"]), &AtomicBool::new(true)).unwrap();
    assert!(r.failure.is_none());
    drop(sim);
}

#[test]
fn missing_tree_and_missing_card_say_what_to_do() {
    let root = TempDir::new("root");
    let e = Device::find(&root.0, Card(0)).unwrap_err().to_string();
    assert!(e.contains("grtrace does not exist"), "{e}");
    assert!(e.contains("grtsim --root"), "{e}");
    let _sim = Sim::start(&sim_cfg(&root.0, 10)).unwrap();
    let e = Device::find(&root.0, Card(7)).unwrap_err().to_string();
    assert!(
        e.starts_with("card7: no such device") && e.contains("traceable: card0"),
        "{e}"
    );
    assert_eq!(
        Device::find(&root.0, "/dev/dri/card0".parse().unwrap())
            .unwrap()
            .card,
        Card(0)
    );
}

// ---- The binary: signals, pipes, usage errors. ----

#[test]
fn the_simulator_is_controlled_through_its_ctl_file_and_the_recorder_says_so() {
    let (root, out) = (TempDir::new("root"), TempDir::new("out"));
    let sim = Sim::start(&sim_cfg(&root.0, 10)).unwrap();
    let dev = Device::find(&root.0, Card(0)).unwrap();
    // `simulated 1` in info: the ctl file, never an ioctl (even where /dev/dri/card0 exists)
    assert!(matches!(dev.control, Control::CtlFile), "{:?}", dev.control);
    let ctl = root.0.join("grtrace/card0/ctl");
    assert_eq!(dev.control_desc(), ctl.display().to_string());
    let o = record_two_seconds(&root.0, &out.0);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(&format!("grtrace: card0: control by {}", ctl.display())),
        "{err}"
    );
    // setup, start, stop and teardown all went through the file: the device is idle again
    // and every event produced was recorded
    assert_eq!(dev.info().unwrap().state, DevState::Idle);
    let mut seen = Seen::default();
    read_files(&out.0.join("run"), 2, &mut seen);
    assert_eq!(seen.events, 10);
    drop(sim);
}

/// CPUs brought online after setup (`grtsim --hotplug-cpus`, FORMAT.md §7.3): the kernel
/// refuses their records and counts them in `info`'s `refused_cpu`. grtrace reads it at stop
/// and says so like blktrace says drops: one line naming the card and the count, and in the
/// summary's Total line. With none, neither says a word.
#[test]
fn records_refused_on_cpus_brought_online_after_setup_are_reported() {
    const N: u64 = 1000;
    for hotplug in [0u32, 2] {
        let (root, out) = (TempDir::new("root"), TempDir::new("out"));
        let mut cfg = sim_cfg(&root.0, N);
        cfg.hotplug_cpus = hotplug;
        let sim = Sim::start(&cfg).unwrap();
        let o = record_two_seconds(&root.0, &out.0);
        let (stdout, err) = (
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
        );
        assert!(o.status.success(), "{err}");
        // The streams hold every event of the CPUs online at setup, and nothing else.
        let mut seen = Seen::default();
        read_files(&out.0.join("run"), 2, &mut seen);
        assert_eq!(seen.events, N);
        // Each hotplugged CPU offered CPU 0's share of the quota.
        let refused = u64::from(hotplug) * (N / 2);
        let said: Vec<&str> = err.lines().filter(|l| l.contains("refused")).collect();
        let total = stdout
            .lines()
            .find(|l| l.trim_start().starts_with("Total:"))
            .unwrap_or_else(|| panic!("no Total line: {stdout}"));
        if hotplug == 0 {
            assert!(said.is_empty(), "{err}");
            assert!(total.contains("(dropped 0),"), "{total}");
        } else {
            assert_eq!(
                said,
                [format!("You have {refused} records refused on card0 on CPUs brought online after setup: they are in no stream (start grtrace after the CPUs are online)")],
                "{err}"
            );
            assert!(
                total.contains(&format!(
                    "(dropped 0, refused {refused} on CPUs online after setup)"
                )),
                "{total}"
            );
        }
        drop(sim);
    }
}

/// `grtrace -r ROOT -d card0 -w 2 -o OUT/run`, the binary.
fn record_two_seconds(root: &Path, out: &Path) -> std::process::Output {
    grtrace_card0(root)
        .args(["-w", "2", "-o"])
        .arg(out.join("run"))
        .output()
        .unwrap()
}

fn grtrace_bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_grtrace"))
}

/// `grtrace -r ROOT -d card0`: the binary recording card0 of the relay root `root` (a
/// simulator's).
fn grtrace_card0(root: &Path) -> Command {
    let mut c = grtrace_bin();
    c.arg("-r").arg(root).args(["-d", "card0"]);
    c
}

#[test]
fn ctrl_c_at_random_moments_always_leaves_parseable_files() {
    let root = TempDir::new("root");
    let mut cfg = sim_cfg(&root.0, u64::MAX);
    cfg.events = None;
    cfg.rate = Some(400_000.0);
    let _sim = Sim::start(&cfg).unwrap();
    let mut rng = grtrace_sim::model::Rng::new(99);
    let signals = [
        nix::sys::signal::SIGINT,
        nix::sys::signal::SIGTERM,
        nix::sys::signal::SIGHUP,
    ];
    for run in 0..12 {
        let out = TempDir::new("out");
        let child = grtrace_card0(&root.0)
            .args(["-b", "64K", "-n", "4", "-o"])
            .arg(out.0.join("run"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // From "just after start-up" to well into the recording.
        std::thread::sleep(Duration::from_millis(10 + rng.below(400)));
        let sig = signals[run % 3];
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig).unwrap();
        let o = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "run {run} ({sig}): {stderr}");
        assert!(String::from_utf8_lossy(&o.stdout).contains("=== card0 ==="));
        let mut seen = Seen::default();
        read_files(&out.0.join("run"), 2, &mut seen);
        assert_eq!(seen.clean_ends, 2, "run {run}");
        // The device is free again for the next run.
        let info = Device::find(&root.0, Card(0)).unwrap().info().unwrap();
        assert_eq!(info.state, DevState::Idle, "run {run}");
    }
}

#[test]
fn piped_stream_holds_the_same_records_as_the_files() {
    let (root, out) = (TempDir::new("root"), TempDir::new("out"));
    const N: u64 = 40_000;
    let sim = Sim::start(&sim_cfg(&root.0, N)).unwrap();
    let r = record_until(opts(&root.0, &out.0, &["card0"]), || wait_produced(&sim, 0)).unwrap();
    assert!(r.failure.is_none());
    let mut files = Seen::default();
    read_files(&out.0.join("run"), 2, &mut files);

    // Same seed and quota, second session, through stdout.
    let o = second_session_on_stdout(&root.0, &sim);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut piped = Seen::default();
    let h = read_stream_bytes(&o.stdout, "stdout", &mut piped);
    assert!(h.is_merged());
    assert!(String::from_utf8_lossy(&o.stderr).contains("=== card0 ==="));
    assert_eq!(piped.events, N);
    // Equal as sets of (cpu, seq, pid, type/size/code/flags, body). Times are left out: the
    // two sessions started at different moments.
    let norm = |mut v: Vec<(u32, u64, u32, Vec<u8>)>| {
        v.sort();
        v.into_iter()
            .map(|(c, s, p, b)| (c, s, p, b[..8].to_vec(), b[16..].to_vec()))
            .collect::<Vec<_>>()
    };
    assert_eq!(norm(piped.kernel_records), norm(files.kernel_records));
}

/// Records the simulator's second tracing session of card0 with `grtrace -o -` (1 MiB x 16
/// sub-buffers), stops it with SIGINT once the quota is produced, and returns its output.
fn second_session_on_stdout(root: &Path, sim: &Sim) -> std::process::Output {
    let child = grtrace_card0(root)
        .args(["-b", "1M", "-n", "16", "-o", "-"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let reader = std::thread::spawn(move || child.wait_with_output().unwrap());
    let t0 = Instant::now();
    while sim.stats(0).sessions.load(Ordering::Acquire) < 2 {
        assert!(t0.elapsed() < Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(5));
    }
    wait_produced(sim, 0);
    nix::sys::signal::kill(pid, nix::sys::signal::SIGINT).unwrap();
    reader.join().unwrap()
}

#[test]
fn pipe_output_with_two_devices_is_a_usage_error() {
    let o = grtrace_bin()
        .args(["-d", "card0", "-d", "card1", "-o", "-"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("-o - takes one device"));
    let o = grtrace_bin()
        .args(["-d", "card0", "-b", "1"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "1 KiB sub-buffers are too small");
}

#[test]
fn disk_full_stops_and_keeps_whole_records() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: needs root to mount a small tmpfs");
        return;
    }
    let (root, out) = (TempDir::new("root"), TempDir::new("out"));
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"])
        .arg(&out.0)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("skipped: cannot mount tmpfs");
        return;
    }
    let sim = Sim::start(&sim_cfg(&root.0, 100_000)).unwrap();
    let report = record_until(opts(&root.0, &out.0, &["card0"]), || {
        let t0 = Instant::now();
        while !sim.stats(0).running_events().1 && t0.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(5));
        }
    })
    .unwrap();
    let msg = report
        .failure
        .as_ref()
        .map(|e| e.to_string())
        .unwrap_or_default();
    // Every file still parses up to its end: only whole records were kept.
    for cpu in 0..2 {
        let p = out.0.join(format!("run.grtrace.{cpu}"));
        let data = std::fs::read(&p).unwrap();
        let h = StreamHeader::parse(&data).unwrap();
        for r in Records::new(&data, &h) {
            r.unwrap();
        }
    }
    let info = Device::find(&root.0, Card(0)).unwrap().info().unwrap();
    let _ = Command::new("umount").arg(&out.0).status();
    assert!(msg.contains("disk full"), "{msg}");
    assert_eq!(info.state, DevState::Idle);
}

#[test]
fn a_scenario_played_through_the_relay_arrives_record_for_record() {
    let (root, out) = (TempDir::new("root"), TempDir::new("out"));
    let mut cfg = sim_cfg(&root.0, 0);
    cfg.events = None;
    cfg.scenario = Some("clean".into());
    cfg.jobs = 150;
    let sim = Sim::start(&cfg).unwrap();
    let report =
        record_until(opts(&root.0, &out.0, &["card0"]), || wait_produced(&sim, 0)).unwrap();
    assert!(report.failure.is_none());
    let mut seen = Seen::default();
    read_files(&out.0.join("run"), 2, &mut seen);
    // Same records (cpu, pid, header fields, body); times are shifted to the session start.
    let sc = grtrace_sim::scenarios::by_name("clean", cfg.seed, 150).unwrap();
    let mut want: Vec<(u32, u32, Vec<u8>)> = sc
        .records
        .iter()
        .map(|(st, b)| {
            let mut v = Vec::new();
            grtrace_format::encode(st, b, grtrace_format::Endian::NATIVE, &mut v);
            let mut rest = v[..8].to_vec();
            rest.extend_from_slice(&v[32..]);
            (st.cpu % 2, st.pid, rest)
        })
        .collect();
    let mut got: Vec<(u32, u32, Vec<u8>)> = seen
        .kernel_records
        .iter()
        .map(|(cpu, _, pid, b)| {
            let mut rest = b[..8].to_vec();
            rest.extend_from_slice(&b[16..]);
            (*cpu, *pid, rest)
        })
        .collect();
    want.sort();
    got.sort();
    assert_eq!(got.len(), want.len());
    assert!(got == want, "recorded records differ from the scenario");
}

#[test]
fn an_idle_recording_sleeps_instead_of_spinning_on_always_readable_files() {
    // grtsim's trace files always poll readable; a recorder that trusted poll() would spin.
    let root = TempDir::new("root");
    let mut cfg = sim_cfg(&root.0, 0);
    cfg.events = Some(10);
    let _sim = Sim::start(&cfg).unwrap();
    let out = TempDir::new("out");
    let o = grtrace_card0(&root.0)
        .args(["-w", "1.5", "-v", "-o"])
        .arg(out.0.join("run"))
        .output()
        .unwrap();
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    let line = err
        .lines()
        .find(|l| l.starts_with("recorder:"))
        .unwrap_or_else(|| panic!("{err}"));
    let cpu: f64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    // Two drain threads spinning for 1.5 s would burn about 3 s of CPU.
    assert!(cpu < 0.5, "{line}");
}

/// The grtparse binary, when the workspace build made one next to this test.
fn grtparse_bin() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let p = exe.parent()?.parent()?.join("grtparse");
    p.exists().then_some(p)
}

/// grtparse's event lines, sorted, without the lines that differ between a per-CPU file set
/// and a merged stream by design (STREAM_INFO) and without the summary; and the whole output.
fn grtparse_lines(cmd: &mut Command) -> (Vec<String>, String) {
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let mut lines: Vec<String> = text
        .lines()
        .take_while(|l| !l.starts_with("Summary"))
        .filter(|l| !l.is_empty() && !l.contains("STREAM_INFO"))
        .map(str::to_string)
        .collect();
    lines.sort();
    (lines, text)
}

/// The Total column of a summary row such as `events  94237  94956  189193`.
fn summary_total(text: &str, row: &str) -> u64 {
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(row))
        .unwrap_or_else(|| panic!("no `{row}` row in:\n{text}"));
    line.split_whitespace().last().unwrap().parse().unwrap()
}

#[test]
fn grtparse_shows_exactly_the_events_produced_and_the_pipe_gives_the_same_lines() {
    let Some(grtparse) = grtparse_bin() else {
        eprintln!("skipped: no grtparse binary next to the tests (run `cargo test --workspace`)");
        return;
    };
    let (root, out) = (TempDir::new("root"), TempDir::new("out"));
    const N: u64 = 30_000;
    let sim = Sim::start(&sim_cfg(&root.0, N)).unwrap();
    let r = record_until(opts(&root.0, &out.0, &["card0"]), || wait_produced(&sim, 0)).unwrap();
    assert!(r.failure.is_none());
    let base = out.0.join("run");
    let (file_lines, text) = grtparse_lines(Command::new(&grtparse).arg(&base));
    assert_eq!(summary_total(&text, "events"), N);
    assert_eq!(summary_total(&text, "lost(kernel)"), 0);
    assert_eq!(summary_total(&text, "lost(gap)"), 0);

    // Second session through `-o -`, saved and read back as grtparse's stdin.
    let o = second_session_on_stdout(&root.0, &sim);
    assert!(o.status.success());
    let piped = out.0.join("piped.bin");
    std::fs::write(&piped, &o.stdout).unwrap();
    let stdin = std::fs::File::open(&piped).unwrap();
    let (pipe_lines, text) = grtparse_lines(Command::new(&grtparse).args(["-i", "-"]).stdin(stdin));
    assert_eq!(summary_total(&text, "events"), N);
    assert_eq!(pipe_lines.len(), file_lines.len());
    if let Some(i) = (0..pipe_lines.len()).find(|&i| pipe_lines[i] != file_lines[i]) {
        panic!(
            "grtparse lines differ between -o - and files, first at sorted line {i}:\n  pipe:  {}\n  files: {}",
            pipe_lines[i], file_lines[i]
        );
    }
}

/// A 2-CPU recording over an older 4-CPU one (and over an older two-device one) under the
/// same name: the files of the old run that this one does not overwrite are removed, so
/// `grtparse run` reads one session only.
#[test]
fn a_new_recording_removes_stale_files_of_its_name() {
    let (root, out) = (TempDir::new("root"), TempDir::new("out"));
    let stale = [
        "run.grtrace.2",
        "run.grtrace.3",
        "run.card1.grtrace.0",
        "run.grtrace.0",
    ];
    for f in stale {
        std::fs::write(out.0.join(f), b"old session").unwrap();
    }
    let kept = out.0.join("runner.grtrace.5");
    std::fs::write(&kept, b"another name").unwrap();
    let sim = Sim::start(&sim_cfg(&root.0, 5_000)).unwrap();
    let report =
        record_until(opts(&root.0, &out.0, &["card0"]), || wait_produced(&sim, 0)).unwrap();
    assert!(report.failure.is_none());
    let mut names: Vec<String> = std::fs::read_dir(&out.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["run.grtrace.0", "run.grtrace.1", "runner.grtrace.5"]
    );
    let mut seen = Seen::default();
    read_files(&out.0.join("run"), 2, &mut seen);
    assert_eq!(seen.events, 5_000);
}

/// `info`'s state of card0 under `root`.
fn state(root: &Path) -> DevState {
    Device::find(root, Card(0)).unwrap().info().unwrap().state
}

fn signal(child: &std::process::Child, sig: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig).unwrap();
}

#[test]
fn the_busy_hint_names_the_root_and_works_when_pasted() {
    let root = TempDir::new("root with space");
    let _sim = Sim::start(&sim_cfg(&root.0, 10)).unwrap();
    grtrace_sim::device::write_ctl(
        &root.0.join("grtrace/card0/ctl"),
        "setup subbuf_size=4096 n_subbufs=2\n",
    )
    .unwrap();
    Device::find(&root.0, Card(0))
        .unwrap()
        .wait_state(DevState::Setup)
        .unwrap();
    let out = TempDir::new("out");
    let o = grtrace_card0(&root.0)
        .args(["-w", "1", "-o"])
        .arg(out.0.join("run"))
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    let hint = e.split('`').nth(1).expect("a command in backticks");
    assert!(hint.starts_with("grtrace -k -r '"), "{hint}");
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_grtrace")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = grtrace_cli::succeed(Command::new("sh").args(["-c", hint]).env("PATH", path));
    assert!(String::from_utf8_lossy(&o.stderr).contains("torn down (was setup)"));
    assert_eq!(state(&root.0), DevState::Idle);
}

#[test]
fn a_fifo_output_without_reader_still_stops_and_kill_9_is_recoverable_with_k() {
    let root = TempDir::new("root");
    let _sim = Sim::start(&sim_cfg(&root.0, 10)).unwrap();
    let out = TempDir::new("out");
    for cpu in 0..2 {
        nix::unistd::mkfifo(
            &out.0.join(format!("run.grtrace.{cpu}")),
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )
        .unwrap();
    }
    let start = || {
        grtrace_card0(&root.0)
            .arg("-o")
            .arg(out.0.join("run"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let wait_setup = || {
        let t0 = Instant::now();
        while state(&root.0) != DevState::Setup {
            assert!(t0.elapsed() < Duration::from_secs(20));
            std::thread::sleep(Duration::from_millis(10));
        }
        // Now blocked on the FIFO with no reader.
        std::thread::sleep(Duration::from_millis(200));
    };
    for sig in [nix::sys::signal::SIGTERM, nix::sys::signal::SIGINT] {
        let child = start();
        wait_setup();
        let t0 = Instant::now();
        signal(&child, sig);
        let o = child.wait_with_output().unwrap();
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "{sig}: {:?}",
            t0.elapsed()
        );
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{sig}: {e}");
        assert!(
            e.contains("run.grtrace.0") && e.contains("waiting for a reader"),
            "{e}"
        );
        assert_eq!(
            state(&root.0),
            DevState::Idle,
            "{sig}: torn down on the way out"
        );
    }
    // kill -9 leaves the device set up; the documented -k frees it.
    let mut child = start();
    wait_setup();
    signal(&child, nix::sys::signal::SIGKILL);
    let _ = child.wait();
    assert_eq!(state(&root.0), DevState::Setup);
    let o = grtrace_card0(&root.0).arg("-k").output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("card0: torn down (was setup)"));
    assert_eq!(state(&root.0), DevState::Idle);
}

#[test]
fn an_empty_base_name_and_a_device_given_twice_are_usage_errors() {
    for (args, says) in [
        (&["-d", "card0", "-o", ""][..], "-o: the base name is empty"),
        (&["-d", "card0", "-d", "0"][..], "device card0 given twice"),
        (
            &["card1", "-d", "/dev/dri/card1"][..],
            "device card1 given twice",
        ),
        (&["-d", "card0", "-A", "SUBMIT"][..], "hex event mask"),
        (
            &["-d", "gpu0"][..],
            "`gpu0` is not a card: give card1, 1 or /dev/dri/card1",
        ),
        (&["-d", "/dev/dri/renderD128"][..], "is a render node"),
    ] {
        let o = grtrace_bin().args(args).output().unwrap();
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains(says), "{args:?}: {e}");
    }
}

#[test]
fn user_messages_keep_per_cpu_time_order_at_full_speed() {
    let (root, out) = (TempDir::new("root"), TempDir::new("out"));
    let mut cfg = sim_cfg(&root.0, 2_000_000);
    cfg.cpus = 1;
    let sim = Sim::start(&cfg).unwrap();
    let msg_path = root.0.join("grtrace/card0/msg");
    let report = record_until(opts(&root.0, &out.0, &["card0"]), || {
        let t0 = Instant::now();
        while sim.stats(0).running_events().0 == 0 {
            assert!(t0.elapsed() < Duration::from_secs(30));
            std::thread::sleep(Duration::from_millis(1));
        }
        for i in 0..20 {
            grtrace_sim::device::write_ctl(&msg_path, &format!("note {i}\n")).unwrap();
            std::thread::sleep(Duration::from_millis(5));
        }
        wait_produced(&sim, 0);
        std::thread::sleep(Duration::from_millis(100));
    })
    .unwrap();
    assert!(report.failure.is_none());
    let data = std::fs::read(out.0.join("run.grtrace.0")).unwrap();
    let h = StreamHeader::parse(&data).unwrap();
    let (mut last, mut msgs, mut backwards, mut lost) = (0u64, 0, 0, 0u64);
    for r in Records::new(&data, &h) {
        let r = r.unwrap();
        if let Body::Lost(l) = r.body() {
            lost += l.count;
        }
        if r.seq() == 0 {
            continue; // notes the recorder adds
        }
        if r.time_ns() < last {
            backwards += 1;
        }
        last = last.max(r.time_ns());
        msgs += usize::from(r.rtype() == RecordType::NOTE_MSG);
    }
    assert_eq!(backwards, 0, "records out of time order on cpu 0");
    // At full speed the relay refuses records while the recorder lags (tests run side by
    // side), and a message is a record like any other: every one is recorded or counted lost.
    if lost == 0 {
        assert_eq!(msgs, 20);
    } else {
        assert!(msgs + lost as usize >= 20, "{msgs} messages, {lost} lost");
    }
}

/// One line per failure: `-D` naming a file says it is not a directory (not "File
/// exists"), and no "control by" line comes before it; the device is left idle.
#[test]
fn a_d_option_naming_a_file_is_one_line_saying_it_is_not_a_directory() {
    let (root, out) = (TempDir::new("root"), TempDir::new("out"));
    let sim = Sim::start(&sim_cfg(&root.0, 10)).unwrap();
    let file = out.0.join("a-file");
    std::fs::write(&file, "x").unwrap();
    for d in [file.clone(), file.join("sub")] {
        let err = grtrace_cli::fail(
            grtrace_card0(&root.0)
                .args(["-w", "1", "-o", "run", "-D"])
                .arg(&d),
        );
        assert_eq!(
            err,
            format!(
                "grtrace: -D {}: not a directory (it, or a part of its path, is a file): give a directory for the output files\n",
                d.display()
            )
        );
    }
    let dev = Device::find(&root.0, Card(0)).unwrap();
    assert_eq!(dev.info().unwrap().state, DevState::Idle);
    drop(sim);
}

/// `grtrace -d card0 -o - >&-` would drain the recording into nowhere: it refuses to start.
#[test]
fn a_closed_stdout_is_refused_before_recording() {
    let bin = Path::new(env!("CARGO_BIN_EXE_grtrace"));
    let args = ["-r", "/nonexistent", "-d", "card0", "-o", "-"];
    grtrace_cli::assert_refuses_closed_stdout(bin, args);
}
