//! Writes the events of a trace.dat as a Perfetto trace (the benchmark's Perfetto input):
//! `dat2pftrace IN.dat OUT.pftrace [zlib]`; prints the number of events.
use std::fs::File;
use std::io::BufWriter;

use grtrace_ftrace::perfetto::writer::{from_dat, Writer};
use grtrace_ftrace::tracedat::TraceDat;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 3 {
        eprintln!("usage: dat2pftrace IN.dat OUT.pftrace [zlib]");
        std::process::exit(2);
    }
    let data = std::fs::read(&a[1]).unwrap();
    let dat = TraceDat::parse(&data).unwrap();
    let out = BufWriter::with_capacity(1 << 20, File::create(&a[2]).unwrap());
    let mut w = Writer::new(out, a.get(3).map(String::as_str) == Some("zlib"));
    let n = from_dat(&dat, &mut w).unwrap();
    w.finish().unwrap();
    println!("{n}");
}
