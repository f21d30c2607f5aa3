//! trace.dat reading: every version and compression gives the same records; damaged and
//! unsupported files give one error naming the byte offset, with everything before the
//! damage imported.

mod common;

use common::{import, Trace};
use grtrace_ftrace::tracedat::{Codec, TraceDat};

/// A trace long enough to fill several pages on CPU 0.
fn long_trace(jobs: u64) -> Trace {
    let mut t = Trace::new("6.12");
    for i in 0..jobs {
        let ts = 1_000_000 + i * 10_000;
        let q = [
            ("dev", 0),
            ("vq", 0),
            ("type", 0x207),
            ("flags", 0),
            ("ctx_id", 1),
            ("num_free", 9),
            ("seqno", i + 1),
        ];
        t.ev(
            0,
            ts,
            100,
            "virtio_gpu_cmd_queue",
            &q,
            &[("name", "control")],
        );
        t.ev(
            1,
            ts + 5_000,
            0,
            "virtio_gpu_cmd_response",
            &q,
            &[("name", "control")],
        );
    }
    t
}

#[test]
fn v6_v7_and_both_compressions_import_the_same_records() {
    let t = long_trace(300);
    let (base, m, r) = import(&t.dat(6, None));
    r.unwrap();
    assert_eq!(m.stats.events_in, 600);
    assert_eq!(base.codes().iter().filter(|c| *c == "END").count(), 300);
    for (v, codec) in [(7, None), (7, Some(Codec::Zlib)), (7, Some(Codec::Zstd))] {
        let bytes = t.dat(v, codec);
        let d = TraceDat::parse(&bytes).unwrap();
        assert_eq!(
            (d.version, d.codec, d.data_compressed),
            (v, codec, codec.is_some())
        );
        assert_eq!(d.cmdlines, [(100, "glmark2".to_string())]);
        let (c, _, r) = import(&bytes);
        r.unwrap();
        assert_eq!(c.0, base.0, "v{v} {codec:?}");
    }
}

#[test]
fn a_truncated_file_keeps_everything_before_the_cut_and_names_the_offset() {
    let t = long_trace(400);
    let full = t.dat(6, None);
    let d = TraceDat::parse(&full).unwrap();
    let cpu0 = d.cpus[0].clone();
    // cut CPU 0's data in its third page
    let cut = (cpu0.offset + 2 * 4096 + 100) as usize;
    let (c, m, r) = import(&full[..cut]);
    let e = r.unwrap_err();
    assert!(
        e.starts_with(&format!(
            "offset {}: CPU 0 data is cut short",
            cpu0.offset + 2 * 4096
        )),
        "{e}"
    );
    assert!(e.contains("and 1 more damaged CPU streams"), "{e}");
    // the first two pages of CPU 0 were imported (CPU 1's data is past the cut)
    let commits = c.codes().iter().filter(|x| *x == "COMMIT").count();
    assert!(commits > 50 && commits < 400, "{commits}");
    assert_eq!(m.stats.events_in as usize, commits);
}

#[test]
fn truncated_compressed_data_is_an_error_at_the_chunk() {
    let t = long_trace(400);
    let full = t.dat(7, Some(Codec::Zstd));
    let d = TraceDat::parse(&full).unwrap();
    let cpu1 = d.cpus[1].clone();
    let cut = (cpu1.offset + cpu1.size / 2) as usize;
    let mut bytes = full[..cut].to_vec();
    // keep the options at the end reachable: rebuild by zeroing the tail of CPU 1 instead
    bytes.resize(full.len(), 0);
    bytes[cut..(cpu1.offset + cpu1.size) as usize].fill(0xff);
    bytes[(cpu1.offset + cpu1.size) as usize..]
        .copy_from_slice(&full[(cpu1.offset + cpu1.size) as usize..]);
    let (_, m, r) = import(&bytes);
    let e = r.unwrap_err();
    assert!(e.starts_with("offset "), "{e}");
    assert!(m.stats.events_in > 0);
}

#[test]
fn a_corrupt_page_commit_is_an_error_at_its_offset() {
    let t = long_trace(50);
    let mut bytes = t.dat(6, None);
    let d = TraceDat::parse(&bytes).unwrap();
    let at = d.cpus[1].offset as usize + 8;
    bytes[at..at + 8].copy_from_slice(&60_000u64.to_ne_bytes());
    let (c, _, r) = import(&bytes);
    let e = r.unwrap_err();
    assert!(e.contains(&format!("offset {at}")), "{e}");
    assert!(e.contains("commit runs past the page"), "{e}");
    // CPU 0 (the queued commands) is intact and imported; CPU 1 (the responses) is not.
    assert_eq!(c.codes().iter().filter(|x| *x == "COMMIT").count(), 50);
    assert_eq!(c.codes().iter().filter(|x| *x == "END").count(), 0);
}

