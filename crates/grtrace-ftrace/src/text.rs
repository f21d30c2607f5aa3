//! Text inputs: `trace-cmd report` output (with or without `-t`, with or without the
//! latency flags column, with its `cpus=N` / `CPU N is empty` preamble) and tracefs `trace` /
//! `trace_pipe` text. Each line's printed fields (the tracepoint's TP_printk) are read back
//! into the values the kernel recorded, rebuilt as a binary record of the kernel's own
//! format (fixtures/import), and mapped by the same [`Mapper`] as binary input, so text and
//! trace.dat give the same records (at the text's time precision).

use std::io::{self, BufRead};

use crate::datwriter::Record;
use crate::format::EventFormat;
use crate::map::{Mapper, Sink, Variant};

/// How a printed value is read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum V {
    /// Decimal (or 0x-prefixed hex) integer.
    Int(&'static str),
    /// Hex without prefix (`%p`, hashed pointers; `%x` with 0x).
    Ptr(&'static str),
    Str(&'static str),
    /// A name a layout of other kernels printed as a pointer (`%p`) under the same key:
    /// a value that is a bare hex number of 8 digits or more is that pointer, not a name,
    /// and the line is not of this layout.
    Name(&'static str),
    /// `A:B`: two integers.
    Pair(&'static str, &'static str),
    /// 1 when the word is printed (an unnamed `%s` of two choices, v3d's `RCL`/`BCL`).
    Word(&'static str),
    /// `A:B` printed without a key as the second `, `-separated item (xe's `%d:0x%x`).
    SecondPair(&'static str, &'static str),
}

/// Printed key -> field of one tracepoint.
type Keys = &'static [(&'static str, V)];

/// Per tracepoint: (kernel formats, printed key -> field). Keys are the text before `=` or
/// `:` in TP_printk (with `job count` etc. written with spaces as printed).
const TEXT: &[(&str, &str, Keys)] = &[
    ("drm_sched_job", "6.12", SCHED612),
    ("drm_run_job", "6.12", SCHED612),
    (
        "drm_sched_process_job",
        "6.12",
        &[("fence", V::Ptr("fence"))],
    ),
    (
        "drm_sched_job_wait_dep",
        "6.12",
        &[
            ("job ring", V::Str("name")),
            ("id", V::Int("id")),
            ("depends fence", V::Ptr("fence")),
            ("context", V::Int("ctx")),
            ("seq", V::Int("seqno")),
        ],
    ),
    ("drm_sched_job_queue", "6.17", SCHED617),
    ("drm_sched_job_run", "6.17", SCHED617),
    (
        "drm_sched_job_done",
        "6.17",
        &[("fence", V::Pair("fence_context", "fence_seqno"))],
    ),
    (
        "drm_sched_job_done",
        "7.3",
        &[
            ("fence", V::Pair("fence_context", "fence_seqno")),
            ("error", V::Int("error")),
        ],
    ),
    (
        "drm_sched_job_hw_fence",
        "7.3",
        &[
            ("dev", V::Str("dev")),
            ("fence", V::Pair("fence_context", "fence_seqno")),
            ("ring", V::Str("name")),
            ("hw_fence", V::Pair("hw_fence_context", "hw_fence_seqno")),
            ("error", V::Int("error")),
        ],
    ),
    (
        "drm_sched_job_timeout",
        "7.3",
        &[
            ("dev", V::Str("dev")),
            ("fence", V::Pair("fence_context", "fence_seqno")),
            ("ring", V::Str("name")),
        ],
    ),
    ("drm_sched_job_add_dep", "6.17", DEP617),
    ("drm_sched_job_unschedulable", "6.17", DEP617),
    ("dma_fence_signaled", "6.12", FENCE),
    ("dma_fence_wait_start", "6.12", FENCE),
    ("dma_fence_wait_end", "6.12", FENCE),
    ("dma_fence_init", "6.12", FENCE),
    ("dma_fence_emit", "6.12", FENCE),
    ("dma_fence_enable_signal", "6.12", FENCE),
    ("dma_fence_destroy", "6.12", FENCE),
    ("virtio_gpu_cmd_queue", "6.12", VIRTIO),
    ("virtio_gpu_cmd_response", "6.12", VIRTIO),
    ("virtio_gpu_notify", "7.3", VIRTIO),
    ("virtio_gpu_ctrl_ack", "7.3", VIRTIO),
    ("virtio_gpu_cmd_alloc", "7.3", VIRTIO),
    ("amdgpu_cs_ioctl", "6.12", AMDGPU_JOB),
    ("amdgpu_cs_ioctl", "6.17", AMDGPU_JOB),
    ("amdgpu_cs_ioctl", "4.19", AMDGPU_JOB_419),
    ("amdgpu_sched_run_job", "6.12", AMDGPU_JOB),
    ("amdgpu_sched_run_job", "6.17", AMDGPU_JOB),
    ("amdgpu_sched_run_job", "4.19", AMDGPU_JOB_419),
    (
        "amdgpu_ib_pipe_sync",
        "6.12",
        &[
            ("job ring", V::Str("ring")),
            ("id", V::Int("id")),
            ("need pipe sync to fence", V::Ptr("fence")),
            ("context", V::Int("ctx")),
            ("seq", V::Int("seqno")),
        ],
    ),
    // 6.17 dropped the scheduler job id: without this row a 6.17 line was rebuilt into the
    // 6.12 layout with id 0 and its wait put on no job.
    (
        "amdgpu_ib_pipe_sync",
        "6.17",
        &[
            ("job ring", V::Str("ring")),
            ("need pipe sync to fence", V::Ptr("fence")),
            ("context", V::Int("ctx")),
            ("seq", V::Int("seqno")),
        ],
    ),
    (
        "amdgpu_vm_flush",
        "6.12",
        &[
            ("ring", V::Str("ring")),
            ("id", V::Int("vmid")),
            ("hub", V::Int("vm_hub")),
            ("pd_addr", V::Ptr("pd_addr")),
        ],
    ),
    (
        "amdgpu_iv",
        "6.12",
        &[
            ("ih", V::Int("ih")),
            ("client_id", V::Int("client_id")),
            ("src_id", V::Int("src_id")),
            ("ring", V::Int("ring_id")),
            ("vmid", V::Int("vmid")),
            ("pasid", V::Int("pasid")),
        ],
    ),
    ("lima_task_submit", "6.12", LIMA),
    ("lima_task_submit", "6.17", LIMA),
    ("lima_task_run", "6.12", LIMA),
    ("lima_task_run", "6.17", LIMA),
    ("i915_request_queue", "6.12", I915),
    ("i915_request_add", "6.12", I915),
    ("i915_request_submit", "6.12", I915),
    ("i915_request_execute", "6.12", I915),
    ("i915_request_guc_submit", "6.12", I915),
    ("i915_request_in", "6.12", I915),
    ("i915_request_out", "6.12", I915),
    ("i915_request_retire", "6.12", I915),
    ("i915_request_wait_begin", "6.12", I915),
    ("i915_request_wait_end", "6.12", I915),
    ("i915_request_add", "4.19", I915_419),
    ("i915_request_submit", "4.19", I915_419),
    ("i915_request_execute", "4.19", I915_419),
    ("i915_request_retire", "4.19", I915_419),
    ("i915_request_wait_end", "4.19", I915_419),
    ("i915_gem_request_queue", "4.14", I915_419),
    ("i915_gem_request_add", "4.14", I915_419),
    ("i915_gem_request_submit", "4.14", I915_419),
    ("i915_gem_request_execute", "4.14", I915_419),
    ("i915_gem_request_in", "4.14", I915_419),
    ("i915_gem_request_out", "4.14", I915_419),
    ("i915_gem_request_retire", "4.14", I915_419),
    ("i915_gem_request_wait_begin", "4.14", I915_419),
    ("i915_gem_request_wait_end", "4.14", I915_419),
    ("fence_signaled", "4.9", FENCE),
    ("fence_wait_start", "4.9", FENCE),
    ("fence_wait_end", "4.9", FENCE),
    ("fence_init", "4.9", FENCE),
    ("fence_emit", "4.9", FENCE),
    ("fence_enable_signal", "4.9", FENCE),
    ("fence_destroy", "4.9", FENCE),
    ("xe_exec_queue_create", "6.12", XE_QUEUE),
    ("xe_exec_queue_destroy", "6.12", XE_QUEUE),
    ("xe_exec_queue_reset", "6.12", XE_QUEUE),
    ("xe_sched_job_exec", "6.12", XE_JOB),
    ("xe_sched_job_run", "6.12", XE_JOB),
    ("xe_sched_job_timedout", "6.12", XE_JOB),
    ("xe_hw_fence_create", "6.12", XE_FENCE),
    ("xe_hw_fence_signal", "6.12", XE_FENCE),
    (
        "xe_vma_pagefault",
        "6.12",
        &[
            ("dev", V::Str("dev")),
            ("vma", V::Ptr("vma")),
            ("asid", V::Int("asid")),
            ("start", V::Int("start")),
            ("end", V::Int("end")),
            ("userptr", V::Int("ptr")),
        ],
    ),
    ("msm_gpu_submit_flush", "6.12", MSM),
    ("msm_gpu_submit_retired", "6.12", MSM),
    (
        "v3d_submit_cl",
        "6.12",
        &[
            ("dev", V::Int("dev")),
            ("RCL", V::Word("is_render")),
            ("seqno", V::Int("seqno")),
        ],
    ),
    ("v3d_submit_tfu", "6.12", V3D),
    ("v3d_submit_csd", "6.12", V3D),
    ("v3d_bcl_irq", "6.12", V3D),
    ("v3d_rcl_irq", "6.12", V3D),
    ("v3d_tfu_irq", "6.12", V3D),
    ("v3d_csd_irq", "6.12", V3D),
    ("v3d_reset_begin", "6.12", V3D),
];

/// amdgpu's job events: `ring_name=%s` of the ring's name (5.x+).
const AMDGPU_JOB: &[(&str, V)] = &[
    ("sched_job", V::Int("sched_job_id")),
    ("timeline", V::Str("timeline")),
    ("context", V::Int("context")),
    ("seqno", V::Int("seqno")),
    ("ring_name", V::Name("ring")),
    ("num_ibs", V::Int("num_ibs")),
];
/// amdgpu's job events of 4.x: `ring_name` is a pointer; the ring is the timeline.
const AMDGPU_JOB_419: &[(&str, V)] = &[
    ("sched_job", V::Int("sched_job_id")),
    ("timeline", V::Str("timeline")),
    ("context", V::Int("context")),
    ("seqno", V::Int("seqno")),
    ("ring_name", V::Ptr("ring_name")),
    ("num_ibs", V::Int("num_ibs")),
];
/// i915's request events before the uabi engine (4.9-5.0): `ring` is the engine id.
const I915_419: &[(&str, V)] = &[
    ("dev", V::Int("dev")),
    ("hw_id", V::Int("hw_id")),
    ("ring", V::Int("ring")),
    ("ctx", V::Int("ctx")),
    ("seqno", V::Int("seqno")),
    ("global", V::Int("global")),
];
const I915: &[(&str, V)] = &[
    ("dev", V::Int("dev")),
    ("engine", V::Pair("class", "instance")),
    ("ctx", V::Int("ctx")),
    ("seqno", V::Int("seqno")),
    ("tail", V::Int("tail")),
    ("flags", V::Int("flags")),
    ("prio", V::Int("prio")),
    ("port", V::Int("port")),
    ("completed?", V::Int("completed")),
];
const XE_QUEUE: &[(&str, V)] = &[
    ("dev", V::Str("dev")),
    ("", V::SecondPair("class", "logical_mask")),
    ("gt", V::Int("gt_id")),
    ("width", V::Int("width")),
    ("guc_id", V::Int("guc_id")),
    ("guc_state", V::Int("guc_state")),
    ("flags", V::Int("flags")),
];
const XE_JOB: &[(&str, V)] = &[
    ("dev", V::Str("dev")),
    ("fence", V::Ptr("fence")),
    ("seqno", V::Int("seqno")),
    ("lrc_seqno", V::Int("lrc_seqno")),
    ("guc_id", V::Int("guc_id")),
    ("batch_addr", V::Int("batch_addr")),
    ("guc_state", V::Int("guc_state")),
    ("flags", V::Int("flags")),
    ("error", V::Int("error")),
];
const XE_FENCE: &[(&str, V)] = &[
    ("dev", V::Str("dev")),
    ("ctx", V::Int("ctx")),
    ("fence", V::Ptr("fence")),
    ("seqno", V::Int("seqno")),
];
const MSM: &[(&str, V)] = &[
    ("id", V::Int("id")),
    ("pid", V::Int("pid")),
    ("ring", V::Pair("ringid", "seqno")),
    ("ticks", V::Int("ticks")),
    ("elapsed", V::Int("elapsed")),
    ("mhz", V::Int("clock")),
    ("start", V::Int("start_ticks")),
    ("end", V::Int("end_ticks")),
];
const V3D: &[(&str, V)] = &[("dev", V::Int("dev")), ("seqno", V::Int("seqno"))];

const LIMA: &[(&str, V)] = &[
    ("task", V::Int("task_id")),
    ("context", V::Int("context")),
    ("seqno", V::Int("seqno")),
    ("pipe", V::Str("pipe")),
];
const SCHED612: &[(&str, V)] = &[
    ("entity", V::Ptr("entity")),
    ("id", V::Int("id")),
    ("fence", V::Ptr("fence")),
    ("ring", V::Str("name")),
    ("job count", V::Int("job_count")),
    ("hw job count", V::Int("hw_job_count")),
];
const SCHED617: &[(&str, V)] = &[
    ("dev", V::Str("dev")),
    ("fence", V::Pair("fence_context", "fence_seqno")),
    ("ring", V::Str("name")),
    ("job count", V::Int("job_count")),
    ("hw job count", V::Int("hw_job_count")),
    ("client_id", V::Int("client_id")),
];
const DEP617: &[(&str, V)] = &[
    ("fence", V::Pair("fence_context", "fence_seqno")),
    ("depends on fence", V::Pair("ctx", "seqno")),
    ("depends on unsignalled fence", V::Pair("ctx", "seqno")),
];
const FENCE: &[(&str, V)] = &[
    ("driver", V::Str("driver")),
    ("timeline", V::Str("timeline")),
    ("context", V::Int("context")),
    ("seqno", V::Int("seqno")),
];
const VIRTIO: &[(&str, V)] = &[
    ("vdev", V::Int("dev")),
    ("vq", V::Int("vq")),
    ("name", V::Str("name")),
    ("type", V::Int("type")),
    ("flags", V::Int("flags")),
    ("fence_id", V::Int("fence_id")),
    ("ctx_id", V::Int("ctx_id")),
    ("num_free", V::Int("num_free")),
    ("seqno", V::Int("seqno")),
    ("notify", V::Int("notify")),
    ("elemcnt", V::Int("elemcnt")),
    ("stall", V::Int("stall")),
];

/// The kernels whose formats text lines are rebuilt into, newest first ("7.3": with the
/// upstream series of kernel/upstream/).
const TEXT_KERNELS: [&str; 6] = ["6.12", "6.17", "7.3", "4.19", "4.14", "4.9"];

/// The formats text input is rebuilt into, each with the kernel of its `TEXT` rows: 6.12
/// and 6.17 scheduler names side by side, both variants of the events whose fields changed
/// in 6.17 (amdgpu's and lima's lost the scheduler job id), and the layouts of 4.x kernels
/// (i915 `ring=`, amdgpu `ring_name=%p`, the `fence` class): a line is rebuilt into the
/// variant whose fields it prints.
pub fn text_formats() -> Vec<(&'static str, EventFormat)> {
    let mut v: Vec<(&'static str, EventFormat)> = Vec::new();
    for k in TEXT_KERNELS {
        for f in crate::fixtures::formats(k) {
            if !v.iter().any(|(_, g)| g.id == f.id) {
                v.push((k, f));
            }
        }
    }
    v
}

/// A container ftrace text comes in besides plain text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Container {
    /// Android systrace/atrace HTML: the text in `<script class="trace-data">` blocks.
    SystraceHtml,
    /// Catapult JSON: the string `systemTraceEvents`.
    CatapultJson,
}

impl Container {
    /// How the source note names it.
    pub fn name(self) -> &'static str {
        match self {
            Container::SystraceHtml => "systrace HTML (trace-data ftrace text)",
            Container::CatapultJson => "Catapult JSON (systemTraceEvents)",
        }
    }
}

/// The ftrace text inside `data` when it is systrace/atrace HTML or Catapult JSON; None
/// for anything else (plain text is read as it is). Byte offsets of errors are then
/// offsets into the text taken out. The text is no larger than `data`.
pub fn unwrap_container(data: &[u8]) -> Option<(Container, Vec<u8>)> {
    let start = data.iter().position(|b| !b.is_ascii_whitespace())?;
    let head = &data[start..(start + 512).min(data.len())];
    let lower: Vec<u8> = head.iter().map(u8::to_ascii_lowercase).collect();
    if lower.starts_with(b"<!doctype html") || lower.starts_with(b"<html") {
        return Some((Container::SystraceHtml, html_trace_data(data)));
    }
    if head.starts_with(b"{") {
        return json_string(data, b"\"systemTraceEvents\"").map(|t| (Container::CatapultJson, t));
    }
    None
}

/// The ftrace text of systrace HTML: every `<script class="trace-data" ...>` block that is
/// not JSON (atrace writes the ftrace text in one, other data in others), in order.
fn html_trace_data(data: &[u8]) -> Vec<u8> {
    const OPEN: &[u8] = b"<script class=\"trace-data\"";
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = find(&data[at..], OPEN) {
        let tag = at + i;
        let Some(gt) = find(&data[tag..], b">") else {
            break;
        };
        let body = tag + gt + 1;
        let end = find(&data[body..], b"</script>").map_or(data.len(), |e| body + e);
        let block = &data[body..end];
        let first = block.iter().find(|b| !b.is_ascii_whitespace());
        if !matches!(first, Some(b'{') | Some(b'[') | None) {
            out.extend_from_slice(block);
            out.push(b'\n');
        }
        at = end;
    }
    out
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The value of the JSON string member `key` (quoted) of `data`, unescaped; None when
/// there is none or it is not a string.
fn json_string(data: &[u8], key: &[u8]) -> Option<Vec<u8>> {
    let k = find(data, key)?;
    let mut i = k + key.len();
    let skip = |i: &mut usize| {
        while data.get(*i).is_some_and(|b| b.is_ascii_whitespace()) {
            *i += 1;
        }
    };
    skip(&mut i);
    (data.get(i) == Some(&b':')).then_some(())?;
    i += 1;
    skip(&mut i);
    (data.get(i) == Some(&b'"')).then_some(())?;
    i += 1;
    let mut out = Vec::new();
    let mut pending_high: Option<u32> = None;
    while let Some(&b) = data.get(i) {
        i += 1;
        match b {
            b'"' => return Some(out),
            b'\\' => {
                let esc = *data.get(i)?;
                i += 1;
                let c = match esc {
                    b'n' => '\n',
                    b't' => '\t',
                    b'r' => '\r',
                    b'b' => '\u{8}',
                    b'f' => '\u{c}',
                    b'u' => {
                        let hex = std::str::from_utf8(data.get(i..i + 4)?).ok()?;
                        i += 4;
                        let v = u32::from_str_radix(hex, 16).ok()?;
                        if (0xd800..0xdc00).contains(&v) {
                            pending_high = Some(v);
                            continue;
                        }
                        let v = match pending_high.take() {
                            Some(h) if (0xdc00..0xe000).contains(&v) => {
                                0x10000 + ((h - 0xd800) << 10) + (v - 0xdc00)
                            }
                            _ => v,
                        };
                        char::from_u32(v).unwrap_or('\u{fffd}')
                    }
                    other => other as char,
                };
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
            _ => out.push(b),
        }
    }
    None
}

/// A line that is not trace text; `line` counts from 1, `offset` is its byte offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextError {
    /// Line number (from 1).
    pub line: u64,
    /// Byte offset of the line.
    pub offset: u64,
    /// What is wrong.
    pub msg: String,
}

impl std::fmt::Display for TextError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "offset {} (line {}): {}",
            self.offset, self.line, self.msg
        )
    }
}

