//! tefcheck: checks JSON Trace Event Format files (`grtreport --perfetto` output) with the
//! same checker as the tests (tests/common/tef.rs). Used by kernel/verify.sh on the run
//! recorded from the real kernel.
//!
//!   cargo run -p grtreport --release --example tefcheck -- run.json [more.json ...]
//!
//! Prints one line per file; exit status 0 if all are valid, 1 if one is not, 2 on usage.

#[path = "../tests/common/tef.rs"]
mod tef;

fn main() {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        eprintln!("usage: tefcheck FILE.json...");
        std::process::exit(2);
    }
    let mut bad = 0;
    for f in &files {
        let text = match std::fs::read_to_string(f) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("tefcheck: {f}: {e}");
                bad += 1;
                continue;
            }
        };
        match tef::check(&text) {
            Ok(c) => println!(
                "{f}: valid: {} events: {} slices, {} flows, {} counters, {} instants, {} processes, {} threads",
                c.events.len(),
                c.count("X") + c.count("B"),
                c.flows.values().sum::<usize>(),
                c.count("C"),
                c.count("i") + c.count("I"),
                c.processes.len(),
                c.threads.len()
            ),
            Err(errs) => {
                bad += 1;
                println!("{f}: INVALID");
                for e in errs {
                    println!("  {e}");
                }
            }
        }
    }
    std::process::exit(if bad > 0 { 1 } else { 0 });
}
