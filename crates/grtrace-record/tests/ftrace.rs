//! `grtrace --ftrace` against a fake tracefs tree: the instance's tracepoints are enabled
//! and disabled again, its trace_pipe_raw pages are mapped into grtrace streams, and the
//! instance is removed on the error path.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use grtrace_format::RecordType;
use grtrace_format::{Records, StreamHeader};
use grtrace_ftrace::datwriter::{fixture_formats, Record};
use grtrace_ftrace::format::PageLayout;
use grtrace_ftrace::page::{Missed, PageBuilder};
use grtrace_record::ftrace::{record, FtraceOptions};

fn tree(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("grtrace-ftrace-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(d.join("instances")).unwrap();
    d
}

/// A fake instance with the 6.12 virtio_gpu tracepoints and one CPU holding `jobs` commands.
fn fake_instance(root: &Path, jobs: u64) -> PathBuf {
    fake_instance_of(root, jobs, &[42])
}

/// As [`fake_instance`], the commands issued by the tasks `pids` in turn.
fn fake_instance_of(root: &Path, jobs: u64, pids: &[u32]) -> PathBuf {
    let inst = root.join("instances/test");
    let layout = PageLayout::native64(4096);
    fs::create_dir_all(inst.join("events")).unwrap();
    fs::write(inst.join("events/header_page"), layout.header_page_text()).unwrap();
    for f in ["tracing_on", "buffer_size_kb", "trace_clock"] {
        fs::write(inst.join(f), "").unwrap();
    }
    let formats = fixture_formats("6.12");
    for (f, text) in &formats {
        if f.system == "virtio_gpu" {
            let d = inst.join("events").join(&f.system).join(&f.name);
            fs::create_dir_all(&d).unwrap();
            fs::write(d.join("format"), text).unwrap();
            fs::write(d.join("enable"), "0").unwrap();
        }
    }
    let fmt = |n: &str| formats.iter().find(|(f, _)| f.name == n).unwrap().0.clone();
    let (q, r) = (fmt("virtio_gpu_cmd_queue"), fmt("virtio_gpu_cmd_response"));
    let mut pages = Vec::new();
    let mut b = PageBuilder::new(layout);
    let mut missed = Missed::Count(4);
    for i in 0..jobs {
        for (f, t) in [(&q, 1000 + i * 100), (&r, 1050 + i * 100)] {
            let mut rec = Record::new(f, pids[i as usize % pids.len()]);
            rec.set("vq", 0)
                .set("ctx_id", 2)
                .set("seqno", i + 1)
                .set_str("name", "control");
            if !b.push(t, rec.bytes()) {
                pages.extend(b.finish(missed));
                missed = Missed::None;
                assert!(b.push(t, rec.bytes()));
            }
        }
    }
    pages.extend(b.finish(missed));
    let cpu = inst.join("per_cpu/cpu0");
    fs::create_dir_all(&cpu).unwrap();
    fs::write(cpu.join("trace_pipe_raw"), pages).unwrap();
    fs::write(
        cpu.join("stats"),
        "entries: 0\noverrun: 3\ncommit overrun: 0\ndropped events: 1\n",
    )
    .unwrap();
    inst
}

#[test]
fn ftrace_maps_trace_pipe_raw_pages_and_switches_everything_off_again() {
    let root = tree("ok");
    let inst = fake_instance(&root, 300);
    let out = root.join("out");
    let mut o = FtraceOptions::new(out.clone().into_os_string());
    o.root = root.clone();
    o.instance = "test".into();
    o.create = false;
    let mut err = Vec::new();
    let rep = record(&o, &AtomicBool::new(false), &mut err).unwrap();
    let err = String::from_utf8(err).unwrap();
    assert!(
        err.contains(
            "tracepoints found: virtio_gpu:virtio_gpu_cmd_queue virtio_gpu:virtio_gpu_cmd_response"
        ),
        "{err}"
    );
    assert!(
        err.contains("not on this kernel: gpu_scheduler:drm_sched_job"),
        "{err}"
    );
    assert!(rep.failure.is_none(), "{:?}", rep.failure);
    assert_eq!(rep.devices[0].dropped, 4);
    assert_eq!(rep.devices[0].cpus[0].events, 600);
    for f in [
        "virtio_gpu/virtio_gpu_cmd_queue/enable",
        "virtio_gpu/virtio_gpu_cmd_response/enable",
    ] {
        assert_eq!(
            fs::read_to_string(inst.join("events").join(f)).unwrap(),
            "0"
        );
    }
    assert_eq!(fs::read_to_string(inst.join("tracing_on")).unwrap(), "0");
    assert_eq!(
        fs::read_to_string(inst.join("trace_clock")).unwrap(),
        "mono"
    );
    assert_eq!(
        fs::read_to_string(inst.join("buffer_size_kb")).unwrap(),
        "4096"
    );
    let bytes = fs::read(format!("{}.grtrace.0", out.display())).unwrap();
    let h = StreamHeader::parse(&bytes).unwrap();
    assert_eq!(h.clock_id, 1, "mono clock");
    let recs: Vec<_> = Records::new(&bytes, &h).map(|r| r.unwrap()).collect();
    let count = |t: RecordType, code: u16| {
        recs.iter()
            .filter(|r| r.rtype() == t && r.code() == code)
            .count()
    };
    assert_eq!(
        (count(RecordType::EVENT, 2), count(RecordType::EVENT, 7)),
        (300, 300)
    );
    assert_eq!(count(RecordType::NOTE_LOST, 0), 1);
}

#[test]
fn ftrace_removes_its_instance_when_the_kernel_has_no_gpu_tracepoints() {
    let root = tree("none");
    let mut o = FtraceOptions::new(root.join("x").into_os_string());
    o.root = root.clone();
    let mut err = Vec::new();
    let e = record(&o, &AtomicBool::new(false), &mut err)
        .unwrap_err()
        .to_string();
    // What is wrong and what to do, on the one line of the failure (nothing before it),
    // not the relay protocol's "use matching versions".
    assert!(e.starts_with("none of the "), "{e}");
    assert!(
        e.contains(&format!(
            " GPU tracepoints grtrace maps exists under {}/events (systems gpu_scheduler, ",
            root.display()
        )),
        "{e}"
    );
    assert!(e.contains("load the GPU driver's module"), "{e}");
    assert!(!e.contains("relay protocol"), "{e}");
    assert_eq!(String::from_utf8_lossy(&err), "");
    assert!(!root.join("instances").join(&o.instance).exists());
    let none = tree("notracefs");
    fs::remove_dir(none.join("instances")).unwrap();
    o.root = none.clone();
    let e = record(&o, &AtomicBool::new(false), &mut Vec::new())
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        format!(
            "{} is not a tracefs mount (mount it: mount -t tracefs nodev /sys/kernel/tracing; under lockdown=confidentiality tracefs is forbidden)",
            none.display()
        )
    );
}

