//! Input sources shared by the integration tests.
#![allow(dead_code)]

use std::io::Read;

use grtrace_format::trace::{InputSource, Item};

/// A whole stream in memory, as if mapped from a file.
pub fn bytes(name: &str, data: Vec<u8>) -> InputSource {
    InputSource::Bytes {
        name: name.into(),
        data,
    }
}

/// A stream read `step` bytes at a time, like a pipe delivering small pieces.
pub fn pipe(name: &str, data: Vec<u8>, step: usize) -> InputSource {
    InputSource::Stream {
        name: name.into(),
        reader: Box::new(Dribble(data, 0, step)),
    }
}

/// One item the reader delivered, as a line of text the tests compare.
pub fn describe(it: &Item<'_>) -> String {
    match it {
        Item::Record(r) => format!(
            "{} {} {} {} {:?}",
            r.cpu(),
            r.seq(),
            r.time_ns(),
            r.pid(),
            r.body()
        ),
        Item::Gap(g) => format!("gap {g:?}"),
        Item::Stream(s) => format!("stream {} at {}", s.header.card, s.offset),
    }
}

/// A reader that returns at most `.2` bytes per call.
struct Dribble(Vec<u8>, usize, usize);

impl Read for Dribble {
    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        let n = b.len().min(self.2).min(self.0.len() - self.1);
        b[..n].copy_from_slice(&self.0[self.1..self.1 + n]);
        self.1 += n;
        Ok(n)
    }
}
