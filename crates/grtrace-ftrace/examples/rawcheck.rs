//! Manual check on a live kernel (root, tracefs): enables sched:sched_switch in an own
//! instance for a second, reads trace_pipe_raw pages and decodes them. Prints events per
//! CPU, decode errors, and whether times are monotonic and ids match the format.
use std::io::Read;
fn main() {
    let root = std::path::Path::new("/sys/kernel/tracing/instances/grtrace-rawcheck");
    std::fs::create_dir(root).unwrap();
    let fmt_text = std::fs::read_to_string(root.join("events/sched/sched_switch/format")).unwrap();
    let f = grtrace_ftrace::EventFormat::parse("sched", &fmt_text).unwrap();
    let mut hp = vec![0u8; 65536];
    let n = std::fs::File::open(root.join("events/header_page"))
        .unwrap()
        .read(&mut hp)
        .unwrap();
    let layout = grtrace_ftrace::PageLayout::parse(
        std::str::from_utf8(&hp[..n]).unwrap(),
        grtrace_format::Endian::NATIVE,
        0,
    )
    .unwrap();
    std::fs::write(root.join("events/sched/sched_switch/enable"), "1").unwrap();
    std::thread::sleep(std::time::Duration::from_secs(1));
    std::fs::write(root.join("tracing_on"), "0").unwrap();
    for cpu in 0..2 {
        let mut pages = Vec::new();
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags_nb()
            .open(root.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw")))
            .unwrap();
        loop {
            let at = pages.len();
            pages.resize(at + layout.page_size, 0);
            match file.read(&mut pages[at..]) {
                Ok(0) | Err(_) => {
                    pages.truncate(at);
                    break;
                }
                Ok(_) => {}
            }
        }
        let mut s = grtrace_ftrace::tracedat::CpuStream::from_pages(cpu, &pages, layout);
        let (mut n, mut bad_id, mut back, mut last, mut lost) = (0u64, 0u64, 0u64, 0u64, 0u64);
        loop {
            match s.next() {
                Ok(grtrace_ftrace::tracedat::Next::Event(t)) => {
                    n += 1;
                    if t < last {
                        back += 1;
                    }
                    last = t;
                    let id = u16::from_ne_bytes([s.event()[0], s.event()[1]]);
                    if id != f.id {
                        bad_id += 1;
                    }
                }
                Ok(grtrace_ftrace::tracedat::Next::Lost(..)) => lost += 1,
                Ok(grtrace_ftrace::tracedat::Next::End) => break,
                Err(e) => {
                    println!("cpu {cpu}: error {e}");
                    break;
                }
            }
        }
        let stats = std::fs::read_to_string(root.join(format!("per_cpu/cpu{cpu}/stats"))).unwrap();
        let entries: Vec<&str> = stats
            .lines()
            .filter(|l| l.starts_with("read events") || l.starts_with("entries"))
            .collect();
        println!("cpu {cpu}: {} pages, {n} events, {bad_id} wrong ids, {back} time steps back, {lost} lost markers; kernel: {entries:?}", pages.len() / layout.page_size);
    }
    drop(std::fs::remove_dir(root));
}
trait Nb {
    fn custom_flags_nb(&mut self) -> &mut Self;
}
impl Nb for std::fs::OpenOptions {
    fn custom_flags_nb(&mut self) -> &mut Self {
        use std::os::unix::fs::OpenOptionsExt;
        self.custom_flags(0o4000)
    }
}
