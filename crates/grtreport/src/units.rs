//! Units and number formats shared by every output: milliseconds, seconds since the time
//! origin, shares and ring fill, with `-` for what was not measured.

use crate::job::NONE;

/// Nanoseconds as milliseconds with nanosecond resolution: `2300000` -> `2.300000`.
pub fn ms(ns: u64) -> String {
    format!("{}.{:06}", ns / 1_000_000, ns % 1_000_000)
}

/// A time relative to the first record, in seconds (as grtparse prints it).
pub fn secs(ns: u64, genesis: u64) -> String {
    if ns == NONE {
        return "-".to_string();
    }
    let d = ns.saturating_sub(genesis);
    format!("{}.{:09}", d / 1_000_000_000, d % 1_000_000_000)
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
