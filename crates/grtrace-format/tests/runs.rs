//! `Trace::for_each_run` and the native event views: the same items as `for_each_card`, in
//! the same order, with runs of native events that outlive the call (a consumer may read
//! them on another thread), also after the reader gave their pages back to the kernel.

mod common;

use std::io::{Seek, SeekFrom, Write};
use std::ops::ControlFlow;
use std::path::PathBuf;

use common::{bytes, pipe};
use grtrace_format::abi::{self, rec_off, stream_off};
use grtrace_format::synth::{streams_of, SynthConfig, SESSION};
use grtrace_format::trace::{InputSource, Item, RawItem, RunItem, Trace};
use grtrace_format::{
    Endian, NativeEvent, NativeEvents, RecordType, RecordView, Records, StreamHeader,
};

/// The per-CPU streams of a synthetic run, the card in their headers set to `card`.
fn streams(cfg: &SynthConfig, card: u32) -> Vec<Vec<u8>> {
    streams_of(cfg, card, SESSION).unwrap()
}

/// The stream of a synthetic run of one CPU and `records` records (card 0).
fn one_cpu_stream(records: u64) -> Vec<u8> {
    let cfg = SynthConfig {
        records,
        cpus: 1,
        ..SynthConfig::default()
    };
    streams(&cfg, 0).remove(0)
}

/// [`one_cpu_stream`] written as `BASE.grtrace.0` in the directory `grtrace-TAG-PID` made
/// under the temporary directory: (the directory, the file, its bytes).
fn one_cpu_file(tag: &str, base: &str, records: u64) -> (PathBuf, PathBuf, Vec<u8>) {
    let dir = std::env::temp_dir().join(format!("grtrace-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{base}.grtrace.0"));
    let data = one_cpu_stream(records);
    std::fs::write(&path, &data).unwrap();
    (dir, path, data)
}

/// Notes of every type, a sequence gap and a kernel NOTE_LOST (card 0, two CPUs, mapped);
/// a second card in the other byte order (mapped); a third card read as a pipe.
fn mixed_sources() -> Vec<InputSource> {
    let base = SynthConfig {
        records: 3000,
        cpus: 2,
        seed: 7,
        ..SynthConfig::default()
    };
    let mut v = Vec::new();
    let notes = SynthConfig {
        every_type: true,
        gap: Some((1, 200, 5)),
        kernel_lost: vec![(0, 3)],
        ..base.clone()
    };
    for (i, s) in streams(&notes, 0).into_iter().enumerate() {
        v.push(bytes(&format!("card0.{i}"), s));
    }
    let swapped = SynthConfig {
        endian: Endian::NATIVE.opposite(),
        seed: 8,
        ..base.clone()
    };
    for (i, s) in streams(&swapped, 1).into_iter().enumerate() {
        v.push(bytes(&format!("card1.{i}"), s));
    }
    let piped = SynthConfig {
        cpus: 1,
        seed: 9,
        ..base
    };
    v.push(pipe("card2", streams(&piped, 2).remove(0), 1000));
    v
}

/// [`common::describe`] after the card the item came from.
fn describe(card: u32, it: &Item<'_>) -> String {
    format!("{card} {}", common::describe(it))
}

/// What `for_each_run` delivered, runs kept as slices until after the call.
enum Got<'m> {
    Run(u32, &'m [u8], u64),
    Item(String),
}

#[test]
fn runs_give_every_item_in_order_and_outlive_the_call() {
    let mut want = Vec::new();
    let sum_items = Trace::open(mixed_sources())
        .unwrap()
        .for_each_card(|card, it| {
            want.push(describe(card, &it));
            ControlFlow::Continue(())
        });
    let mut trace = Trace::open(mixed_sources()).unwrap();
    let mut got = Vec::new();
    let sum = trace.for_each_run(|card, it| {
        got.push(match it {
            RunItem::Events { bytes, count } => Got::Run(card, bytes, count),
            RunItem::Item(it) => Got::Item(describe(card, &it)),
        });
        ControlFlow::Continue(())
    });
    // The call is over: the runs are read now.
    let (mut seen, mut runs, mut longest) = (Vec::new(), 0, 0);
    for g in got {
        match g {
            Got::Run(card, bytes, count) => {
                let evs: Vec<NativeEvent<'_>> = NativeEvents::new(bytes).collect();
                assert_eq!(evs.len() as u64, count);
                assert_eq!(
                    evs.iter().map(|e| e.bytes().len()).sum::<usize>(),
                    bytes.len()
                );
                runs += 1;
                longest = longest.max(count);
                for e in evs {
                    seen.push(describe(card, &Item::Record(e.record())));
                }
            }
            Got::Item(s) => seen.push(s),
        }
    }
    assert_eq!(seen.len(), want.len());
    for (i, (a, b)) in seen.iter().zip(&want).enumerate() {
        assert_eq!(a, b, "item {i}");
    }
    assert_eq!(sum.records, sum_items.records);
    assert_eq!(
        (sum.gaps, sum.gap_records),
        (sum_items.gaps, sum_items.gap_records)
    );
    assert_eq!(sum.gaps, 1);
    assert!(sum.errors.is_empty(), "{:?}", sum.errors);
    // Card 0's native events come in runs; card 1's swapped ones and card 2's piped ones
    // come one by one as items.
    assert!(runs > 10 && longest > 2, "{runs} runs, longest {longest}");
    assert!(want.iter().any(|w| w.starts_with("1 ")) && want.iter().any(|w| w.starts_with("2 ")));
}

