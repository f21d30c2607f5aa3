//! Hostile inputs and situations (issue 14, issue 10 "devices and sessions"): sizes taken from
//! input numbers, files that shrink while mapped, stdin streams with many headers, thousands of
//! inputs, concatenated streams, several cards and sessions under one base name. Resource use
//! is asserted by counting what the reader holds, not by timing.

mod common;

use std::ops::ControlFlow;
use std::path::PathBuf;

use common::{bytes, pipe};
use grtrace_format::abi::{self, stream_off};
use grtrace_format::builder::Builder;
use grtrace_format::record::StreamHeader;
use grtrace_format::trace::{resolve_inputs, InputSource, Item, RunSummary, Trace};
use grtrace_format::{Endian, Event, FormatError};

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("grt-hostile-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A per-CPU stream of `n` events, seq 1..=n, times `t0 + 10 i`.
fn cpu_stream(cpu: u32, card: u32, session: u64, n: u64, t0: u64) -> Vec<u8> {
    let mut h = StreamHeader::new(cpu, card, "test");
    h.session_id = session;
    let mut b = Builder::new();
    b.on(cpu).pid(1);
    for i in 0..n {
        b.event(Event::COMMIT).job(0, 0, i).at(t0 + 10 * i);
    }
    b.stream(&h)
}

/// (card, cpu, seq) of every record, and the summary.
fn run(sources: Vec<InputSource>) -> (Vec<(u32, u32, u64)>, RunSummary) {
    let mut t = Trace::open(sources).unwrap();
    let mut out = Vec::new();
    let sum = t.for_each_card(|card, it| {
        if let Item::Record(r) = it {
            out.push((card, r.cpu(), r.seq()));
        }
        ControlFlow::Continue(())
    });
    (out, sum)
}

/// Asserts that the error message `e` is one line that says each of `parts`.
fn says(e: &str, parts: &[&str]) {
    for p in parts {
        assert!(e.contains(p), "{e}");
    }
    assert!(!e.contains('\n'), "{e}");
}

/// A stray `run.grtrace.4294967295` beside `run.grtrace.0` used to list four billion missing
/// CPU numbers (a 103 GB allocation): the warning is now one bounded line of ranges.
#[test]
fn a_stray_huge_cpu_number_gives_one_short_warning() {
    let d = tmpdir("huge");
    let s = cpu_stream(0, 0, 1, 3, 0);
    for cpu in [0u64, 2, 5, 6, 9, 4_294_967_295] {
        std::fs::write(d.join(format!("run.grtrace.{cpu}")), &s).unwrap();
    }
    let base = d.join("run").display().to_string();
    let (srcs, warnings) = resolve_inputs(std::slice::from_ref(&base)).unwrap();
    assert_eq!(srcs.len(), 6);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0]
            .to_string()
            .contains("missing CPU file(s) for CPU 1,3-4,7-8,10-4294967294 "),
        "{}",
        warnings[0]
    );
    // Many holes: the list stops after a few ranges and counts the rest.
    let d2 = tmpdir("holes");
    for cpu in (0..2000).step_by(2) {
        std::fs::write(d2.join(format!("run.grtrace.{cpu}")), &s).unwrap();
    }
    let base = d2.join("run").display().to_string();
    let (_, warnings) = resolve_inputs(&[base]).unwrap();
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].to_string().len() < 300, "{}", warnings[0]);
    assert!(
        warnings[0].to_string().contains("and 991 more range(s)"),
        "{}",
        warnings[0]
    );
    let _ = std::fs::remove_dir_all(&d);
    let _ = std::fs::remove_dir_all(&d2);
}