#[test]
fn unknown_versions_compressions_and_non_trace_files_are_refused_with_offsets() {
    let good = long_trace(2).dat(7, None);
    let mut v8 = good.clone();
    v8[10] = b'8';
    let e = TraceDat::parse(&v8).unwrap_err();
    assert_eq!(e.offset, 10);
    assert!(e.msg.contains("unsupported trace.dat version `8`"));

    let zstd = long_trace(2).dat(7, Some(Codec::Zstd));
    let mut lz4 = zstd.clone();
    let at = zstd.windows(5).position(|w| w == b"zstd\0").unwrap();
    lz4[at..at + 4].copy_from_slice(b"lz4x");
    let e = TraceDat::parse(&lz4).unwrap_err();
    assert_eq!(e.offset as usize, at);
    assert!(e.msg.contains("unknown compression `lz4x`"));

    assert_eq!(TraceDat::parse(b"").unwrap_err().msg, "empty file");
    assert_eq!(
        TraceDat::parse(b"GRTRACE\0xxxxxxxxxx").unwrap_err().offset,
        0
    );

    // cut inside the event formats
    let v6 = long_trace(2).dat(6, None);
    let at = v6.windows(9).position(|w| w == b"name: vir").unwrap() + 20;
    let e = TraceDat::parse(&v6[..at]).unwrap_err();
    assert!(e.msg.contains("file ends inside an event format"), "{e}");
    assert!(e.offset as usize <= at);
}

#[test]
fn a_corrupt_compressed_section_names_its_offset() {
    let mut z = long_trace(2).dat(7, Some(Codec::Zlib));
    // the first section after the options pointer is HEADER_INFO: damage its deflate data
    let hdr_at = z.windows(12).position(|w| w == b"header_page\0");
    assert!(hdr_at.is_none(), "header info is compressed");
    let d = TraceDat::parse(&z).unwrap();
    assert!(d.codec.is_some());
    let first = z.windows(5).position(|w| w == b"zlib\0").unwrap() + 5 + 7 + 8;
    let data_at = first + 16 + 8;
    for b in &mut z[data_at + 2..data_at + 12] {
        *b ^= 0x5a;
    }
    let e = TraceDat::parse(&z).unwrap_err();
    assert_eq!(e.offset as usize, first + 16, "{e}");
}

/// Where `pat` first occurs in `b`.
fn find(b: &[u8], pat: &[u8]) -> usize {
    b.windows(pat.len())
        .position(|w| w == pat)
        .expect("pattern")
}

/// trace-cmd forks and old versions wrote other things under the ids of options (option
/// 8 as a pid/tgid table, not a 4-byte CPU count); newer ones add ids. The events do not
/// need options: such an option is skipped with one warning naming it and its offset.
#[test]
fn an_unknown_option_or_one_of_a_size_that_does_not_fit_is_skipped_with_a_warning() {
    let t = long_trace(50);
    let good = t.dat(7, None);
    let mut b = good.clone();
    let n_cpus = TraceDat::parse(&good).unwrap().cpu_count;
    // CPUCOUNT (id 8, 4 bytes) becomes an unknown id 200
    let mut pat = 8u16.to_le_bytes().to_vec();
    pat.extend(4u32.to_le_bytes());
    pat.extend(n_cpus.to_le_bytes());
    let cpucount = find(&b, &pat);
    b[cpucount..cpucount + 2].copy_from_slice(&200u16.to_le_bytes());
    // the clock option (id 4, its text) takes the id of CPUCOUNT: a size that does not fit
    let clock = find(&b, b"[local] global\0") - 6;
    assert_eq!(&b[clock..clock + 2], &4u16.to_le_bytes());
    b[clock..clock + 2].copy_from_slice(&8u16.to_le_bytes());
    let dat = TraceDat::parse(&b).expect("the events are intact");
    assert_eq!(
        dat.warnings,
        [
            format!(
                "option 200 at offset {} (4 bytes) is not known: skipped",
                cpucount + 6
            ),
            format!(
                "option 8 (CPUCOUNT) at offset {}: 15 bytes, not a 4-byte CPU count: skipped",
                clock + 6
            ),
        ]
    );
    let (c, _, r) = import(&b);
    r.unwrap();
    let (want, _, _) = import(&good);
    assert_eq!(c.events(), want.events());
    assert!(!c.events().is_empty());
}