#[test]
fn a_trace_can_be_merged_on_another_thread() {
    fn send<T: Send>(_: &T) {}
    let mut trace = Trace::open(mixed_sources()).unwrap();
    send(&trace);
    let n = std::thread::scope(|s| {
        s.spawn(|| {
            let mut n = 0u64;
            trace.for_each_run(|_, it| {
                n += match it {
                    RunItem::Events { count, .. } => count,
                    RunItem::Item(_) => 1,
                };
                ControlFlow::Continue(())
            });
            n
        })
        .join()
        .unwrap()
    });
    assert!(n > 9000, "{n}");
}

/// A mapped file longer than what the reader keeps resident (it releases passed pages
/// every 4 MiB, 4 MiB behind its position: at most 8 MiB resident): runs read after the
/// call hold the file's bytes, the released pages faulting back in.
#[test]
fn runs_of_a_mapped_file_read_after_its_pages_were_released() {
    let (dir, path, data) = one_cpu_file("runs", "big", 250_000);
    assert!(data.len() > 16 << 20, "{} bytes", data.len());
    let mut trace = Trace::open(vec![InputSource::File(path.clone())]).unwrap();
    let mut runs: Vec<&[u8]> = Vec::new();
    let mut notes = 0;
    trace.for_each_run(|_, it| {
        match it {
            RunItem::Events { bytes, .. } => runs.push(bytes),
            RunItem::Item(_) => notes += 1,
        }
        ControlFlow::Continue(())
    });
    // The pages behind the reader were given back: the mapping's resident set is within
    // the 8 MiB kept (and the kernel's fault-around), not the whole 18 MB file.
    let rss = mapped_rss_kib(&path);
    assert!(rss > 0 && rss <= 9 << 10, "{rss} KiB of the file resident");
    let h = StreamHeader::parse(&data).unwrap();
    let events: Vec<&[u8]> = Records::new(&data, &h)
        .map(|r| r.unwrap())
        .filter(|r| r.is_event())
        .map(|r| r.bytes())
        .collect();
    let mut n = 0;
    for run in &runs {
        assert!(run.len() <= (64 << 10) + abi::rsize::EVENT, "{}", run.len());
        for ev in NativeEvents::new(run) {
            assert_eq!(ev.bytes(), events[n], "event {n}");
            n += 1;
        }
    }
    assert_eq!(n, events.len());
    assert!(notes > 0);
    drop(trace);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The resident KiB of this process's mapping of `path` (`Rss` in /proc/self/smaps).
fn mapped_rss_kib(path: &std::path::Path) -> u64 {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let name = path.display().to_string();
    let mut lines = smaps.lines();
    let mut rss = 0;
    while let Some(l) = lines.next() {
        if l.ends_with(&name) {
            let r = lines.find(|l| l.starts_with("Rss:")).unwrap();
            rss += r.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap();
        }
    }
    rss
}

/// A run read after its file shrank (another process truncated it after the reader had
/// checked the run) ends where the bytes stop being events, and the trace names the file
/// and the byte where its data now ends; one rewritten in place (same length), the byte
/// where it stopped holding events: nothing is silently cut short.
#[test]
fn a_run_read_after_its_file_shrank_is_an_error_naming_file_and_byte() {
    let (dir, path, data) = one_cpu_file("shrunk", "cut", 20_000);
    let mut trace = Trace::open(vec![InputSource::File(path.clone())]).unwrap();
    let mut runs: Vec<&[u8]> = Vec::new();
    let sum = trace.for_each_run(|_, it| {
        if let RunItem::Events { bytes, .. } = it {
            runs.push(bytes);
        }
        ControlFlow::Continue(())
    });
    assert!(sum.errors.is_empty(), "{:?}", sum.errors);
    let last = *runs.last().unwrap();
    let whole = NativeEvents::new(last).count();
    let mut events = NativeEvents::new(last);
    assert_eq!(events.by_ref().count(), whole);
    assert!(events.rest().is_empty());
    // Cut the file in the middle of the last run (page-aligned, so that the pages after
    // the cut fault): the events before the cut still read.
    let first_at = data
        .windows(runs[0].len())
        .position(|w| w == runs[0])
        .unwrap();
    let last_at = first_at + (last.as_ptr() as usize - runs[0].as_ptr() as usize);
    let file_cut = ((last_at + last.len() / 2) & !4095) as u64;
    assert!(
        file_cut > last_at as u64,
        "the last run is shorter than a page"
    );
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(file_cut)
        .unwrap();
    let mut events = NativeEvents::new(last);
    let read = events.by_ref().count();
    assert!(read < whole, "{read} of {whole} events after the cut");
    let at = events.rest().as_ptr();
    drop(runs);
    let err = trace.run_changed(at).unwrap().to_string();
    assert!(err.contains("cut.grtrace.0"), "{err}");
    assert!(err.contains("shrank while being read"), "{err}");
    assert!(err.contains(&format!("{file_cut} now")), "{err}");
    // An address outside every mapped input is no run of this trace.
    assert!(trace.run_changed(data.as_ptr()).is_none());
    drop(trace);
    // The same length, other bytes: after the reader checked the runs, an event of the
    // first run is rewritten in place as a note.
    std::fs::write(&path, &data).unwrap();
    let mut trace = Trace::open(vec![InputSource::File(path.clone())]).unwrap();
    let mut runs: Vec<&[u8]> = Vec::new();
    trace.for_each_run(|_, it| {
        if let RunItem::Events { bytes, .. } = it {
            runs.push(bytes);
        }
        ControlFlow::Continue(())
    });
    let note = first_at + 2 * abi::rsize::EVENT;
    let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.seek(SeekFrom::Start((note + rec_off::TYPE) as u64))
        .unwrap();
    f.write_all(&RecordType::NOTE_MSG.0.to_ne_bytes()).unwrap();
    drop(f);
    let mut events = NativeEvents::new(runs[0]);
    assert_eq!(events.by_ref().count(), 2);
    let at = events.rest().as_ptr();
    drop(runs);
    let err = trace.run_changed(at).unwrap().to_string();
    assert_eq!(
        err,
        format!("{}: byte {note}: the file changed while being read: records from here on were not read", path.display())
    );
    drop(trace);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A record deep inside a run of one mapped file claims a size no event has (0, less than a
/// header, less than an event, not a multiple of 8, past the end of the file): the
/// run ends before it, and `for_each_run`, `for_each_card` and `for_each_raw` all deliver
/// the events before it and one error naming the file and that record's byte, with the
/// sequence checked and not (`SEQ_CHECKED` streams).
#[test]
fn a_damaged_size_inside_a_run_ends_it_with_an_error_at_that_byte() {
    let data = one_cpu_stream(3000);
    let h = StreamHeader::parse(&data).unwrap();
    let recs: Vec<RecordView<'_>> = Records::new(&data, &h).map(|r| r.unwrap()).collect();
    // An event with events on both sides, 100 records before the end (so that the largest
    // size a record can claim reaches past the end of the file).
    let i = (recs.len() - 100..recs.len() - 1)
        .find(|&i| recs[i - 1].is_event() && recs[i].is_event() && recs[i + 1].is_event())
        .unwrap();
    let at = h.header_size as usize + recs[..i].iter().map(|r| r.size()).sum::<usize>();
    let before = recs[..i].iter().filter(|r| r.is_event()).count() as u64;
    let e = Endian::NATIVE;
    for checked in [false, true] {
        for size in [0u16, 12, 64, 76, 65528] {
            let mut d = data.clone();
            e.put_u16(&mut d, at + rec_off::SIZE, size);
            if checked {
                let flags = e.u32(&d, stream_off::FLAGS) | abi::STREAM_SEQ_CHECKED;
                e.put_u32(&mut d, stream_off::FLAGS, flags);
            }
            let case = format!("size {size}, seq checked {checked}");
            let name = "damaged.grtrace.0";
            let open = || Trace::open(vec![bytes(name, d.clone())]).unwrap();
            let is_event = |it: &Item<'_>| matches!(it, Item::Record(r) if r.is_event());
            let (mut by_run, mut by_card, mut by_raw) = (0, 0, 0);
            let mut t = open();
            let s_run = t.for_each_run(|_, it| {
                by_run += match it {
                    RunItem::Events { count, .. } => count,
                    RunItem::Item(it) => is_event(&it) as u64,
                };
                ControlFlow::Continue(())
            });
            let s_card = open().for_each_card(|_, it| {
                by_card += is_event(&it) as u64;
                ControlFlow::Continue(())
            });
            let s_raw = open().for_each_raw(|it| {
                by_raw += match it {
                    RawItem::Events { count, .. } => count,
                    RawItem::Item(it) => is_event(&it) as u64,
                };
                ControlFlow::Continue(())
            });
            assert_eq!(
                (by_run, by_card, by_raw),
                (before, before, before),
                "{case}"
            );
            for sum in [&s_run, &s_card, &s_raw] {
                assert_eq!(sum.errors.len(), 1, "{case}: {:?}", sum.errors);
                let err = &sum.errors[0];
                assert_eq!(
                    (err.file.as_str(), err.offset()),
                    (name, Some(at as u64)),
                    "{case}"
                );
            }
        }
    }
}

/// Every field of a native view is the field the run-time view reads, in both byte orders
/// (a swapped event converted by `event_in`); only a native event record has a native view.
#[test]
fn native_event_views_read_what_event_views_read() {
    for endian in [Endian::Little, Endian::Big] {
        let cfg = SynthConfig {
            records: 400,
            cpus: 1,
            every_type: true,
            endian,
            ..SynthConfig::default()
        };
        let data = streams(&cfg, 0).remove(0);
        let h = StreamHeader::parse(&data).unwrap();
        let (mut events, mut notes) = (0, 0);
        for r in Records::new(&data, &h) {
            let r = r.unwrap();
            let mut buf = [0; abi::rsize::EVENT];
            let Some(ev) = r.event() else {
                assert!(r.native_event().is_none() && r.event_in(&mut buf).is_none());
                notes += 1;
                continue;
            };
            events += 1;
            assert_eq!(r.native_event().is_some(), endian == Endian::NATIVE);
            let n = r.event_in(&mut buf).unwrap();
            assert_eq!(n.fields(), ev.fields());
            assert_eq!(
                (n.code(), n.event(), n.ctx(), n.ring(), n.seqno()),
                (ev.code(), ev.event(), ev.ctx(), ev.ring(), ev.seqno())
            );
            assert_eq!(
                (n.arg0(), n.arg1(), n.arg2(), n.arg3()),
                (ev.arg0(), ev.arg1(), ev.arg2(), ev.arg3())
            );
            assert_eq!(
                (n.flags(), n.cpu(), n.pid(), n.time_ns(), n.seq()),
                (r.flags(), r.cpu(), r.pid(), r.time_ns(), r.seq())
            );
            let back = n.record();
            assert!(back.is_event() && back.endian() == Endian::NATIVE);
            assert_eq!(back.event().unwrap().fields(), ev.fields());
            if endian == Endian::NATIVE {
                assert_eq!(n.bytes(), r.bytes());
            }
            assert_eq!(NativeEvent::parse(n.bytes()).unwrap().fields(), ev.fields());
        }
        assert!(events > 100 && notes > 2, "{events} {notes}");
    }
}

/// The run iterator hands out whole native event records only: a note, a short tail, a
/// bad size or the other byte order ends it there.
#[test]
fn native_events_end_at_anything_but_a_whole_event() {
    let data = one_cpu_stream(40);
    let h = StreamHeader::parse(&data).unwrap();
    let recs: Vec<RecordView<'_>> = Records::new(&data, &h).map(|r| r.unwrap()).collect();
    let first_note = recs.iter().position(|r| !r.is_event()).unwrap();
    let start = h.header_size as usize;
    // The stream's records up to its first note: the events before it.
    assert_eq!(NativeEvents::new(&data[start..]).count(), first_note);
    // Four events in a row after it: cut short, a size that is not a multiple of 8, the
    // second record in the other byte order.
    let a = (first_note..recs.len() - 4)
        .find(|&i| recs[i..i + 4].iter().all(|r| r.is_event()))
        .unwrap();
    let at = |i: usize| start + recs[..i].iter().map(|r| r.size()).sum::<usize>();
    let run = &data[at(a)..at(a + 4)];
    assert_eq!(NativeEvents::new(run).count(), 4);
    assert_eq!(NativeEvents::new(&run[..run.len() - 1]).count(), 3);
    let second = recs[a].size();
    // Sizes no event has: not a multiple of 8, 0 (which would hand out empty events
    // forever), less than an event.
    for size in [76, 0, 64] {
        let mut bad = run.to_vec();
        Endian::NATIVE.put_u16(&mut bad, second + rec_off::SIZE, size);
        let mut events = NativeEvents::new(&bad);
        assert_eq!(events.by_ref().count(), 1, "size {size}");
        assert_eq!(events.rest().len(), run.len() - second, "size {size}");
    }
    let mut swapped = run.to_vec();
    let t = Endian::NATIVE.u16(&swapped, second + rec_off::TYPE);
    Endian::NATIVE
        .opposite()
        .put_u16(&mut swapped, second + rec_off::TYPE, t);
    assert_eq!(NativeEvents::new(&swapped).count(), 1);
}
