//! Small JSON writing helpers for the timeline exports: strings escaped for JSON and for
//! embedding in an HTML `<script>` element, and nanosecond times written exactly as
//! microseconds or milliseconds (no float rounding, no allocation).

use std::io::{self, Write};

/// Writes `s` (bytes, decoded as UTF-8 with replacement) as a JSON string. `<`, `>` and `&`
/// are escaped too, so the text can sit inside an HTML `<script>` element unchanged.
pub fn string<W: Write + ?Sized>(w: &mut W, s: &[u8]) -> io::Result<()> {
    w.write_all(b"\"")?;
    let text = String::from_utf8_lossy(s);
    let b = text.as_bytes();
    let mut from = 0;
    for (i, &c) in b.iter().enumerate() {
        let esc: &[u8] = match c {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            b'<' => b"\\u003c",
            b'>' => b"\\u003e",
            b'&' => b"\\u0026",
            c if c < 0x20 => {
                w.write_all(&b[from..i])?;
                write!(w, "\\u{c:04x}")?;
                from = i + 1;
                continue;
            }
            _ => continue,
        };
        w.write_all(&b[from..i])?;
        w.write_all(esc)?;
        from = i + 1;
    }
    w.write_all(&b[from..])?;
    w.write_all(b"\"")
}

/// An unsigned integer in decimal (without `fmt`'s machinery: the exports write tens of
/// millions of numbers).
pub fn uint<W: Write + ?Sized>(w: &mut W, v: u64) -> io::Result<()> {
    w.write_all(itoa::Buffer::new().format(v).as_bytes())
}

/// `whole.frac` with `digits` fraction digits (zero-padded).
fn fixed<W: Write + ?Sized>(w: &mut W, whole: u64, frac: u64, digits: usize) -> io::Result<()> {
    uint(w, whole)?;
    let mut buf = [b'.', b'0', b'0', b'0', b'0', b'0', b'0'];
    let mut f = frac;
    for k in (1..=digits).rev() {
        buf[k] = b'0' + (f % 10) as u8;
        f /= 10;
    }
    w.write_all(&buf[..=digits])
}

/// `ns` as microseconds with three decimals: 1234567 -> `1234.567`.
pub fn us<W: Write + ?Sized>(w: &mut W, ns: u64) -> io::Result<()> {
    fixed(w, ns / 1_000, ns % 1_000, 3)
}

/// `ns` as milliseconds with six decimals: 1234567 -> `1.234567`.
pub fn ms<W: Write + ?Sized>(w: &mut W, ns: u64) -> io::Result<()> {
    fixed(w, ns / 1_000_000, ns % 1_000_000, 6)
}

/// A finite float, or `null` (JSON has no NaN).
pub fn num<W: Write + ?Sized>(w: &mut W, v: f64) -> io::Result<()> {
    if v.is_finite() {
        write!(w, "{v}")
    } else {
        w.write_all(b"null")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(b: &[u8]) -> String {
        let mut v = Vec::new();
        string(&mut v, b).unwrap();
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn strings_are_escaped_for_json_and_script_elements() {
        assert_eq!(s(b"a\"b\\c\n"), r#""a\"b\\c\n""#);
        assert_eq!(s(b"</script>"), r#""\u003c/script\u003e""#);
        assert_eq!(s(b"\x01x"), r#""\u0001x""#);
        assert_eq!(s(b"\xff"), "\"\u{fffd}\"");
    }

    #[test]
    fn times_keep_nanoseconds() {
        let mut v = Vec::new();
        us(&mut v, 1_234_567).unwrap();
        v.push(b' ');
        ms(&mut v, 1_234_567).unwrap();
        v.push(b' ');
        us(&mut v, 7).unwrap();
        v.push(b' ');
        uint(&mut v, 0).unwrap();
        v.push(b' ');
        uint(&mut v, u64::MAX).unwrap();
        v.push(b' ');
        ms(&mut v, 5_000_000_000).unwrap();
        assert_eq!(
            String::from_utf8(v).unwrap(),
            "1234.567 1.234567 0.007 0 18446744073709551615 5000.000000"
        );
    }
}