/// One parsed event line.
#[derive(Debug, PartialEq, Eq)]
pub struct Line<'a> {
    /// Task name.
    pub comm: &'a str,
    /// Task id.
    pub pid: u32,
    /// CPU (`[003]`).
    pub cpu: u32,
    /// Timestamp in nanoseconds.
    pub ts_ns: u64,
    /// Event name (`drm_run_job`, without its system).
    pub event: &'a str,
    /// The event's fields, as printed.
    pub rest: &'a str,
}

/// What a line is.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed<'a> {
    /// An event line.
    Event(Line<'a>),
    /// `CPU:N [LOST K EVENTS]` (tracefs) or `CPU:N [K EVENTS DROPPED]` (trace-cmd); without
    /// a count (`[LOST EVENTS]`, `[EVENTS DROPPED]`) when the ring buffer did not store one.
    Lost {
        /// CPU whose events were lost.
        cpu: u32,
        /// How many, when the line says.
        count: Option<u64>,
    },
    /// Preamble, comments, blank lines.
    Skip,
}

fn parse_ts(s: &str) -> Option<u64> {
    let (sec, frac) = s.split_once('.')?;
    let sec: u64 = sec.parse().ok()?;
    if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let f: u64 = frac.parse().ok()?;
    Some(sec * 1_000_000_000 + f * 10u64.pow(9 - frac.len() as u32))
}

