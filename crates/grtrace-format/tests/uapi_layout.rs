//! The kernel's uapi header (`kernel/include/uapi/drm/grtrace.h`, added to the kernel by
//! patch 1 of `kernel/patches/`) must agree with `abi.rs` byte for byte.
//!
//! The test generates C `_Static_assert`s (`offsetof`, `sizeof`, constants) from the Rust
//! definitions and compiles them with gcc against the header. It fails loudly when gcc is
//! missing: a layout check that silently passes is worse than none. It also checks that the
//! header in patch 1 is exactly the header kept in the repository.

use grtrace_format::abi::*;
use grtrace_format::ioctl::{self as gio, setup_flag, setup_off};
use grtrace_format::Event;
use grtrace_format::RecordType;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn header_path() -> PathBuf {
    repo_root().join("kernel/include/uapi/drm/grtrace.h")
}

struct Asserts(String);

impl Asserts {
    fn new() -> Self {
        Asserts(String::from(
            "#include <stddef.h>\n#include \"drm/grtrace.h\"\n",
        ))
    }
    fn eq(&mut self, expr: &str, value: impl std::fmt::Display) {
        writeln!(
            self.0,
            "_Static_assert(({expr}) == ({value}ULL), \"{} != {value}\");",
            expr.replace('"', "'")
        )
        .unwrap();
    }
    fn off(&mut self, ty: &str, field: &str, value: usize) {
        self.eq(&format!("offsetof(struct {ty}, {field})"), value);
    }
    fn size(&mut self, ty: &str, value: usize) {
        self.eq(&format!("sizeof(struct {ty})"), value);
    }
    fn field_size(&mut self, ty: &str, field: &str, value: usize) {
        self.eq(&format!("sizeof(((struct {ty} *)0)->{field})"), value);
    }
    /// Offset and size of each of `ty`'s `fields` (name, offset, size in bytes).
    fn fields(&mut self, ty: &str, fields: &[(&str, usize, usize)]) {
        for &(field, off, size) in fields {
            self.off(ty, field, off);
            self.field_size(ty, field, size);
        }
    }
    /// Offsets of the common record header inside a record type.
    fn record_header(&mut self, ty: &str) {
        self.off(ty, "hdr", 0);
        self.size("grtrace_record_header", RECORD_HEADER_SIZE);
    }
}

