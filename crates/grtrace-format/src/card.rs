//! The identity of a GPU: its DRM card number, the N of `/dev/dri/cardN`, of the kernel's
//! `grtrace/cardN` directory and of the stream header's `card` field.
//!
//! The number is spelled `cardN` everywhere a person reads it (file names of several cards,
//! headings, labels, messages): [`Card`]'s `Display`. What a user may type for it (`-d`) is
//! its `FromStr`: `card1`, `1` or `/dev/dri/card1`.
//!
//! ```
//! use grtrace_format::Card;
//!
//! let card: Card = "/dev/dri/card1".parse().unwrap();
//! assert_eq!((card, card.to_string()), (Card(1), "card1".to_string()));
//! assert_eq!("1".parse::<Card>(), Ok(Card(1)));
//! assert!("renderD128".parse::<Card>().unwrap_err().to_string().contains("render node"));
//! assert_eq!(
//!     "gpu".parse::<Card>().unwrap_err().to_string(),
//!     "`gpu` is not a card: give card1, 1 or /dev/dri/card1"
//! );
//! ```

use std::fmt;
use std::str::FromStr;

/// A DRM card number (`card1` is `Card(1)`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Card(pub u32);

impl Card {
    /// The number (the stream header's and the kernel's `u32`).
    pub const fn number(self) -> u32 {
        self.0
    }

    /// The card a name in [`Display`](fmt::Display)'s form stands for, and only that form:
    /// `card1` (not `1`, `card01` or a path), as in file and directory names.
    pub fn from_label(s: &str) -> Option<Card> {
        s.strip_prefix("card").and_then(number).map(Card)
    }
}

impl From<u32> for Card {
    fn from(n: u32) -> Card {
        Card(n)
    }
}

impl From<Card> for u32 {
    fn from(c: Card) -> u32 {
        c.0
    }
}

impl fmt::Display for Card {
    /// `card1`: as DRM names the primary node. A width pads the whole label.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.width().is_some() {
            f.pad(&format!("card{}", self.0))
        } else {
            write!(f, "card{}", self.0)
        }
    }
}

/// A device name that is no card ([`Card`]'s `FromStr`): the message says what was given and
/// what would do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CardError {
    given: String,
}

impl fmt::Display for CardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Control characters escaped: the message stays on one line.
        let given: String = self
            .given
            .chars()
            .flat_map(|c| {
                let esc = c.is_control().then(|| c.escape_default());
                esc.into_iter()
                    .flatten()
                    .chain((!c.is_control()).then_some(c))
            })
            .collect();
        let base = self.given.rsplit('/').next().unwrap_or(&self.given);
        if base.starts_with("renderD") {
            write!(
                f,
                "`{given}` is a render node: give the card (card1, 1 or /dev/dri/card1)"
            )
        } else {
            write!(
                f,
                "`{given}` is not a card: give card1, 1 or /dev/dri/card1"
            )
        }
    }
}

impl std::error::Error for CardError {}

/// The digits of `s` as a card number: decimal digits only, no sign, no leading zero.
fn number(s: &str) -> Option<u32> {
    let plain =
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'));
    plain.then(|| s.parse().ok()).flatten()
}

impl FromStr for Card {
    type Err = CardError;

    /// `card1`, `1`, or a path whose last part is `card1` (`/dev/dri/card1`).
    fn from_str(s: &str) -> Result<Card, CardError> {
        let err = || CardError {
            given: s.to_string(),
        };
        match s.rsplit_once('/') {
            Some((_, base)) => Card::from_label(base),
            None => Card::from_label(s).or_else(|| number(s).map(Card)),
        }
        .ok_or_else(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cards_are_read_in_the_three_forms_and_shown_in_one() {
        for s in ["card1", "1", "/dev/dri/card1", "dri/card1"] {
            assert_eq!(s.parse::<Card>(), Ok(Card(1)), "{s}");
        }
        assert_eq!("card0".parse::<Card>(), Ok(Card(0)));
        assert_eq!("card4294967295".parse::<Card>(), Ok(Card(u32::MAX)));
        assert_eq!(Card(12).to_string(), "card12");
        assert_eq!(Card::from_label("card12"), Some(Card(12)));
        for not_a_label in ["12", "card012", "/dev/dri/card1", "card", "cards"] {
            assert_eq!(Card::from_label(not_a_label), None, "{not_a_label}");
        }
        assert_eq!(format!("{:<7}|", Card(3)), "card3  |");
        for bad in [
            "",
            "card",
            "card-1",
            "card+1",
            "card01",
            "01",
            "/dev/dri/1",
            "/dev/dri/",
            "cardx",
            "card4294967296",
            "renderD128",
            "/dev/dri/renderD128",
            " 1",
        ] {
            let e = bad.parse::<Card>().unwrap_err().to_string();
            assert!(e.contains("card1, 1 or /dev/dri/card1"), "{bad}: {e}");
        }
        let e = "/dev/dri/renderD128"
            .parse::<Card>()
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "`/dev/dri/renderD128` is a render node: give the card (card1, 1 or /dev/dri/card1)"
        );
        assert!("a\nb"
            .parse::<Card>()
            .unwrap_err()
            .to_string()
            .contains("a\\nb"));
    }
}
