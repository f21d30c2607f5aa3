//! Drain rate of `grtrace --ftrace` without a kernel: the per-CPU ring-buffer pages of a v6
//! trace.dat (written by grtrace-ftrace's `gendat` from the fixture formats) become the
//! `trace_pipe_raw` files of a fake tracefs instance, which `ftrace::record` drains, merges
//! behind its watermark, maps and writes as grtrace files, as it does live.
//! usage: ftrace_drain TRACE.dat SCRATCH-DIR
//! Prints events, wall and CPU time, and events/s. The kernel side (the tracepoints' cost
//! while recording) is not in this figure.
use std::fs;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use grtrace_ftrace::datwriter::fixture_formats;
use grtrace_ftrace::tracedat::TraceDat;
use grtrace_record::ftrace::{record, FtraceOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a: Vec<String> = std::env::args().collect();
    if a.len() != 3 {
        eprintln!("usage: ftrace_drain TRACE.dat SCRATCH-DIR");
        std::process::exit(2);
    }
    let bytes = fs::read(&a[1])?;
    let dat = TraceDat::parse(&bytes).map_err(|e| e.to_string())?;
    let root = Path::new(&a[2]);
    let _ = fs::remove_dir_all(root);
    let inst = root.join("instances/drain");
    fs::create_dir_all(inst.join("events"))?;
    fs::write(
        inst.join("events/header_page"),
        dat.layout.header_page_text(),
    )?;
    for f in ["tracing_on", "buffer_size_kb", "trace_clock"] {
        fs::write(inst.join(f), "")?;
    }
    for kernel in ["6.12", "6.17"] {
        for (f, text) in fixture_formats(kernel) {
            if dat.formats.iter().any(|d| d.id == f.id && d.name == f.name) {
                let d = inst.join("events").join(&f.system).join(&f.name);
                fs::create_dir_all(&d)?;
                fs::write(d.join("format"), text)?;
                fs::write(d.join("enable"), "0")?;
            }
        }
    }
    for c in &dat.cpus {
        let d = inst.join(format!("per_cpu/cpu{}", c.cpu));
        fs::create_dir_all(&d)?;
        let (at, n) = (c.offset as usize, c.size as usize);
        fs::write(d.join("trace_pipe_raw"), &bytes[at..at + n])?;
        fs::write(d.join("stats"), "overrun: 0\ndropped events: 0\n")?;
    }
    drop(bytes);
    let mut o = FtraceOptions::new(root.join("out").into_os_string());
    o.root = root.to_path_buf();
    o.instance = "drain".into();
    o.create = false;
    let rep = record(&o, &AtomicBool::new(false), &mut std::io::sink())?;
    if let Some(e) = &rep.failure {
        return Err(e.to_string().into());
    }
    let ev = rep.events();
    let (wall, cpu) = (rep.elapsed.as_secs_f64(), rep.cpu_time.as_secs_f64());
    println!(
        "{ev} events: wall {wall:.2} s ({:.2} M events/s), CPU {cpu:.2} s ({:.2} M events/s, {:.0} ns/event)",
        ev as f64 / wall / 1e6,
        ev as f64 / cpu / 1e6,
        cpu * 1e9 / ev as f64
    );
    let _ = fs::remove_dir_all(root);
    Ok(())
}
