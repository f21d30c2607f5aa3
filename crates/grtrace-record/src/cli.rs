//! Parsing of the command-line values that need more than clap: sizes and event masks.

use grtrace_format::abi::{EventCode, EVENT_MASK_ALL};

/// `-b`: `512K`, `4M`, `1G`, or a plain number of KiB (blktrace's unit).
pub fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1usize << 10),
        'm' | 'M' => (&s[..s.len() - 1], 1 << 20),
        'g' | 'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1 << 10),
    };
    num.parse::<usize>().ok()?.checked_mul(mult)
}

/// `-A HEX` and `-a NAME` (repeatable, comma lists, `all`) into the kernel's event mask.
/// `None` = no filter.
pub fn event_mask(hex: Option<&str>, names: &[String]) -> Result<Option<u64>, String> {
    let mut mask = match hex {
        Some(h) => Some(
            u64::from_str_radix(h.trim_start_matches("0x"), 16)
                .map_err(|_| format!("-A wants a hex mask, not `{h}`"))?,
        ),
        None => None,
    };
    for name in names {
        for n in name.split(',').filter(|n| !n.is_empty()) {
            let bit = if n.eq_ignore_ascii_case("all") {
                EVENT_MASK_ALL
            } else {
                EventCode::from_name(n)
                    .ok_or_else(|| {
                        let names: Vec<&str> = EventCode::ALL.iter().map(|c| c.name()).collect();
                        format!("unknown event `{n}` for -a (known: {})", names.join(" "))
                    })?
                    .mask_bit()
            };
            mask = Some(mask.unwrap_or(0) | bit);
        }
    }
    if mask == Some(0) {
        return Err("the event mask selects nothing".into());
    }
    Ok(mask)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_blktrace_units() {
        assert_eq!(parse_size("512"), Some(512 << 10));
        assert_eq!(parse_size("256K"), Some(256 << 10));
        assert_eq!(parse_size("4m"), Some(4 << 20));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size(""), None);
    }

    #[test]
    fn masks_combine_names_and_hex() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(event_mask(None, &[]), Ok(None));
        assert_eq!(
            event_mask(None, &names(&["submit", "END"])),
            Ok(Some((1 << 3) | (1 << 7)))
        );
        assert_eq!(event_mask(Some("0x6"), &names(&["irq"])), Ok(Some(0x106)));
        assert_eq!(event_mask(None, &names(&["all"])), Ok(Some(EVENT_MASK_ALL)));
        assert!(event_mask(None, &names(&["nope"]))
            .unwrap_err()
            .contains("known: ALLOC"));
        assert!(event_mask(Some("0"), &[]).is_err());
    }
}
