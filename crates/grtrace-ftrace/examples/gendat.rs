//! Writes a synthetic trace.dat (tests, benchmark):
//! `gendat OUT FLAVOR JOBS CPUS VERSION [zlib|zstd]` with FLAVOR virtio, sched612, sched617.
use std::fs::File;
use std::io::BufWriter;

use grtrace_ftrace::datwriter::{fixture_formats, DatSpec, DatWriter};
use grtrace_ftrace::synth::{Flavor, Workload};
use grtrace_ftrace::tracedat::Codec;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 6 {
        eprintln!("usage: gendat OUT virtio|sched612|sched617 JOBS CPUS 6|7 [zlib|zstd]");
        std::process::exit(2);
    }
    let flavor = match a[2].as_str() {
        "virtio" => Flavor::Virtio,
        "sched612" => Flavor::Sched612,
        "sched617" => Flavor::Sched617,
        f => panic!("unknown flavor {f}"),
    };
    let w = Workload {
        flavor,
        jobs: a[3].parse().unwrap(),
        cpus: a[4].parse().unwrap(),
    };
    let codec = match a.get(6).map(String::as_str) {
        Some("zlib") => Some(Codec::Zlib),
        Some("zstd") => Some(Codec::Zstd),
        _ => None,
    };
    let formats = fixture_formats(w.kernel());
    let mut spec = DatSpec::new(a[5].parse().unwrap(), codec, &formats, w.cpus);
    spec.cmdlines = vec![
        (1000, "glmark2".into()),
        (1001, "weston".into()),
        (1002, "vkcube".into()),
    ];
    let fs: Vec<_> = formats.iter().map(|(f, _)| f.clone()).collect();
    let mut dw = DatWriter::new(
        BufWriter::with_capacity(1 << 20, File::create(&a[1]).unwrap()),
        spec,
    )
    .unwrap();
    w.write(&mut dw, &fs).unwrap();
    dw.finish().unwrap();
    println!("{}", w.event_count());
}
