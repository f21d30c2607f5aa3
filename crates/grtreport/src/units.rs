//! Units and number formats shared by every output: milliseconds, seconds since the time
//! origin, shares and ring fill, with `-` for what was not measured.

use crate::job::{Origin, NONE};

/// Nanoseconds as milliseconds with nanosecond resolution: `2300000` -> `2.300000`.
pub fn ms(ns: u64) -> String {
    format!("{}.{:06}", ns / 1_000_000, ns % 1_000_000)
}

/// A time since the origin (the first record), in seconds (as grtparse prints it).
pub fn secs(ns: u64, origin: Origin) -> String {
    let mut s = Vec::new();
    push_secs(&mut s, ns, origin);
    String::from_utf8(s).expect("digits")
}

/// A share of 1 as a percentage with two decimals: `0.5` -> `50.00%`.
pub fn pct(x: f64) -> String {
    format!("{:.2}%", x * 100.0)
}

/// A ring fill (share of 1) as a whole percentage, `-` when not measured (NaN).
pub fn fill_str(f: f32) -> String {
    if f.is_finite() {
        format!("{:.0}%", f * 100.0)
    } else {
        "-".to_string()
    }
}

/// `2.300000` or `-` for an unknown span.
pub fn ms_or_dash(ns: u64) -> String {
    if ns == NONE {
        "-".into()
    } else {
        ms(ns)
    }
}

/// [`pct`], or `-` for a share the recording cannot measure (NaN).
pub fn pct_or_dash(x: f64) -> String {
    if x.is_finite() {
        pct(x)
    } else {
        "-".into()
    }
}

/// Appends `v` in decimal (no formatting machinery: job rows write millions of these).
pub fn push_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// Appends `v` as exactly `width` (at most 20) digits, zero-padded (`v` below 10^width).
fn push_padded(out: &mut Vec<u8>, mut v: u64, width: usize) {
    let mut digits = [b'0'; 20];
    for d in digits[..width].iter_mut().rev() {
        *d = b'0' + (v % 10) as u8;
        v /= 10;
    }
    out.extend_from_slice(&digits[..width]);
}

/// [`ms`] appended to `out`.
pub fn push_ms(out: &mut Vec<u8>, ns: u64) {
    push_u64(out, ns / 1_000_000);
    out.push(b'.');
    push_padded(out, ns % 1_000_000, 6);
}

/// [`secs`] appended to `out`.
pub fn push_secs(out: &mut Vec<u8>, ns: u64, origin: Origin) {
    let Some(d) = origin.since_seen(ns) else {
        out.push(b'-');
        return;
    };
    push_u64(out, d / 1_000_000_000);
    out.push(b'.');
    push_padded(out, d % 1_000_000_000, 9);
}