fn generate() -> String {
    let mut a = Asserts::new();

    // stream header
    let s = "grtrace_stream_header";
    a.size(s, STREAM_HEADER_SIZE);
    a.fields(
        s,
        &[
            ("magic", stream_off::MAGIC, STREAM_MAGIC.len()),
            ("byte_order", stream_off::BYTE_ORDER, 1),
            ("version_major", stream_off::VERSION_MAJOR, 2),
            ("version_minor", stream_off::VERSION_MINOR, 2),
            ("header_size", stream_off::HEADER_SIZE, 2),
            ("clock_id", stream_off::CLOCK_ID, 4),
            ("cpu", stream_off::CPU, 4),
            ("card", stream_off::CARD, 4),
            ("flags", stream_off::FLAGS, 4),
            ("session_id", stream_off::SESSION_ID, 8),
            ("anchor_realtime_ns", stream_off::ANCHOR_REALTIME_NS, 8),
            ("anchor_clock_ns", stream_off::ANCHOR_CLOCK_NS, 8),
            ("driver", stream_off::DRIVER, stream_off::DRIVER_LEN),
        ],
    );
    a.off(s, "reserved", stream_off::DRIVER + stream_off::DRIVER_LEN);
    // magic bytes, NUL included
    let magic = std::str::from_utf8(&STREAM_MAGIC[..7]).unwrap();
    assert_eq!(STREAM_MAGIC[7], 0);
    a.eq("sizeof(GRTRACE_STREAM_MAGIC)", STREAM_MAGIC.len());
    // string contents are not C constant expressions: check the definition's text instead
    let header = std::fs::read_to_string(header_path()).unwrap();
    assert!(
        header
            .lines()
            .any(|l| l.starts_with("#define GRTRACE_STREAM_MAGIC")
                && l.contains(&format!("\"{magic}\""))),
        "GRTRACE_STREAM_MAGIC is not \"{magic}\""
    );
    a.eq("GRTRACE_VERSION_MAJOR", VERSION_MAJOR);
    a.eq("GRTRACE_VERSION_MINOR", VERSION_MINOR);
    a.eq("GRTRACE_STREAM_HEADER_SIZE", STREAM_HEADER_SIZE);
    a.eq("GRTRACE_STREAM_HEADER_MAX", STREAM_HEADER_MAX);
    a.eq("GRTRACE_BYTE_ORDER_LITTLE", BYTE_ORDER_LITTLE);
    a.eq("GRTRACE_BYTE_ORDER_BIG", BYTE_ORDER_BIG);
    a.eq("GRTRACE_CLOCK_MONOTONIC", CLOCK_MONOTONIC);
    a.eq("GRTRACE_CPU_MERGED", CPU_MERGED);
    a.eq("GRTRACE_STREAM_MERGED", STREAM_MERGED);
    a.eq("GRTRACE_STREAM_SIMULATED", STREAM_SIMULATED);
    a.eq("GRTRACE_STREAM_SEQ_CHECKED", STREAM_SEQ_CHECKED);

    // record header
    let r = "grtrace_record_header";
    a.size(r, RECORD_HEADER_SIZE);
    a.eq("GRTRACE_RECORD_HEADER_SIZE", RECORD_HEADER_SIZE);
    a.eq("GRTRACE_RECORD_ALIGN", RECORD_ALIGN);
    a.fields(
        r,
        &[
            ("type", rec_off::TYPE, 2),
            ("size", rec_off::SIZE, 2),
            ("code", rec_off::CODE, 2),
            ("flags", rec_off::FLAGS, 2),
            ("cpu", rec_off::CPU, 4),
            ("pid", rec_off::PID, 4),
            ("time_ns", rec_off::TIME_NS, 8),
            ("seq", rec_off::SEQ, 8),
        ],
    );

    // record types
    for (name, v) in [
        ("EVENT", RecordType::EVENT),
        ("NOTE_PROCESS", RecordType::NOTE_PROCESS),
        ("NOTE_RING", RecordType::NOTE_RING),
        ("NOTE_MSG", RecordType::NOTE_MSG),
        ("NOTE_CLOCK_SYNC", RecordType::NOTE_CLOCK_SYNC),
        ("NOTE_LOST", RecordType::NOTE_LOST),
        ("NOTE_STREAM_INFO", RecordType::NOTE_STREAM_INFO),
    ] {
        a.eq(&format!("GRTRACE_REC_{name}"), v.0);
    }

    // event record
    let e = "grtrace_event";
    a.record_header(e);
    a.size(e, rsize::EVENT);
    a.fields(
        e,
        &[
            ("ctx", event_off::CTX, 4),
            ("ring", event_off::RING, 4),
            ("seqno", event_off::SEQNO, 8),
            ("arg0", event_off::ARG0, 8),
            ("arg1", event_off::ARG1, 8),
            ("arg2", event_off::ARG2, 4),
            ("arg3", event_off::ARG3, 4),
        ],
    );
    for code in Event::known() {
        a.eq(&format!("GRTRACE_EV_{code}"), code.0);
    }
    a.eq("GRTRACE_EV_LIMIT", Event::LIMIT);
    a.eq("GRTRACE_EVENT_MASK_ALL", EVENT_MASK_ALL);
    for (bit, name) in eflag::NAMES {
        a.eq(&format!("GRTRACE_EF_{}", name.to_uppercase()), bit);
    }
    a.eq("GRTRACE_EF_INFERRED", eflag::INFERRED);
    a.eq("GRTRACE_EF_KNOWN", eflag::KNOWN);

    // notes
    let p = "grtrace_note_process";
    a.record_header(p);
    a.size(p, rsize::NOTE_PROCESS);
    a.fields(
        p,
        &[("comm", note_off::PROCESS_COMM, note_off::PROCESS_COMM_LEN)],
    );

    let g = "grtrace_note_ring";
    a.record_header(g);
    a.size(g, rsize::NOTE_RING);
    a.fields(
        g,
        &[
            ("ring", note_off::RING_RING, 4),
            ("engine_class", note_off::RING_ENGINE_CLASS, 4),
            ("size", note_off::RING_SIZE, 8),
            ("unit", note_off::RING_UNIT, 4),
            ("flags", note_off::RING_FLAGS, 4),
            ("name", note_off::RING_NAME, note_off::RING_NAME_LEN),
        ],
    );
    a.eq("GRTRACE_RING_UNIT_BYTES", RING_UNIT_BYTES);
    a.eq("GRTRACE_RING_UNIT_SLOTS", RING_UNIT_SLOTS);
    for (bit, name) in ring_flag::NAMES {
        let name = name.replace('-', "_").to_uppercase();
        a.eq(&format!("GRTRACE_RING_{name}"), bit);
    }
    for (i, name) in ENGINE_CLASS_NAMES.iter().enumerate() {
        a.eq(&format!("GRTRACE_ENGINE_{}", name.to_uppercase()), i);
    }

    let m = "grtrace_note_msg";
    a.record_header(m);
    a.size(m, rsize::NOTE_MSG_MIN);
    a.fields(m, &[("len", note_off::MSG_LEN, 4)]);
    // a flexible array member: no size
    a.off(m, "text", note_off::MSG_TEXT);
    a.eq("GRTRACE_MSG_MAX", note_off::MSG_MAX);

    let c = "grtrace_note_clock_sync";
    a.record_header(c);
    a.size(c, rsize::NOTE_CLOCK_SYNC);
    a.fields(
        c,
        &[
            ("gpu_clock_id", note_off::CLOCK_GPU_CLOCK_ID, 4),
            ("gpu_time", note_off::CLOCK_GPU_TIME, 8),
            ("gpu_freq_hz", note_off::CLOCK_GPU_FREQ_HZ, 8),
        ],
    );

    let l = "grtrace_note_lost";
    a.record_header(l);
    a.size(l, rsize::NOTE_LOST);
    a.fields(
        l,
        &[
            ("lost_cpu", note_off::LOST_CPU, 4),
            ("source", note_off::LOST_SOURCE, 4),
            ("count", note_off::LOST_COUNT, 8),
            ("first_ns", note_off::LOST_FIRST_NS, 8),
            ("last_ns", note_off::LOST_LAST_NS, 8),
        ],
    );
    a.eq("GRTRACE_LOST_KERNEL", lost_source::KERNEL);
    a.eq("GRTRACE_LOST_RECORDER", lost_source::RECORDER);
    a.eq("GRTRACE_LOST_SEQ_GAP", lost_source::SEQ_GAP);

    let i = "grtrace_note_stream_info";
    a.record_header(i);
    a.size(i, rsize::NOTE_STREAM_INFO);
    a.fields(
        i,
        &[
            ("kernel_dropped", note_off::INFO_KERNEL_DROPPED, 8),
            ("records", note_off::INFO_RECORDS, 8),
            ("bytes", note_off::INFO_BYTES, 8),
            ("info_flags", note_off::INFO_FLAGS, 4),
        ],
    );
    a.eq("GRTRACE_INFO_STOPPED_CLEANLY", INFO_STOPPED_CLEANLY);

    // relay sub-buffer header
    let b = "grtrace_subbuf_header";
    a.size(b, subbuf::HEADER_SIZE);
    a.eq("GRTRACE_SUBBUF_HEADER_SIZE", subbuf::HEADER_SIZE);
    a.eq("GRTRACE_SUBBUF_MAGIC", subbuf::MAGIC);
    a.eq("GRTRACE_SUBBUF_VERSION", subbuf::VERSION);
    a.eq("GRTRACE_SUBBUF_FINAL", subbuf::FLAG_FINAL);
    a.fields(
        b,
        &[
            ("magic", subbuf::OFF_MAGIC, 4),
            ("version", subbuf::OFF_VERSION, 2),
            ("header_size", subbuf::OFF_HEADER_SIZE, 2),
            ("subbuf_seq", subbuf::OFF_SUBBUF_SEQ, 8),
            ("commit", subbuf::OFF_COMMIT, 4),
            ("padding", subbuf::OFF_PADDING, 4),
            ("lost", subbuf::OFF_LOST, 4),
            ("flags", subbuf::OFF_FLAGS, 4),
        ],
    );
    a.eq("GRTRACE_MIN_SUBBUF_SIZE", subbuf::MIN_SUBBUF_SIZE);
    a.eq("GRTRACE_MAX_SUBBUF_SIZE", subbuf::MAX_SUBBUF_SIZE);
    a.eq("GRTRACE_MIN_N_SUBBUFS", subbuf::MIN_N_SUBBUFS);
    a.eq("GRTRACE_MAX_N_SUBBUFS", subbuf::MAX_N_SUBBUFS);

    // the control ioctls on the primary node
    let t = "drm_grtrace_setup";
    a.size(t, setup_off::SIZE);
    a.size(t, std::mem::size_of::<gio::DrmGrtraceSetup>());
    a.fields(
        t,
        &[
            ("subbuf_size", setup_off::SUBBUF_SIZE, 4),
            ("n_subbufs", setup_off::N_SUBBUFS, 4),
            ("events", setup_off::EVENTS, 8),
            ("flags", setup_off::FLAGS, 4),
            ("pid", setup_off::PID, 4),
            ("ctx", setup_off::CTX, 4),
            ("ring", setup_off::RING, 4),
            ("session", setup_off::SESSION, 8),
        ],
    );
    a.eq("GRTRACE_SETUP_PID", setup_flag::PID);
    a.eq("GRTRACE_SETUP_CTX", setup_flag::CTX);
    a.eq("GRTRACE_SETUP_RING", setup_flag::RING);
    a.eq("GRTRACE_SETUP_KNOWN", setup_flag::KNOWN);
    a.eq("DRM_IOCTL_BASE", gio::DRM_IOCTL_BASE);
    for (name, nr, code) in IOCTLS {
        a.eq(&format!("DRM_IOCTL_{name}"), code);
        a.eq(&format!("_IOC_NR(DRM_IOCTL_{name})"), nr);
        a.eq(&format!("_IOC_TYPE(DRM_IOCTL_{name})"), gio::DRM_IOCTL_BASE);
    }
    a.eq("_IOC_SIZE(DRM_IOCTL_GRTRACE_SETUP)", setup_off::SIZE);
    a.eq(
        "_IOC_DIR(DRM_IOCTL_GRTRACE_SETUP) == (_IOC_READ | _IOC_WRITE)",
        1,
    );
    a.eq("_IOC_DIR(DRM_IOCTL_GRTRACE_START) == _IOC_NONE", 1);

    a.0
}