/// Live records carry a pid only; the task names come from /proc/PID/comm while the task
/// lives and from tracefs `saved_cmdlines` after it exited (as trace-cmd names them), so
/// grtparse shows names, not `[?]`.
#[test]
fn ftrace_names_the_tasks_from_proc_and_saved_cmdlines() {
    let root = tree("comm");
    let me = std::process::id();
    // A pid above the kernel's PID_MAX_LIMIT (4M) is never in /proc.
    let gone = 5_000_000;
    fake_instance_of(&root, 4, &[me, gone]);
    fs::write(
        root.join("saved_cmdlines"),
        format!("1 init\n{gone} weston\n77 <...>\n"),
    )
    .unwrap();
    let out = root.join("out");
    let mut o = FtraceOptions::new(out.clone().into_os_string());
    o.root = root.clone();
    o.instance = "test".into();
    o.create = false;
    let rep = record(&o, &AtomicBool::new(false), &mut Vec::new()).unwrap();
    assert!(rep.failure.is_none(), "{:?}", rep.failure);
    let bytes = fs::read(format!("{}.grtrace.0", out.display())).unwrap();
    let h = StreamHeader::parse(&bytes).unwrap();
    let mut names = Vec::new();
    for r in Records::new(&bytes, &h) {
        let r = r.unwrap();
        if let grtrace_format::Body::Process { comm } = r.body() {
            names.push((r.pid(), String::from_utf8_lossy(comm).into_owned()));
        }
    }
    let mine = fs::read_to_string("/proc/self/comm").unwrap();
    assert_eq!(
        names,
        vec![(me, mine.trim_end().to_string()), (gone, "weston".into())]
    );
}