/// A file truncated while the merge reads it (here by the consumer itself, halfway): without
/// protection the next page access kills the process with SIGBUS. The reader ends that input
/// with one error naming the file and the byte where its data ended, after delivering every
/// record before it intact.
#[test]
fn a_file_truncated_while_it_is_read_ends_with_one_line() {
    let d = tmpdir("shrink");
    let n = 200_000u64; // 14 MB: many pages past the cut
    let data = cpu_stream(0, 0, 1, n, 1000);
    let path = d.join("run.grtrace.0");
    std::fs::write(&path, &data).unwrap();
    let cut = 128 + 72 * 1000 + 40; // inside record 1000
    let mut t = Trace::open(vec![InputSource::File(path.clone())]).unwrap();
    let mut seen = 0u64;
    let mut bad = 0u64;
    let sum = t.for_each(|it| {
        if let Item::Record(r) = it {
            seen += 1;
            let ev = r.event().unwrap();
            // Records wholly before the cut are intact (the one across it may read zeros
            // past the cut: the error below names that byte).
            if seen <= 1000 && (r.seq() != seen || ev.seqno() != seen - 1 || ev.code() != 2) {
                bad += 1;
            }
            if seen == 10 {
                let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
                f.set_len(cut as u64).unwrap();
            }
        }
        ControlFlow::Continue(())
    });
    assert_eq!(bad, 0, "records before the cut must be intact");
    assert!(
        (1000..=1001).contains(&seen),
        "{seen}: records before the cut are delivered"
    );
    assert_eq!(sum.errors.len(), 1, "{:?}", sum.errors);
    let e = sum.errors[0].to_string();
    assert!(
        e.starts_with(&format!("{}: byte {cut}: ", path.display())),
        "{e}"
    );
    says(&e, &["shrank while being read"]);
    let _ = std::fs::remove_dir_all(&d);
}

/// The one guarded mapping every reader uses (grtimport's too): a file truncated after it
/// was mapped reads as zeros past its new end instead of killing the process with SIGBUS,
/// and the mapping says where the data ended; released pages read again from the file.
#[test]
fn a_mapped_file_that_shrinks_reads_zeros_and_says_where_it_ended() {
    use grtrace_format::mapped::{MappedFile, Shrunk};
    let d = tmpdir("mapped");
    let path = d.join("f");
    std::fs::write(&path, vec![0xabu8; 64 * 1024]).unwrap();
    let f = std::fs::File::open(&path).unwrap();
    let m = MappedFile::map(&f, &path)
        .unwrap()
        .expect("a guarded mapping");
    assert_eq!(m.shrunk(), None);
    assert_eq!(m.bytes()[60_000], 0xab);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(8192)
        .unwrap();
    assert_eq!(
        m.bytes()[40_000],
        0,
        "a page past the new end reads as zeros"
    );
    assert_eq!(
        m.shrunk(),
        Some(Shrunk {
            end: 8192,
            now: Some(8192)
        })
    );
    assert!(
        m.release(0, 8192),
        "pages inside the mapping are handed back"
    );
    assert_eq!(m.bytes()[100], 0xab, "and read again from the file");
    // A range running past the mapping's end releases nothing (it would reach whatever is
    // mapped after it), nor one whose end overflows.
    let len = m.bytes().len();
    assert!(!m.release(len - 4096, 8192));
    assert!(!m.release(4096, usize::MAX));
    // An empty file is not mapped: its reader reads it instead.
    std::fs::write(&path, b"").unwrap();
    let f = std::fs::File::open(&path).unwrap();
    assert!(MappedFile::map(&f, &path).unwrap().is_none());
    let _ = std::fs::remove_dir_all(&d);
}

/// A stdin stream made of many concatenated streams (one header per record, here 20,000)
/// keeps one queue per CPU: the queues used to be keyed by header and never freed (1M
/// headers cost 213 MB).
#[test]
fn embedded_headers_do_not_add_queues() {
    let mut cat = Vec::new();
    for i in 0..10_000u64 {
        for cpu in 0..2u32 {
            let mut h = StreamHeader::new(cpu, 0, "test");
            h.session_id = 7;
            let mut b = Builder::new();
            b.on(cpu).pid(1).event(Event(0)).at(100 + 10 * i).seq(i + 1);
            cat.extend_from_slice(&b.stream(&h));
        }
    }
    for src in [pipe("-", cat.clone(), 65536), bytes("file", cat)] {
        let (out, sum) = run(vec![src]);
        assert_eq!(out.len(), 20_000);
        assert!(sum.errors.is_empty(), "{:?}", sum.errors);
        assert_eq!(sum.gaps + sum.seq_backwards, 0);
        assert_eq!(sum.peak_queues, 2, "one queue per CPU");
        assert!(sum.peak_buffered <= 2 << 20, "{}", sum.peak_buffered);
    }
}