/// The ioctls: name after `DRM_IOCTL_`, `_IOC_NR`, the request code.
const IOCTLS: [(&str, u8, u32); 4] = [
    ("GRTRACE_SETUP", gio::NR_SETUP, gio::DRM_IOCTL_GRTRACE_SETUP),
    ("GRTRACE_START", gio::NR_START, gio::DRM_IOCTL_GRTRACE_START),
    ("GRTRACE_STOP", gio::NR_STOP, gio::DRM_IOCTL_GRTRACE_STOP),
    (
        "GRTRACE_TEARDOWN",
        gio::NR_TEARDOWN,
        gio::DRM_IOCTL_GRTRACE_TEARDOWN,
    ),
];

/// The 6.12.117 `drm.h` (kept in `kernel/guest/vendor/include/drm/`): the header that
/// `grtrace.h` includes, and the core ioctl numbers grtrace's must not collide with.
fn drm_h_dir() -> PathBuf {
    repo_root().join("kernel/guest/vendor/include/drm")
}

#[test]
fn ioctl_numbers_are_free_in_linux_6_12() {
    let drm_h = std::fs::read_to_string(drm_h_dir().join("drm.h")).unwrap();
    let mut used = Vec::new();
    for line in drm_h
        .lines()
        .filter(|l| l.starts_with("#define DRM_IOCTL_"))
    {
        // DRM_IO(0x00), DRM_IOR( 0x01, ...), DRM_IOWR(0xD0, ...)
        if let Some(open) = line
            .find("DRM_IO")
            .and_then(|i| line[i..].find('(').map(|j| i + j))
        {
            let arg = line[open + 1..].trim_start();
            if let Some(hex) = arg.strip_prefix("0x").or_else(|| arg.strip_prefix("0X")) {
                let digits: String = hex.chars().take_while(|c| c.is_ascii_hexdigit()).collect();
                used.push(u8::from_str_radix(&digits, 16).unwrap());
            }
        }
    }
    // the parse found the core table (0x00 VERSION .. 0xD0 MODE_CLOSEFB)
    assert!(used.len() > 100, "parsed only {} core ioctls", used.len());
    assert_eq!(used.iter().max(), Some(&0xD0));
    for (name, nr, _) in IOCTLS {
        assert!(!used.contains(&nr), "{name} 0x{nr:X} is taken in 6.12");
        // not in the driver range DRM_COMMAND_BASE..DRM_COMMAND_END either
        assert!(
            !(0x40..0xA0).contains(&nr),
            "{name} 0x{nr:X} is a driver number"
        );
    }
}

