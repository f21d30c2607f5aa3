//! openjobs: writes a merged grtrace stream of jobs that are committed and never complete
//! (`RATE` COMMITs a second for `SECONDS`), the input of bench/report/open-jobs.sh, which
//! measures what the report holds for jobs left open within and past the horizon.
//!
//!   cargo run -p grtreport --release --example openjobs -- SECONDS RATE OUT

use std::io::{BufWriter, Write};

use grtrace_format::{Body, Event, EventBody, RingNote, Stamp, StreamHeader, StreamWriter};

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let (Some(secs), Some(rate), Some(out)) = (
        a.first().and_then(|s| s.parse::<u64>().ok()),
        a.get(1).and_then(|s| s.parse::<u64>().ok()),
        a.get(2),
    ) else {
        eprintln!("usage: openjobs SECONDS RATE OUT");
        std::process::exit(2);
    };
    if let Err(e) = write(secs, rate.max(1), out) {
        eprintln!("openjobs: {out}: {e}");
        std::process::exit(1);
    }
}

fn write(secs: u64, rate: u64, out: &str) -> std::io::Result<()> {
    const T0: u64 = 1_000_000_000_000;
    let mut h = StreamHeader::new(grtrace_format::abi::CPU_MERGED, 0, "virtio_gpu");
    h.flags = grtrace_format::abi::STREAM_MERGED;
    let f = BufWriter::new(std::fs::File::create(out)?);
    let mut w = StreamWriter::new(f, &h)?;
    let ring = Body::Ring(RingNote {
        ring: 0,
        size: 1 << 20,
        unit: grtrace_format::abi::RING_UNIT_SLOTS,
        flags: 0,
        engine_class: 1,
        name: b"gfx",
    });
    let stamp = |seq, t| Stamp {
        cpu: 0,
        pid: 7,
        time_ns: t,
        seq,
    };
    w.write(&stamp(1, T0), &ring)?;
    let step = 1_000_000_000 / rate;
    for i in 0..secs * rate {
        let commit = EventBody {
            code: Event::COMMIT,
            flags: 0,
            ctx: 1,
            ring: 0,
            seqno: i + 1,
            arg0: 0,
            arg1: 0,
            arg2: 0,
            arg3: 0,
        };
        w.write(&stamp(i + 2, T0 + i * step), &Body::Event(commit))?;
    }
    w.into_inner().flush()
}