/// Thousands of per-CPU streams read with read(2) (`grtreport --read` over 10,000 CPU files
/// held 659 MB for 1.4 MB of data): they share one read-ahead budget and start with small
/// buffers, so what they hold stays near the data, not 64 KiB+ per input.
#[test]
fn many_stream_inputs_share_a_bounded_budget() {
    let n_inputs = 3000u32;
    let srcs: Vec<InputSource> = (0..n_inputs)
        .map(|cpu| {
            pipe(
                &format!("run.grtrace.{cpu}"),
                cpu_stream(cpu, 0, 1, 2, 50),
                1 << 20,
            )
        })
        .collect();
    let total = 3000 * (128 + 2 * 72) as u64;
    let (out, sum) = run(srcs);
    assert_eq!(out.len(), 2 * n_inputs as usize);
    assert!(sum.errors.is_empty());
    // Each input's buffer is at most 4 KiB here, and records queue only until emitted.
    assert!(
        sum.peak_buffered <= 4096 * n_inputs as u64 + total,
        "{} bytes held for {total} bytes of data",
        sum.peak_buffered
    );
}

/// `cat run.grtrace.0 run.grtrace.1 > both`: the same bytes read the same from a file as
/// from stdin (they used to be accepted on stdin and refused from a file).
#[test]
fn concatenated_streams_read_the_same_from_a_file_and_stdin() {
    let a = cpu_stream(0, 0, 9, 50, 100);
    let b = cpu_stream(1, 0, 9, 50, 105);
    let mut cat = a.clone();
    cat.extend_from_slice(&b);
    let (apart, _) = run(vec![bytes("a", a), bytes("b", b)]);
    let d = tmpdir("cat");
    let path = d.join("both");
    std::fs::write(&path, &cat).unwrap();
    let (from_file, fsum) = run(vec![InputSource::File(path)]);
    let (from_pipe, psum) = run(vec![pipe("-", cat, 4096)]);
    assert!(fsum.errors.is_empty(), "{:?}", fsum.errors);
    assert!(psum.errors.is_empty(), "{:?}", psum.errors);
    assert_eq!(from_file, from_pipe);
    assert_eq!(from_file, apart);
    assert_eq!(fsum.reordered + psum.reordered, 0);
    let _ = std::fs::remove_dir_all(&d);
}

