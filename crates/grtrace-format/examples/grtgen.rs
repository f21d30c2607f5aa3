//! grtgen: writes deterministic synthetic grtrace streams `<base>.grtrace.<cpu>` (fixtures and
//! benchmarks). Independent of grtparse: it only uses the format crate's writer.
//!
//! cargo run -p grtrace-format --release --example grtgen -- -n 1000 -o fixtures/multi/run

use std::fs::File;
use std::io::BufWriter;
use std::process::exit;

use grtrace_format::synth::{generate, SynthConfig};
use grtrace_format::Endian;

const USAGE: &str =
    "usage: grtgen [-n RECORDS] [--cpus N] [--seed S] [--big-endian] [--gap CPU:SEQ:COUNT]
              [--every-type] [--lost CPU:COUNT]... [--dropped N] -o BASE
Writes BASE.grtrace.<cpu> for every CPU; prints the records written per CPU.";

fn num<T: std::str::FromStr>(s: Option<String>, what: &str) -> T {
    match s.and_then(|v| v.parse().ok()) {
        Some(v) => v,
        None => {
            eprintln!("grtgen: {what} needs a number\n{USAGE}");
            exit(2)
        }
    }
}

fn main() {
    let mut cfg = SynthConfig::default();
    let mut base = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "-n" => cfg.records = num(args.next(), "-n"),
            "--cpus" => cfg.cpus = num(args.next(), "--cpus"),
            "--seed" => cfg.seed = num(args.next(), "--seed"),
            "--dropped" => cfg.kernel_dropped = num(args.next(), "--dropped"),
            "--big-endian" => cfg.endian = Endian::Big,
            "--little-endian" => cfg.endian = Endian::Little,
            "--every-type" => cfg.every_type = true,
            "--gap" | "--lost" => {
                let v = args.next().unwrap_or_default();
                let p: Vec<u64> = v.split(':').filter_map(|x| x.parse().ok()).collect();
                match (a.as_str(), p.as_slice()) {
                    ("--gap", [c, s, n]) => cfg.gap = Some((*c as u32, *s, *n)),
                    ("--lost", [c, n]) => cfg.kernel_lost.push((*c as u32, *n)),
                    _ => {
                        eprintln!("grtgen: bad {a} value '{v}'\n{USAGE}");
                        exit(2)
                    }
                }
            }
            "-o" => base = args.next(),
            "-h" | "--help" => {
                println!("{USAGE}");
                return;
            }
            _ => {
                eprintln!("grtgen: unknown argument '{a}'\n{USAGE}");
                exit(2)
            }
        }
    }
    let Some(base) = base else {
        eprintln!("{USAGE}");
        exit(2)
    };
    if cfg.cpus == 0 || cfg.cpus > 1024 {
        eprintln!("grtgen: --cpus must be 1..1024");
        exit(2)
    }
    let mut outs = Vec::new();
    for cpu in 0..cfg.cpus {
        let name = format!("{base}.grtrace.{cpu}");
        match File::create(&name) {
            Ok(f) => outs.push(BufWriter::with_capacity(1 << 20, f)),
            Err(e) => {
                eprintln!("grtgen: {name}: {e}");
                exit(1)
            }
        }
    }
    match generate(&cfg, outs) {
        Ok(counts) => {
            let total: u64 = counts.iter().sum();
            let per: Vec<String> = counts.iter().map(|c| c.to_string()).collect();
            println!("records={total} per_cpu={}", per.join(","));
        }
        Err(e) => {
            eprintln!("grtgen: {e}");
            exit(1)
        }
    }
}
