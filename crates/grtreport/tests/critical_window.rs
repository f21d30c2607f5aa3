//! The critical path in bounded memory: jobs more than the window behind their ring's newest
//! END are dropped. A path that never needed a dropped job is the path an unbounded window
//! gives; one that did is cut, says so, and still covers its frame; the jobs kept at once
//! stay far below the jobs of the trace.

mod common;

use common::*;
use grtrace_sim::scenarios;
use grtreport::critical::{CritReport, CriticalPath, FramePath, Scope, Via, WINDOW_NS};

/// Every frame's path with a window of `window` ns, the report and the peak of jobs kept.
fn paths(data: &[u8], scope: Scope, window: u64) -> (Vec<FramePath>, CritReport, usize) {
    let path = CriticalPath::new(scope).with_window(window);
    let (e, all) = frame_paths(data.to_vec(), path);
    let cp = e.critical.as_ref().unwrap();
    (all, cp.report().clone(), cp.peak_kept())
}

#[test]
fn a_window_shorter_than_the_frames_cuts_their_paths_and_says_so() {
    let sc = scenarios::by_name("frames", 2, 3000).unwrap();
    let data = scenario_stream(&sc.records);
    let scope = Scope::Frames("frame".into());
    let (full, full_rep, full_peak) = paths(&data, scope.clone(), u64::MAX);
    // The default window is far longer than these frames: nothing is cut.
    let (dflt, dflt_rep, _) = paths(&data, scope.clone(), WINDOW_NS);
    assert_eq!(dflt, full);
    assert_eq!((dflt_rep.cut_frames, full_rep.cut_frames), (0, 0));
    assert!(full.iter().all(|p| !p.cut));

    // 200 µs: shorter than most frames of the scenario.
    let (cut, rep, peak) = paths(&data, scope, 200_000);
    assert_eq!(cut.len(), full.len());
    let n_cut = cut.iter().filter(|p| p.cut).count();
    println!(
        "{n_cut} of {} paths cut, kept {peak} of {full_peak} jobs at once",
        cut.len()
    );
    assert!(n_cut > 0, "no path was cut");
    assert_eq!(rep.cut_frames, n_cut as u64);
    assert!(peak < full_peak, "kept {peak} of {full_peak}");
    for (c, f) in cut.iter().zip(&full) {
        assert_covers(c);
        assert_eq!((c.start, c.end), (f.start, f.end));
        if c.cut {
            // The cut is the first link: the part of the frame before the jobs kept.
            assert_eq!(c.links[0].via, Via::Cut, "{c:#?}");
            assert!(c.links[0].job.is_none());
            assert!(c.links[1..].iter().all(|l| l.via != Via::Cut));
        } else {
            assert_eq!(c, f, "a path that needed no dropped job is unchanged");
        }
    }
    let mut text = Vec::new();
    grtreport::critical::write_text(&mut text, &rep, grtreport::job::Origin::at(0)).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains(&format!("warning: {n_cut} path(s)")) && text.contains("0.0002 s"),
        "{text}"
    );
    let j = grtreport::critical::to_json(&rep);
    assert_eq!(j["cut_frames"], n_cut as u64);
    assert_eq!(j["window_ns"], 200_000);
}

#[test]
fn a_long_trace_without_markers_keeps_only_the_window() {
    // One frame over the whole trace: every job would be kept without the window.
    let cfg = common::one_cpu(200_000);
    let data = grtrace_format::synth::streams_of(&cfg, 0, 1)
        .unwrap()
        .remove(0);
    let scope = Scope::Frames(String::new());
    let (full, _, full_peak) = paths(&data, scope.clone(), u64::MAX);
    let (win, rep, peak) = paths(&data, scope, 100_000_000);
    println!(
        "kept {peak} of {full_peak} jobs at once, cut {}",
        win[0].cut
    );
    assert!(full_peak > 20_000, "{full_peak} jobs");
    assert!(peak * 5 < full_peak, "kept {peak} of {full_peak} at once");
    assert_eq!(win.len(), 1);
    assert_covers(&win[0]);
    // The synthetic host is late at the end: the last link, a host gap and the first
    // links agree, whether or not the path was cut.
    assert_eq!(win[0].links.last(), full[0].links.last());
    assert_eq!(rep.cut_frames, win[0].cut as u64);
}
