//! A stock-kernel capture through grtimport: grtparse counts its times from the capture's
//! first event (trace-cmd times are seconds since boot), its `-w` window is relative to that,
//! and an inferred START says so.

mod common;

use clap::Parser;
use common::*;
use grtrace_ftrace::capture::{i915_request, Capture, TextStyle};

#[test]
fn an_imported_capture_starts_at_its_first_event_and_shows_inferred_starts() {
    let d = temp_dir("imported");
    let mut c = Capture::new("6.12", 1);
    c.without(&["i915_request_in", "i915_request_out", "i915_request_submit"]);
    let t0 = 1_000_000_000_000u64;
    for i in 0..10u64 {
        let req = i915_request(12, i + 1);
        // Added and retired 0.8 ms later, both by the app on CPU 0.
        let t = t0 + i * 1_000_000;
        c.ev(0, t, "gfx", 1234, "i915_request_add", &req, &[]);
        c.ev(
            0,
            t + 800_000,
            "gfx",
            1234,
            "i915_request_retire",
            &req,
            &[],
        );
    }
    let input = d.join("trace.txt");
    std::fs::write(&input, c.text(TextStyle::Report)).unwrap();
    let base = d.join("run");
    let args = grtimport::Args::parse_from([
        "grtimport",
        "-q",
        input.to_str().unwrap(),
        "-o",
        base.to_str().unwrap(),
    ]);
    grtimport::run(&args).unwrap();
    let o = grtparse(&d, &["run", "-q"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let times: Vec<&str> = out
        .lines()
        .map(|l| l.split_whitespace().nth(3).unwrap())
        .collect();
    assert_eq!(times[0], "0.000000000", "{out}");
    assert_eq!(*times.last().unwrap(), "0.009800000", "{out}");
    let start = out.lines().find(|l| l.contains(" START ")).unwrap();
    assert!(start.contains("flags=inferred"), "{start}");
    // The 4th and 5th requests (3 ms to 4.9 ms in).
    let o = grtparse(&d, &["run", "-q", "-w", "0.003:0.0049"]);
    let ends = text(&o.stdout)
        .lines()
        .filter(|l| l.contains(" END "))
        .count();
    assert_eq!(ends, 2, "{}", text(&o.stdout));
}