/// A CPU column: the per-CPU state and outputs are sized by it, so a number no machine has
/// is an error (the bound trace.dat's CPU counts have), not a huge allocation.
fn cpu_number(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(cpu) if cpu < crate::tracedat::MAX_CPUS => Ok(cpu),
        Ok(cpu) => Err(format!(
            "CPU {cpu} (at most {} CPUs)",
            crate::tracedat::MAX_CPUS
        )),
        Err(_) => Err(format!("bad CPU number `{s}`")),
    }
}

/// Parses one line of `trace-cmd report` or tracefs `trace` text.
pub fn parse_line(l: &str) -> Result<Parsed<'_>, String> {
    let t = l.trim();
    if t.is_empty() || t.starts_with('#') || t.starts_with("cpus=") || t.starts_with("version =") {
        return Ok(Parsed::Skip);
    }
    if t.starts_with("CPU ") && (t.ends_with(" is empty") || t.contains("data recorded at")) {
        return Ok(Parsed::Skip);
    }
    if let Some(r) = t.strip_prefix("CPU:") {
        let (cpu, rest) = r.split_once(' ').ok_or("bad CPU line")?;
        let cpu = cpu_number(cpu)?;
        let inner = rest.trim().trim_start_matches('[').trim_end_matches(']');
        let words: Vec<&str> = inner.split_whitespace().collect();
        let count = match words.as_slice() {
            ["LOST", n, "EVENTS"] => Some(n.parse().map_err(|_| "bad lost count")?),
            [n, "EVENTS", "DROPPED"] => Some(n.parse().map_err(|_| "bad dropped count")?),
            ["LOST", "EVENTS"] | ["EVENTS", "DROPPED"] => None,
            _ => return Err(format!("unrecognised CPU line `{t}`")),
        };
        return Ok(Parsed::Lost { cpu, count });
    }
    // "<comm>-<pid> [(<tgid>)] [<cpu>] [<flags>] <secs>.<frac>: <event>: <fields>"
    // " [" by its '[' (a byte search; a two-byte pattern costs a searcher per line).
    let b = l.as_bytes();
    let Some(open) = (1..b.len())
        .find(|&i| b[i] == b'[' && b[i - 1] == b' ')
        .map(|i| i - 1)
    else {
        return parse_latency(l).ok_or_else(|| "no [cpu] column".into());
    };
    let mut who = l[..open].trim();
    let mut after = &l[open + 2..];
    // tracefs with `options/record-tgid` (and every atrace/systrace capture) prints
    // "(  tgid)" between the task and the cpu, "(-----)" when the tgid is not known.
    if let Some(inner) = who.strip_suffix(')') {
        if let Some(i) = inner.rfind('(') {
            let tgid = inner[i + 1..].trim();
            if !tgid.is_empty()
                && (tgid.bytes().all(|b| b.is_ascii_digit()) || tgid.bytes().all(|b| b == b'-'))
            {
                who = inner[..i].trim_end();
            }
        }
    }
    let (comm, pid) = who.rsplit_once('-').ok_or("no comm-pid")?;
    let pid: u32 = pid
        .trim()
        .parse()
        .map_err(|_| format!("bad pid in `{who}`"))?;
    let close = after.find(']').ok_or("no ] after cpu")?;
    let cpu = cpu_number(after[..close].trim())?;
    after = &after[close + 1..];
    let mut words = after.split_whitespace();
    let mut tok = words.next().ok_or("no timestamp")?;
    if parse_ts(tok.trim_end_matches(':')).is_none() {
        // the flags column (irqs-off, need-resched, hardirq/softirq, preempt depth)
        tok = words.next().ok_or("no timestamp")?;
    }
    let ts_ns =
        parse_ts(tok.trim_end_matches(':')).ok_or_else(|| format!("bad timestamp `{tok}`"))?;
    // `tok` is a slice of `after`: where it ends, without searching for it.
    let ev_at = tok.as_ptr() as usize - after.as_ptr() as usize + tok.len();
    let rest = after[ev_at..].trim_start();
    let (event, fields) = match rest.split_once(':') {
        Some((e, f)) if !e.contains(' ') => (e, f.trim()),
        _ => return Err("no event name".into()),
    };
    // trace-cmd may print "system:event"
    let event = event.rsplit(':').next().unwrap_or(event);
    Ok(Parsed::Event(Line {
        comm,
        pid,
        cpu,
        ts_ns,
        event,
        rest: fields,
    }))
}