fn gcc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "gcc".into())
}

/// Compile `src` against the uapi header; returns gcc's stderr on failure.
fn compile(src: &str, flags: &[&str]) -> Result<(), String> {
    // one directory per call: the tests run in parallel
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("grtrace-uapi-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let c = dir.join("layout.c");
    std::fs::write(&c, src).unwrap();
    let inc = repo_root().join("kernel/include/uapi");
    let out = Command::new(gcc())
        .args(["-std=c11", "-Wall", "-Werror", "-fsyntax-only", "-I"])
        .arg(&inc)
        // grtrace.h includes "drm.h", as the kernel's drm uapi headers do; that copy is the
        // source form, whose __user annotations headers_install would strip
        .arg("-I")
        .arg(drm_h_dir())
        .arg("-D__user=")
        .args(flags)
        .arg(&c)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run `{}` ({e}): the uapi layout test needs a C compiler \
                 (apt-get install build-essential); refusing to pass without checking",
                gcc()
            )
        });
    let _ = std::fs::remove_dir_all(&dir);
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn uapi_header_matches_abi_byte_for_byte() {
    assert!(
        header_path().is_file(),
        "missing {}",
        header_path().display()
    );
    let src = generate();
    // Many assertions, so a silent no-op generator would be noticed.
    assert!(src.matches("_Static_assert").count() > 150);
    if let Err(e) = compile(&src, &[]) {
        panic!("uapi header disagrees with abi.rs:\n{e}\n--- generated ---\n{src}");
    }
    // The same layout holds for 32-bit user space (no implicit padding anywhere).
    if compile("#include <stddef.h>\n#include <linux/types.h>\n", &["-m32"]).is_ok() {
        if let Err(e) = compile(&src, &["-m32"]) {
            panic!("uapi header layout differs with -m32:\n{e}");
        }
    }
}

