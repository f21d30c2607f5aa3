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
pub fn push_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Appends a ring fill (share of 1) as a whole percentage, as `format!("{:.0}%", f * 100.0)`
/// writes it (the f32 product, rounded half to even), without the formatting machinery for
/// the usual values.
pub fn push_pct0(out: &mut Vec<u8>, f: f32) {
    let p = f * 100.0;
    if !(0.0..1e15).contains(&p) || p.is_sign_negative() {
        use std::io::Write;
        let _ = write!(out, "{p:.0}%");
        return;
    }
    push_u64(out, (p as f64).round_ties_even() as u64);
    out.push(b'%');
}

/// Appends `f` with four decimals, as `format!("{f:.4}")` writes it (the exact value,
/// rounded half to even), without the formatting machinery for the usual values (ring fill:
/// from 0 to a few).
pub fn push_fixed4(out: &mut Vec<u8>, f: f32) {
    // Exact: an f32's 24-bit mantissa times 10^4 fits an f64's 53 bits.
    let scaled = f as f64 * 10_000.0;
    if !(0.0..1e15).contains(&scaled) || f.is_sign_negative() {
        use std::io::Write;
        let _ = write!(out, "{f:.4}");
        return;
    }
    let n = scaled.round_ties_even() as u64;
    push_u64(out, n / 10_000);
    out.push(b'.');
    push_padded(out, n % 10_000, 4);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_u64_writes_every_magnitude() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut vals = vec![0, 9, 10, 99, 100, 101, 999, 1000, u64::MAX, u64::MAX / 10];
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            vals.push(x >> (x % 64));
        }
        let mut out = Vec::new();
        for v in vals {
            out.clear();
            push_u64(&mut out, v);
            assert_eq!(out, v.to_string().as_bytes());
        }
    }

    /// Finite f32 values: `fixed`, then 200,000 from a xorshift, as shares (0 to 4), as
    /// 16-bit fractions and as any bit pattern.
    fn floats(fixed: &[f32]) -> impl Iterator<Item = f32> + '_ {
        let mut x = 0x9e37_79b9u32;
        let drawn = (0..200_000u32).map(move |k| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            match k % 3 {
                0 => (x % 4_000_000) as f32 / 1_000_000.0,
                1 => (x % 65536) as f32 / 65536.0,
                _ => f32::from_bits(x & 0x7fff_ffff),
            }
        });
        fixed.iter().copied().chain(drawn).filter(|f| f.is_finite())
    }

    /// Ties (0.03125 * 10^4 = 312.5, 0.005 * 100 = 0.5), signs, tiny and huge values.
    const EDGES: [f32; 16] = [
        0.0,
        -0.0,
        0.5,
        0.005,
        0.015,
        0.025,
        0.03125,
        0.00005,
        0.99995,
        1.0,
        2.5,
        1e-9,
        1e13,
        3.4e38,
        -1.25,
        f32::MIN_POSITIVE,
    ];

    /// Asserts that `push` writes every value of [`floats`] as `format` does.
    fn writes_as(push: fn(&mut Vec<u8>, f32), format: fn(f32) -> String) {
        let mut out = Vec::new();
        for f in floats(&EDGES) {
            out.clear();
            push(&mut out, f);
            assert_eq!(String::from_utf8_lossy(&out), format(f), "{f:e}");
        }
    }

    /// The same text as `format!("{:.0}%", f * 100.0)` (the `--jobs` fill).
    #[test]
    fn push_pct0_is_format_of_the_percentage() {
        writes_as(push_pct0, |f| format!("{:.0}%", f * 100.0));
    }

    /// The same text as `format!("{f:.4}")` (the CSV's fill).
    #[test]
    fn push_fixed4_is_format_with_four_decimals() {
        writes_as(push_fixed4, |f| format!("{f:.4}"));
    }
}
