//! Fuzzes the whole reader: header parsing, record views and bodies, the merge (mapped and
//! pipe inputs), sequence checking. The input is split into up to three streams so that the
//! merge sees several cursors; one of them goes through the incremental pipe reader in small
//! reads. Any panic, overflow or unbounded allocation is a bug.
#![no_main]

use std::io::Read;
use std::ops::ControlFlow;

use grtrace_format::{InputSource, Item, Trace};
use libfuzzer_sys::fuzz_target;

/// A reader that hands out at most `step` bytes per call.
struct Dribble {
    data: Vec<u8>,
    pos: usize,
    step: usize,
}

impl Read for Dribble {
    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        let n = b.len().min(self.step).min(self.data.len() - self.pos);
        b[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

fuzz_target!(|data: &[u8]| {
    // First byte: how to split; the rest: the streams, separated at fixed fractions.
    let Some((&ctl, rest)) = data.split_first() else {
        return;
    };
    let parts = 1 + (ctl as usize % 3);
    let mut sources = Vec::new();
    let chunk = rest.len() / parts + 1;
    for (i, piece) in rest.chunks(chunk).enumerate() {
        if i == 0 && ctl & 0x80 != 0 {
            sources.push(InputSource::Stream {
                name: "pipe".into(),
                reader: Box::new(Dribble {
                    data: piece.to_vec(),
                    pos: 0,
                    step: 1 + (ctl as usize >> 3 & 15) * 7,
                }),
            });
        } else {
            sources.push(InputSource::Bytes {
                name: format!("in{i}"),
                data: piece.to_vec(),
            });
        }
    }
    let Ok(mut trace) = Trace::open(sources) else {
        return;
    };
    let mut n = 0u64;
    let sum = trace.for_each(|item| {
        match item {
            Item::Record(r) => {
                // Decode everything a consumer could look at.
                let _ = r.body();
                let _ = r.stamp();
                if let Some(e) = r.event() {
                    let _ = e.fields();
                }
            }
            Item::Gap(g) => assert!(g.count > 0),
            Item::Stream(s) => assert!(s.header.header_size as usize >= grtrace_format::abi::STREAM_HEADER_SIZE),
        }
        n += 1;
        ControlFlow::Continue(())
    });
    assert!(sum.records <= n);
    for e in &sum.errors {
        let _ = e.to_string();
    }
});