/// A line of the latency format (tracefs `options/latency-format`):
/// `<comm>-<pid> <cpu><flags> <usecs>us<mark>: <event>: <fields>`, the time in µs since
/// the trace buffer's start (the kernel's `lat_print_timestamp`, not verbose).
fn parse_latency(l: &str) -> Option<Parsed<'_>> {
    let b = l.as_bytes();
    // the time column: digits, "us", one mark character, ": "
    let us = (1..b.len().saturating_sub(4)).find(|&i| {
        b[i..].starts_with(b"us") && b[i - 1].is_ascii_digit() && b.get(i + 3..i + 5) == Some(b": ")
    })?;
    let digits = l[..us]
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |i| i + 1);
    let ts_ns = l[digits..us].parse::<u64>().ok()?.checked_mul(1000)?;
    let head = l[..digits].trim_end();
    let (who, cpu_flags) = head.rsplit_once(char::is_whitespace)?;
    let cpu_end = cpu_flags
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(cpu_flags.len());
    let cpu = cpu_number(&cpu_flags[..cpu_end]).ok()?;
    let (comm, pid) = who.trim().rsplit_once('-')?;
    let pid = pid.trim().parse().ok()?;
    let rest = &l[us + 5..];
    let (event, fields) = rest.split_once(':')?;
    if event.contains(' ') {
        return None;
    }
    Some(Parsed::Event(Line {
        comm: comm.trim(),
        pid,
        cpu,
        ts_ns,
        event,
        rest: fields.trim(),
    }))
}