/// `grtrace -d card0 -d card1 -o two` writes `two.card0.grtrace.<cpu>` and
/// `two.card1.grtrace.<cpu>`: the base name finds both cards, every record comes with its
/// own card, and sequences are checked per card (both cards number CPU 0 from 1).
#[test]
fn every_card_of_a_base_name_is_found_and_checked_apart() {
    let d = tmpdir("cards");
    for card in [0u32, 1] {
        for cpu in [0u32, 1] {
            let s = cpu_stream(cpu, card, 100 + card as u64, 500, 7 + card as u64);
            std::fs::write(d.join(format!("two.card{card}.grtrace.{cpu}")), s).unwrap();
        }
    }
    let base = d.join("two").display().to_string();
    let (srcs, warnings) = resolve_inputs(&[base]).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(srcs.len(), 4);
    let t = Trace::open(
        resolve_inputs(&[d.join("two").display().to_string()])
            .unwrap()
            .0,
    )
    .unwrap();
    assert!(t.check_sessions().is_ok());
    assert_eq!(t.cards(), vec![0, 1]);
    let (out, sum) = run(srcs);
    assert_eq!(out.len(), 2000);
    assert_eq!(sum.gaps, 0);
    assert_eq!(sum.seq_backwards, 0);
    assert!(sum.warnings.is_empty(), "{:?}", sum.warnings);
    for card in [0u32, 1] {
        assert_eq!(out.iter().filter(|o| o.0 == card).count(), 1000);
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A 2-CPU recording written over an older 4-CPU one under the same base name leaves
/// `run.grtrace.2` and `.3` of another session: the merge is refused, naming both files.
#[test]
fn files_of_two_sessions_of_one_card_are_refused() {
    let d = tmpdir("sessions");
    for cpu in 0..4u32 {
        let session = if cpu < 2 { 0x22 } else { 0x11 };
        let s = cpu_stream(cpu, 0, session, 5, 0);
        std::fs::write(d.join(format!("run.grtrace.{cpu}")), s).unwrap();
    }
    let (srcs, _) = resolve_inputs(&[d.join("run").display().to_string()]).unwrap();
    let t = Trace::open(srcs).unwrap();
    let e = t.check_sessions().unwrap_err().to_string();
    says(
        &e,
        &[
            "run.grtrace.2: session 0x11 of card0 differs from",
            "run.grtrace.0 (session 0x22)",
        ],
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// Version 0 was called "future".
#[test]
fn version_zero_is_invalid_not_future() {
    let mut s = cpu_stream(0, 0, 1, 1, 0);
    Endian::Little.put_u16(&mut s, stream_off::VERSION_MAJOR, 0);
    let e = StreamHeader::parse(&s).unwrap_err();
    assert!(matches!(e, FormatError::FutureVersion { major: 0, .. }));
    let m = e.to_string();
    assert!(m.starts_with("byte 10: invalid format version 0.0"), "{m}");
    assert!(!m.contains("future"), "{m}");
    assert_eq!(abi::VERSION_MAJOR, 1);
}

/// Records at time u64::MAX are ordinary records: delivered, in order, not taken for "none".
#[test]
fn records_at_the_last_time_are_delivered() {
    let mut h = StreamHeader::new(0, 0, "t");
    h.session_id = 3;
    let mut b = Builder::new();
    b.pid(1);
    for t in [5u64, u64::MAX - 1, u64::MAX, u64::MAX] {
        b.event(Event(0)).at(t); // seq 1, 2, 3, 4
    }
    let other = cpu_stream(1, 0, 3, 3, 10);
    let data = b.stream(&h);
    let (out, sum) = run(vec![bytes("a", data.clone()), bytes("b", other.clone())]);
    assert_eq!(out.len(), 7);
    assert_eq!(&out[4..], &[(0, 0, 2), (0, 0, 3), (0, 0, 4)]);
    assert_eq!(sum.gaps + sum.reordered, 0);
    let (piped, _) = run(vec![pipe("a", data, 100), pipe("b", other, 100)]);
    assert_eq!(piped, out);
}

/// A stdin stream whose headers name 100 different cards: the card/session table stays
/// bounded, and the reader says that it merged some (instead of labelling silently).
#[test]
fn too_many_card_session_pairs_are_bounded_and_said() {
    let mut cat = Vec::new();
    for card in 0..100u32 {
        cat.extend_from_slice(&cpu_stream(0, card, 1, 1, 10 * card as u64));
    }
    let (out, sum) = run(vec![pipe("-", cat, 4096)]);
    assert_eq!(out.len(), 100);
    assert_eq!(out[10].0, 10, "cards within the table are kept");
    assert!(
        sum.warnings
            .iter()
            .any(|w| w.to_string().contains("36 stream header(s) past 64")),
        "{:?}",
        sum.warnings
    );
}

/// A per-CPU stream of `n` events of process `pid` under a header of `card`, `session` and
/// `driver`, seq 1..=n, times `t0 + 10 i`.
fn driver_stream(card: u32, session: u64, driver: &str, pid: u32, n: u64, t0: u64) -> Vec<u8> {
    let mut h = StreamHeader::new(0, card, driver);
    h.session_id = session;
    let mut b = Builder::new();
    b.on(0).pid(pid);
    for i in 0..n {
        b.event(Event::COMMIT).job(0, 0, i).at(t0 + 10 * i);
    }
    b.stream(&h)
}

/// `cat a.card0.grtrace.0 a.card0.grtrace.1 b.card1.grtrace.0 c.card0.grtrace.0 | reader`:
/// the header of card1 and the one of card0's second recording start a (card, session) no
/// input was opened with. From a file, a pipe read 4 KiB at a time, or memory alike:
/// * card1's is handed over once, as `Item::Stream` with its card, offset and driver,
///   before any record under it (card1's records interleave in time with card0's, so they
///   are not simply last);
/// * card0's second recording ends the input with one error naming the input and the byte,
///   everything before it delivered, nothing after; with `merge_sessions` it is handed over
///   too, saying which session came before, and its records follow;
/// * with `single_card`, card1's header ends the input the same way (a dump holds one card);
/// * the header of card0's CPU 1 (same card, same session) is not handed over, nor is a
///   card opened as an input of its own.
#[test]
fn a_card_or_session_that_starts_inside_an_input_is_handed_over_before_its_records() {
    let a0 = driver_stream(0, 7, "virtio_gpu", 1, 400, 1000);
    let a1 = cpu_stream(1, 0, 7, 400, 1005);
    let b = driver_stream(1, 9, "amdgpu", 2, 400, 1500);
    let c = driver_stream(0, 8, "virtio_gpu", 3, 50, 9000);
    let at_b = (a0.len() + a1.len()) as u64;
    let at_c = at_b + b.len() as u64;
    let cat: Vec<u8> = [&a0[..], &a1, &b, &c].concat();
    let d = tmpdir("announce");
    let path = d.join("cat");
    std::fs::write(&path, &cat).unwrap();
    let name = path.display().to_string();
    let read = |src: InputSource, set: &dyn Fn(&mut Trace)| {
        let mut t = Trace::open(vec![src]).unwrap();
        set(&mut t);
        let mut out = Vec::new();
        let sum = t.for_each_card(|card, it| {
            out.push(match it {
                Item::Record(r) => format!("rec card{card} pid{}", r.pid()),
                Item::Gap(g) => format!("gap {g:?}"),
                Item::Stream(s) => {
                    assert_eq!(card, s.header.card);
                    format!(
                        "stream card{} {} at {} after {:?}: {}",
                        s.header.card,
                        s.header.driver,
                        s.offset,
                        s.earlier_session,
                        s.session_conflict()
                            .map_or(String::new(), |e| e.to_string())
                    )
                }
            });
            ControlFlow::Continue(())
        });
        assert_eq!(sum.gaps + sum.seq_backwards, 0);
        let errors: Vec<String> = sum.errors.iter().map(|e| e.to_string()).collect();
        (out, errors)
    };
    let conflict = format!(
        "{name}: byte {at_c}: session 0x8 of card0 starts here after a stream of card0 of session 0x7: streams of two recordings, not merged (--force merges them)"
    );
    let count = |out: &[String], what: &str| out.iter().filter(|l| l.ends_with(what)).count();
    let streams = |out: &[String]| -> Vec<String> {
        out.iter()
            .filter(|l| l.starts_with("stream"))
            .cloned()
            .collect()
    };
    let pos = |out: &[String], l: &str| out.iter().position(|x| x.starts_with(l)).unwrap();
    let srcs = || {
        [
            InputSource::File(path.clone()),
            bytes(&name, cat.clone()),
            pipe(&name, cat.clone(), 4096),
        ]
    };

    // By default: card1 is handed over, card0's second recording ends the input.
    let (first, _) = read(InputSource::File(path.clone()), &|_| {});
    for src in srcs() {
        let (out, errors) = read(src, &|_| {});
        assert_eq!(errors, std::slice::from_ref(&conflict));
        assert_eq!(
            streams(&out),
            [format!("stream card1 amdgpu at {at_b} after None: ")]
        );
        assert!(pos(&out, "stream card1") < pos(&out, "rec card1 pid2"));
        let last_pid1 = out.iter().rposition(|x| x.ends_with("pid1")).unwrap();
        assert!(pos(&out, "rec card1 pid2") < last_pid1, "card1 interleaves");
        assert_eq!(count(&out, "pid1"), 800);
        assert_eq!(count(&out, "pid2"), 400);
        assert_eq!(
            count(&out, "pid3"),
            0,
            "nothing after the other recording's header"
        );
        assert_eq!(out, first);
    }

    // Merged on request: handed over with the session before it, its records follow.
    for src in srcs() {
        let (out, errors) = read(src, &|t| t.merge_sessions(true));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            streams(&out),
            [
                format!("stream card1 amdgpu at {at_b} after None: "),
                format!("stream card0 virtio_gpu at {at_c} after Some(7): {conflict}"),
            ]
        );
        assert!(pos(&out, "stream card0") < pos(&out, "rec card0 pid3"));
        assert_eq!(count(&out, "pid3"), 50);
    }

    // One card only: card1's header ends the input.
    for src in srcs() {
        let (out, errors) = read(src, &|t| t.single_card(true));
        assert_eq!(
            errors,
            [format!("{name}: byte {at_b}: a stream of card1 starts here, and this run takes card0 only (a merged stream holds one card): read each card's streams apart")]
        );
        assert!(streams(&out).is_empty());
        assert_eq!((count(&out, "pid1"), out.len()), (800, 800));
    }

    // Card1 given as an input of its own is known at open: nothing to hand over for it.
    let mut t = Trace::open(vec![bytes("b", b.clone()), bytes("cat", cat)]).unwrap();
    t.merge_sessions(true);
    let mut n = Vec::new();
    t.for_each(|it| {
        if let Item::Stream(s) = it {
            n.push(s.header.card);
        }
        ControlFlow::Continue(())
    });
    assert_eq!(n, [0], "only card0's second session");
    let _ = std::fs::remove_dir_all(&d);
}
