//! Property tests of the readers (the fuzz targets of issue 28): text lines and trace.dat
//! files damaged at random are read to an error or to the end, never to a panic; sizes the
//! damage claims are refused before anything is allocated by them (the readers' bounds:
//! MAX_CPUS, the section and chunk limits), so no case here needs more than the input.

mod common;

use common::{Collect, Trace};
use grtrace_ftrace::import;
use grtrace_ftrace::map::Mapper;
use grtrace_ftrace::text::{unwrap_container, TextImport};
use grtrace_ftrace::tracedat::{Codec, TraceDat};
use proptest::prelude::*;

/// Pieces real lines are made of, glued with random ones.
const PIECES: &[&str] = &[
    " app-100 ",
    "(  100) ",
    "(-----) ",
    "[000] ",
    "[4294967295] ",
    "d..2. ",
    "1.000100: ",
    "12us+: ",
    "i915_request_add: ",
    "amdgpu_cs_ioctl: ",
    "dma_fence_signaled: ",
    "virtio_gpu_cmd_queue: ",
    "drm_sched_job_run: ",
    "msm_gpu_submit_retired: ",
    "dev=0, ",
    "ring=2, ",
    "engine=0:0, ",
    "ctx=7, ",
    "seqno=1",
    "fence=40:3, ",
    "timeline=gfx, ",
    "ring_name=ffff94d01c207bf0, ",
    "CPU:1 [LOST 3 EVENTS]",
    "# tracer: nop",
    "<!DOCTYPE html><script class=\"trace-data\">",
    "{\"systemTraceEvents\": \"",
    "\\u00",
    "\n",
];

fn line() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            prop::sample::select(PIECES).prop_map(str::to_string),
            "[ -~]{0,12}",
        ],
        0..24,
    )
    .prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn text_of_any_shape_is_read_or_refused(lines in prop::collection::vec(line(), 0..12)) {
        let text = lines.join("\n");
        let bytes = match unwrap_container(text.as_bytes()) {
            Some((_, t)) => {
                prop_assert!(t.len() <= text.len() + text.matches("</script>").count() + 2);
                t
            }
            None => text.into_bytes(),
        };
        let mut ti = TextImport::for_text(&bytes);
        let mut c = Collect::default();
        let _ = ti.run(&bytes[..], &mut c);
    }
}

/// A small valid trace.dat of each version and compression (built once).
fn files() -> &'static [Vec<u8>] {
    static FILES: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    FILES.get_or_init(build_files)
}

fn build_files() -> Vec<Vec<u8>> {
    let mut t = Trace::new("6.12");
    for i in 0..40u64 {
        let v = [
            ("dev", 0),
            ("vq", 0),
            ("type", 0x207),
            ("flags", 1),
            ("fence_id", i),
            ("ctx_id", 2),
            ("num_free", 200),
            ("seqno", i),
        ];
        t.ev(
            (i % 2) as u32,
            1000 + i * 100,
            100,
            "virtio_gpu_cmd_queue",
            &v,
            &[("name", "control")],
        );
        t.ev(
            ((i + 1) % 2) as u32,
            1050 + i * 100,
            0,
            "virtio_gpu_cmd_response",
            &v,
            &[("name", "control")],
        );
    }
    vec![
        t.dat(6, None),
        t.dat(7, None),
        t.dat(7, Some(Codec::Zstd)),
        t.dat(7, Some(Codec::Zlib)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn damaged_trace_dat_is_read_or_refused(
        which in 0usize..4,
        hits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let mut b = files()[which].clone();
        for (at, v) in hits {
            let i = at.index(b.len());
            b[i] = v;
        }
        if truncate {
            b.truncate(cut.index(b.len()));
        }
        if let Ok(dat) = TraceDat::parse(&b) {
            let mut m = Mapper::new(dat.endian, &dat.formats);
            let mut c = Collect::default();
            let _ = import::run(dat.streams(), &mut m, &mut c);
        }
    }
}