/// The value printed after `key` (followed by `=` or `:`) in `rest`, up to the next `, ` or
/// blank. Keys are matched at word starts.
fn value<'a>(rest: &'a str, key: &str) -> Option<&'a str> {
    let mut from = 0;
    while let Some(i) = rest[from..].find(key) {
        let at = from + i;
        let before_ok = at == 0 || matches!(rest.as_bytes()[at - 1], b' ' | b',');
        let after = &rest[at + key.len()..];
        if before_ok && (after.starts_with('=') || after.starts_with(':')) {
            let v = &after[1..];
            let end = v.find([',', ' ']).unwrap_or(v.len());
            return Some(&v[..end]);
        }
        from = at + key.len();
    }
    None
}

/// The keys a line prints (`key=value`, or `key:value` where it has no `=`), for naming
/// a layout that is not known.
fn printed_keys(rest: &str) -> Vec<&str> {
    let eq = rest.contains('=');
    rest.split([',', ' '])
        .filter_map(|w| w.split_once(if eq { '=' } else { ':' }))
        .map(|(k, _)| k)
        .filter(|k| !k.is_empty())
        .collect()
}

fn int(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s
            .parse::<i64>()
            .map(|v| v as u64)
            .ok()
            .or_else(|| s.parse().ok()),
    }
}

/// One layout a line of an event may have: a TEXT row and its loaded format.
struct Cand {
    /// Index into [`TextImport::formats`].
    fmt: usize,
    keys: Keys,
    /// Bit i: key i prints a field the layout's variant forms an identity from.
    needed: u64,
    /// Bit i: the format has key i's field.
    has: u64,
}