#[test]
fn the_check_can_fail() {
    // A deliberately wrong expectation must be rejected, proving gcc really evaluates the
    // assertions against the header.
    let mut a = Asserts::new();
    a.off("grtrace_event", "seqno", event_off::SEQNO + 8);
    let err = compile(&a.0, &[]).expect_err("a wrong offset compiled");
    assert!(err.contains("seqno"), "unexpected gcc error: {err}");
    // and an ioctl whose size disagrees (a struct grown on one side only)
    let mut a = Asserts::new();
    let grown = gio::DRM_IOCTL_GRTRACE_SETUP + (8 << 16);
    a.eq("DRM_IOCTL_GRTRACE_SETUP", grown);
    let err = compile(&a.0, &[]).expect_err("a wrong ioctl number compiled");
    assert!(
        err.contains("DRM_IOCTL_GRTRACE_SETUP"),
        "unexpected gcc error: {err}"
    );
}

#[test]
fn patch_one_adds_exactly_the_repository_header() {
    let dir = repo_root().join("kernel/patches");
    let patch = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("0001-") && n.ends_with(".patch"))
        })
        .expect("kernel/patches/0001-*.patch");
    let text = std::fs::read_to_string(&patch).unwrap();
    let start = text
        .find("+++ b/include/uapi/drm/grtrace.h\n")
        .expect("patch 1 adds include/uapi/drm/grtrace.h");
    let body = &text[start..];
    let mut added = String::new();
    for line in body.lines().skip(2) {
        // stop at the next file of the patch
        if line.starts_with("diff --git ") || line.starts_with("-- ") && line.len() == 3 {
            break;
        }
        if let Some(rest) = line.strip_prefix('+') {
            added.push_str(rest);
            added.push('\n');
        }
    }
    let header = std::fs::read_to_string(header_path()).unwrap();
    assert_eq!(
        added,
        header,
        "{} and the header added by {} differ; regenerate the series",
        header_path().display(),
        patch.display()
    );
}