/// Text reader state: formats, the mapper, counts.
pub struct TextImport {
    formats: Vec<(&'static str, EventFormat)>,
    /// The TEXT rows whose format is loaded, grouped by event (resolved once, not per line).
    cands: Vec<Cand>,
    /// Event name -> its range of `cands`.
    events: Vec<(&'static str, std::ops::Range<usize>)>,
    /// The mapping of events into records.
    pub mapper: Mapper,
    /// Lines of events this importer does not know (not GPU tracepoints).
    pub other_lines: u64,
    /// Lines read.
    pub lines: u64,
    last_ts: Vec<u64>,
    /// Tasks whose name (the line's task column) was told to the sink: bit per pid.
    named: Vec<u64>,
    /// The text's first event time, when it was read ahead ([`TextImport::for_text`]).
    first: Option<u64>,
}

impl Default for TextImport {
    fn default() -> Self {
        Self::new()
    }
}

/// Tracepoints whose presence in a trace changes how others map (IMPORT.md 5.7-5.10: i915
/// with its low-level events, the DRM scheduler duplicates of xe, msm and v3d jobs).
/// trace.dat carries only the formats of recorded events; text gets them only when it has
/// such lines.
const SWITCHES: [&str; 4] = [
    "i915_request_in",
    "xe_sched_job_run",
    "msm_gpu_submit_retired",
    "v3d_submit_cl",
];

impl TextImport {
    /// A reader for text without the tracepoints of `SWITCHES` (see [`for_text`]).
    ///
    /// [`for_text`]: Self::for_text
    pub fn new() -> TextImport {
        let formats: Vec<(&str, EventFormat)> = text_formats()
            .into_iter()
            .filter(|(_, f)| !SWITCHES.contains(&f.name.as_str()))
            .collect();
        Self::with_formats(formats, None)
    }

    /// A reader for `text`, which is read once first, as a trace.dat would describe it:
    /// the formats are those of the events the text has lines of (a trace.dat carries
    /// the formats of the events it recorded), so the switches of `SWITCHES` follow the
    /// text and the stream header names the drivers the text really has; and the time of
    /// its first event is the capture's start (IMPORT.md §1).
    pub fn for_text(text: &[u8]) -> TextImport {
        let text = match std::str::from_utf8(text) {
            Ok(t) => std::borrow::Cow::Borrowed(t),
            Err(_) => String::from_utf8_lossy(text),
        };
        // Few distinct events in a capture, the same ones line after line: a list beats
        // hashing every line's name.
        let mut names: Vec<&str> = Vec::new();
        let mut first: Option<u64> = None;
        for l in text.lines() {
            if let Ok(Parsed::Event(e)) = parse_line(l) {
                if !names.contains(&e.event) {
                    names.push(e.event);
                }
                first = Some(first.map_or(e.ts_ns, |f| f.min(e.ts_ns)));
            }
        }
        let formats: Vec<(&str, EventFormat)> = text_formats()
            .into_iter()
            .filter(|(_, f)| names.contains(&f.name.as_str()))
            .collect();
        Self::with_formats(formats, first)
    }

    fn with_formats(formats: Vec<(&'static str, EventFormat)>, first: Option<u64>) -> TextImport {
        let only: Vec<EventFormat> = formats.iter().map(|(_, f)| f.clone()).collect();
        let mapper = Mapper::new(grtrace_format::Endian::NATIVE, &only);
        let (mut cands, mut events) = (Vec::new(), Vec::new());
        let mut names: Vec<&'static str> = TEXT.iter().map(|(n, _, _)| *n).collect();
        names.sort_unstable();
        names.dedup();
        for name in names {
            let from = cands.len();
            for (_, kernel, keys) in TEXT.iter().filter(|(n, _, _)| *n == name) {
                let Some(fmt) = (formats.iter()).position(|(k, f)| k == kernel && f.name == name)
                else {
                    continue;
                };
                let f = &formats[fmt].1;
                let needed_fields: &[&str] = match Variant::of(f) {
                    Ok(Some(v)) => v.fields,
                    _ => &[],
                };
                let (mut needed, mut has) = (0u64, 0u64);
                for (i, (_, v)) in keys.iter().enumerate() {
                    let field = match v {
                        V::Int(f) | V::Ptr(f) | V::Str(f) | V::Name(f) | V::Word(f) => *f,
                        V::Pair(a, _) | V::SecondPair(a, _) => *a,
                    };
                    if needed_fields.contains(&field) && !matches!(v, V::Word(_)) {
                        needed |= 1 << i;
                    }
                    if f.field(field).is_some() {
                        has |= 1 << i;
                    }
                }
                cands.push(Cand {
                    fmt,
                    keys,
                    needed,
                    has,
                });
            }
            if cands.len() > from {
                events.push((name, from..cands.len()));
            }
        }
        TextImport {
            formats,
            cands,
            events,
            mapper,
            other_lines: 0,
            lines: 0,
            last_ts: Vec::new(),
            named: Vec::new(),
            first,
        }
    }

    /// The layout of `l`'s event its printed keys fit, with its keys: of the [`TEXT`] rows
    /// of the event whose format is loaded, those that print every field their variant
    /// forms an identity from (IMPORT.md §2: a line that does not is never read as that
    /// layout with the field left 0), and of those the one with no printed key for a field
    /// it lacks and the fewest of its fields not printed. `Err` names the printed keys when
    /// no layout fits.
    fn variant(&self, l: &Line<'_>) -> Result<Option<(&EventFormat, Keys)>, String> {
        let Some((_, range)) = self.events.iter().find(|(e, _)| *e == l.event) else {
            return Ok(None);
        };
        let cands = &self.cands[range.clone()];
        let printed = |key: &str| match key {
            "" => l.rest.split(", ").nth(1).is_some(),
            k => value(l.rest, k).is_some(),
        };
        // Whether the line prints every identity field of the candidate (and a name, not a
        // pointer, where a name is read).
        let fits = |c: &Cand| {
            c.keys.iter().enumerate().all(|(i, (key, v))| {
                let need = c.needed & (1 << i) != 0;
                match v {
                    V::Name(_) => match value(l.rest, key) {
                        Some(text) => {
                            let hex = text.trim_start_matches("0x");
                            !(hex.len() >= 8 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
                        }
                        None => !need,
                    },
                    // a key of the same fields printed instead (6.17's `depends on fence`
                    // and `depends on unsignalled fence`) prints them too
                    _ if need => {
                        printed(key)
                            || (c.keys.iter()).any(|(k, w)| k != key && w == v && printed(k))
                    }
                    _ => true,
                }
            })
        };
        let best = if let [c] = cands {
            fits(c).then_some(c)
        } else {
            let score = |c: &Cand| {
                let (mut absent_printed, mut present_unprinted) = (0, 0);
                for (i, (key, _)) in c.keys.iter().enumerate() {
                    match (c.has & (1 << i) != 0, printed(key)) {
                        (false, true) => absent_printed += 1,
                        (true, false) => present_unprinted += 1,
                        _ => {}
                    }
                }
                (absent_printed, present_unprinted)
            };
            cands.iter().filter(|c| fits(c)).min_by_key(|c| score(c))
        };
        match best {
            Some(c) => Ok(Some((&self.formats[c.fmt].1, c.keys))),
            None => Err(format!(
                "format with fields {} is not known",
                printed_keys(l.rest).join(", ")
            )),
        }
    }

    /// Builds the binary record of a known event line; None for other events, `Err(Ok)`
    /// for a known event whose layout no variant has (counted as not mapped).
    fn record(&self, l: &Line<'_>) -> Result<Option<Vec<u8>>, Result<String, String>> {
        let (fmt, keys) = match self.variant(l) {
            Ok(Some(x)) => x,
            Ok(None) => return Ok(None),
            Err(why) => return self.raw_record(l).map(Some).ok_or(Ok(why)),
        };
        let mut r = Record::new(fmt, l.pid);
        let mut found = 0;
        for (key, v) in keys.iter() {
            let text = match v {
                V::Word(f) => {
                    let on = l.rest.split([',', ' ']).any(|w| w == *key);
                    r.set(f, u64::from(on));
                    found += 1;
                    continue;
                }
                V::SecondPair(..) => l.rest.split(", ").nth(1),
                _ => value(l.rest, key),
            };
            let Some(text) = text else {
                continue;
            };
            found += 1;
            let bad = || Err(format!("{}: cannot read `{key}` from `{text}`", l.event));
            match v {
                V::Int(f) => {
                    r.set(f, int(text).ok_or_else(bad)?);
                }
                V::Ptr(f) => {
                    let h = text.trim_start_matches("0x");
                    r.set(f, u64::from_str_radix(h, 16).ok().unwrap_or(0));
                }
                V::Str(f) | V::Name(f) => {
                    r.set_str(f, text);
                }
                V::Pair(a, b) | V::SecondPair(a, b) => {
                    let (x, y) = text.split_once(':').ok_or_else(bad)?;
                    r.set(a, int(x).ok_or_else(bad)?);
                    r.set(b, int(y).ok_or_else(bad)?);
                }
                V::Word(_) => {}
            }
        }
        if found == 0 {
            return Err(Err(format!(
                "{}: none of its fields in `{}`",
                l.event, l.rest
            )));
        }
        Ok(Some(r.bytes().to_vec()))
    }

    /// `trace-cmd report -R` prints an event's fields raw (`name=value`, by the format's own
    /// field names) instead of its TP_printk: the record of the first loaded layout of the
    /// event every field of which the line prints, read back field by field.
    fn raw_record(&self, l: &Line<'_>) -> Option<Vec<u8>> {
        let fits = |f: &EventFormat| {
            f.fields
                .iter()
                .filter(|x| !x.name.starts_with("common_"))
                .all(|x| value(l.rest, &x.name).is_some())
        };
        let (_, f) = self
            .formats
            .iter()
            .find(|(_, f)| f.name == l.event && fits(f))?;
        let mut r = Record::new(f, l.pid);
        for x in f.fields.iter().filter(|x| !x.name.starts_with("common_")) {
            let text = value(l.rest, &x.name)?;
            if x.data_loc || x.rel_loc {
                r.set_str(&x.name, text);
            } else {
                r.set(&x.name, int(text)?);
            }
        }
        Some(r.bytes().to_vec())
    }

    /// Tells the sink the name of task `pid` the first time one of its GPU lines comes
    /// (`NOTE_PROCESS` then names it, IMPORT.md §1); `<idle>` and unknown (`<...>`) are
    /// not names.
    fn name_task<S: Sink>(&mut self, sink: &mut S, pid: u32, comm: &str) {
        if pid == 0 || comm.starts_with('<') {
            return;
        }
        let (w, b) = (pid as usize / 64, 1u64 << (pid % 64));
        if self.named.len() <= w {
            self.named.resize(w + 1, 0);
        }
        if self.named[w] & b == 0 {
            self.named[w] |= b;
            sink.task_name(pid, comm);
        }
    }

    /// Reads all of `input` into `sink`. Stops at the first line that is not trace text.
    pub fn run<R: BufRead, S: Sink>(
        &mut self,
        mut input: R,
        sink: &mut S,
    ) -> Result<(), TextErrorOrIo> {
        let mut line = String::new();
        let mut offset = 0u64;
        if let Some(t) = self.first {
            sink.capture_start(t);
        }
        loop {
            line.clear();
            let n = input.read_line(&mut line).map_err(TextErrorOrIo::Io)?;
            if n == 0 {
                return Ok(());
            }
            self.lines += 1;
            let at = offset;
            offset += n as u64;
            let line_no = self.lines;
            let err = |msg: String| {
                TextErrorOrIo::Text(TextError {
                    line: line_no,
                    offset: at,
                    msg,
                })
            };
            match parse_line(line.trim_end_matches(['\n', '\r'])).map_err(&err)? {
                Parsed::Skip => {}
                Parsed::Lost { cpu, count } => {
                    // The marker stands before the CPU's first event after the loss: it is
                    // no earlier than that CPU's last event nor than the line before it
                    // (text is in time order; every event line reached the mapper's
                    // stats), and not before the capture's first event.
                    let prev = self.last_ts.get(cpu as usize).copied().filter(|&t| t > 0);
                    let t = (prev.unwrap_or(0))
                        .max(self.mapper.stats.last_ns)
                        .max(self.first.unwrap_or(0));
                    self.mapper
                        .lost(sink, cpu, count, prev.unwrap_or(t), t)
                        .map_err(TextErrorOrIo::Io)?;
                }
                Parsed::Event(l) => {
                    let c = l.cpu as usize;
                    if self.last_ts.len() <= c {
                        self.last_ts.resize(c + 1, 0);
                    }
                    self.last_ts[c] = l.ts_ns;
                    let rec = match self.record(&l) {
                        Ok(r) => r,
                        Err(Ok(why)) => {
                            let system = self
                                .formats
                                .iter()
                                .find(|(_, f)| f.name == l.event)
                                .map_or(String::new(), |(_, f)| f.system.clone());
                            self.mapper.unmapped(&system, l.event, why, l.ts_ns);
                            continue;
                        }
                        Err(Err(msg)) => return Err(err(msg)),
                    };
                    match rec {
                        None => {
                            self.other_lines += 1;
                            self.mapper.other_event(l.ts_ns);
                        }
                        Some(bytes) => {
                            self.name_task(sink, l.pid, l.comm);
                            match self.mapper.event(sink, l.cpu, l.ts_ns, &bytes) {
                                Ok(r) => r.map_err(TextErrorOrIo::Io)?,
                                Err(e) => return Err(err(e.0)),
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Text input failed: a bad line, or reading / writing.
#[derive(Debug)]
pub enum TextErrorOrIo {
    /// A line that is not trace text.
    Text(TextError),
    /// Reading the input or writing the output failed.
    Io(io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The variant table, the text importer and IMPORT.md say the same: every variant has
    /// a fixture format (from its kernels' sources) that resolves to it, a TEXT row whose
    /// format resolves to it, and its row in IMPORT.md §5.0, which has no other rows.
    #[test]
    fn the_variant_table_the_text_keys_and_import_md_agree() {
        let doc = include_str!("../../grtrace-format/IMPORT.md");
        let section = doc
            .split("### 5.0 ")
            .nth(1)
            .and_then(|s| s.split("\n### ").next())
            .expect("IMPORT.md has a section 5.0");
        let fixtures: Vec<EventFormat> = crate::fixtures::FORMATS
            .iter()
            .map(|(_, s, t)| EventFormat::parse(s, t).unwrap())
            .collect();
        let loaded = text_formats();
        let same = |a: &Variant, b: &Variant| a == b;
        let mut missing = Vec::new();
        for v in Variant::TABLE {
            let resolves = |f: &EventFormat| {
                f.system == v.system
                    && f.name == v.event
                    && Variant::of(f).ok().flatten().is_some_and(|w| same(w, v))
            };
            assert!(
                fixtures.iter().any(resolves),
                "{}:{} ({}): no fixture format of this layout",
                v.system,
                v.event,
                v.kernels
            );
            let text = TEXT.iter().any(|(e, k, _)| {
                *e == v.event && loaded.iter().any(|(lk, f)| lk == k && resolves(f))
            });
            // events that give no record need no reading (their lines count as others)
            let no_record = format!("{:?}", v.kind).ends_with("NoRecord");
            assert!(
                text || no_record,
                "{}:{} ({}): no TEXT row reads this layout",
                v.system,
                v.event,
                v.kernels
            );
            let row = v.doc_row();
            if !section.lines().any(|l| l == row) {
                missing.push(row);
            }
        }
        assert!(
            missing.is_empty(),
            "IMPORT.md §5.0 lacks these rows:\n{}",
            missing.join("\n")
        );
        let rows = section.lines().filter(|l| l.starts_with("| `")).count();
        assert_eq!(rows, Variant::TABLE.len(), "IMPORT.md §5.0 has other rows");
        // and every TEXT row's kernel has the event's format
        for (e, k, _) in TEXT {
            assert!(
                loaded.iter().any(|(lk, f)| lk == k && f.name == *e),
                "TEXT row {e} {k}: no such format"
            );
        }
    }

    #[test]
    fn every_line_flavour_parses() {
        let lines = [
            // trace-cmd report (default), -t, with the flags column (-l), tracefs trace
            "        glmark2-1000  [000]     1.000010: virtio_gpu_cmd_queue: vdev=0 vq=0 name=control type=0x207 flags=0x1 fence_id=1 ctx_id=1 num_free=200 seqno=1",
            "        glmark2-1000  [000]     1.000010123: virtio_gpu_cmd_queue: vdev=0 vq=0 name=control type=0x207 flags=0x1 fence_id=1 ctx_id=1 num_free=200 seqno=1",
            "        glmark2-1000  [000] d..2.     1.000010: virtio_gpu_cmd_queue: vdev=0 vq=0 name=control type=0x207 flags=0x1 fence_id=1 ctx_id=1 num_free=200 seqno=1",
            "     kworker/0:1H-1000    [000] ..... 1.000010: virtio_gpu_cmd_queue: vdev=0 vq=0 name=control type=0x207 flags=0x1 fence_id=1 ctx_id=1 num_free=200 seqno=1",
            // the TGID column (record-tgid, atrace), with and without the flags
            "    RenderThread-1000  ( 20764) [000] d..2.     1.000010: virtio_gpu_cmd_queue: vdev=0 vq=0 name=control type=0x207 flags=0x1 fence_id=1 ctx_id=1 num_free=200 seqno=1",
            "    RenderThread-1000  (-----) [000]     1.000010: virtio_gpu_cmd_queue: vdev=0 vq=0 name=control type=0x207 flags=0x1 fence_id=1 ctx_id=1 num_free=200 seqno=1",
            "  (a) b-c-1000 (20764) [000] ...1 1.000010: virtio_gpu_cmd_queue: vdev=0 vq=0 name=control type=0x207 flags=0x1 fence_id=1 ctx_id=1 num_free=200 seqno=1",
        ];
        let want = [
            ("glmark2", 1_000_010_000),
            ("glmark2", 1_000_010_123),
            ("glmark2", 1_000_010_000),
            ("kworker/0:1H", 1_000_010_000),
            ("RenderThread", 1_000_010_000),
            ("RenderThread", 1_000_010_000),
            ("(a) b-c", 1_000_010_000),
        ];
        for (l, (comm, ts)) in lines.iter().zip(want) {
            match parse_line(l).unwrap() {
                Parsed::Event(e) => {
                    assert_eq!(
                        (e.comm, e.pid, e.cpu, e.ts_ns, e.event),
                        (comm, 1000, 0, ts, "virtio_gpu_cmd_queue"),
                        "{l}"
                    );
                    assert_eq!(value(e.rest, "seqno"), Some("1"));
                    assert_eq!(value(e.rest, "vq"), Some("0"));
                }
                p => panic!("{p:?}"),
            }
        }
        // the latency format: cpu glued to the flags, µs since the buffer's start
        match parse_line(
            "  glmark2-1000    1d..2.   12us+: virtio_gpu_cmd_queue: vdev=0 vq=0 seqno=1",
        )
        .unwrap()
        {
            Parsed::Event(e) => assert_eq!(
                (e.comm, e.pid, e.cpu, e.ts_ns, e.event, e.rest),
                (
                    "glmark2",
                    1000,
                    1,
                    12_000,
                    "virtio_gpu_cmd_queue",
                    "vdev=0 vq=0 seqno=1"
                )
            ),
            p => panic!("{p:?}"),
        }
        assert_eq!(parse_line("cpus=2").unwrap(), Parsed::Skip);
        assert_eq!(parse_line("CPU 1 is empty").unwrap(), Parsed::Skip);
        assert_eq!(parse_line("# tracer: nop").unwrap(), Parsed::Skip);
        assert_eq!(
            parse_line("CPU:1 [LOST 12 EVENTS]").unwrap(),
            Parsed::Lost {
                cpu: 1,
                count: Some(12)
            }
        );
        // The kernel and trace-cmd print no count when the ring buffer stored none.
        assert_eq!(
            parse_line("CPU:2 [LOST EVENTS]").unwrap(),
            Parsed::Lost {
                cpu: 2,
                count: None
            }
        );
        assert_eq!(
            parse_line("CPU:3 [EVENTS DROPPED]").unwrap(),
            Parsed::Lost {
                cpu: 3,
                count: None
            }
        );
        assert_eq!(
            parse_line("CPU:0 [3 EVENTS DROPPED]").unwrap(),
            Parsed::Lost {
                cpu: 0,
                count: Some(3)
            }
        );
        assert!(parse_line("this is not a trace line").is_err());
        assert!(parse_line("  x-1 [000] notatime: ev: a=1").is_err());
    }

    #[test]
    fn keys_with_spaces_and_fence_pairs_are_read() {
        let r = "dev=0000:03:00.0, fence=40:3, ring=gfx_0.0.0, job count:0, hw job count:2, client_id:4";
        assert_eq!(value(r, "fence"), Some("40:3"));
        assert_eq!(value(r, "hw job count"), Some("2"));
        assert_eq!(value(r, "job count"), Some("0"));
        assert_eq!(value(r, "dev"), Some("0000:03:00.0"));
        let d = "fence=40:3 depends on unsignalled fence=41:9";
        assert_eq!(value(d, "depends on unsignalled fence"), Some("41:9"));
        assert_eq!(value(d, "fence"), Some("40:3"));
    }
}
