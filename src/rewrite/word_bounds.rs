//! Word boundaries at a literal rule's ends (see `plain_text`). Without `u` and `i` together, JavaScript's
//! `\w` is ASCII letters, digits and `_`, so the byte on either side of the needle decides (a character past
//! ASCII is a non-word character, and so are all its bytes); the body's start and end count as non-word
//! characters.

/// Which ends of a literal rule's needle must be word boundaries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct WordBounds {
    pub(super) start: bool,
    pub(super) end: bool,
}

/// Whether an occurrence of a needle is a match.
pub(super) enum Bounded {
    Yes,
    No,
    /// The byte after it has not arrived yet.
    Unknown,
}

/// `\b` as the translator writes it (see `js_regex`).
const WORD_BOUNDARY: &str = r"(?-u:\b)";

fn is_word(byte: Option<&u8>) -> bool {
    byte.is_some_and(|&b| WORD[usize::from(b)] != 0)
}

/// 1 for the bytes of word characters, 0 for the others.
static WORD: [u8; 256] = {
    let mut table = [0; 256];
    let mut byte = 0;
    while byte < 256 {
        table[byte] = (byte as u8).is_ascii_alphanumeric() as u8 | (byte == b'_' as usize) as u8;
        byte += 1;
    }
    table
};

/// A needle's bounds as `literal_run`'s loop tests them, in one byte: which ends must be boundaries and
/// whether the needle's own byte at each is a word character.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct NeedleBounds(u8);

const START: u8 = 1;
const FIRST_IS_WORD: u8 = 2;
const END: u8 = 4;
const LAST_IS_WORD: u8 = 8;

impl NeedleBounds {
    pub(super) fn of(bounds: WordBounds, needle: &[u8]) -> NeedleBounds {
        let flag = |on: bool, bit: u8| if on { bit } else { 0 };
        NeedleBounds(
            flag(bounds.start, START)
                | flag(bounds.start && is_word(needle.first()), FIRST_IS_WORD)
                | flag(bounds.end, END)
                | flag(bounds.end && is_word(needle.last()), LAST_IS_WORD),
        )
    }

    #[inline(always)]
    pub(super) fn any(self) -> bool {
        self.0 != 0
    }

    /// Whether the needle cannot match right after `byte` (its start bound fails there).
    pub(super) fn fails_before(self, byte: u8) -> bool {
        self.0 & START != 0 && is_word(Some(&byte)) == (self.0 & FIRST_IS_WORD != 0)
    }

    /// Whether the needle cannot match right before `byte` (its end bound fails there).
    pub(super) fn fails_after(self, byte: u8) -> bool {
        self.0 & END != 0 && is_word(Some(&byte)) == (self.0 & LAST_IS_WORD != 0)
    }

    /// Whether the needle found at `hay[start..end]` has its bounds; `before` as for [`WordBounds::check`].
    /// The byte at `end` must be in `hay` (the loop stops well before the data's end). Without branches but
    /// the body's first byte: a word list's matches test it ~10,000 times a page.
    #[inline(always)]
    pub(super) fn hold(self, hay: &[u8], before: Option<u8>, start: usize, end: usize) -> bool {
        let previous = match start {
            0 => before.map_or(0, |byte| WORD[usize::from(byte)]),
            _ => WORD[usize::from(hay[start - 1])],
        };
        // The bytes beside the match as the flags have the needle's own: a bounded end holds where they differ.
        let beside = (previous * FIRST_IS_WORD) | (WORD[usize::from(hay[end])] * LAST_IS_WORD);
        let bounded = (self.0 & (START | END)) << 1;
        (beside ^ self.0) & bounded == bounded
    }
}

impl WordBounds {
    /// The bounds and the rest of a translated pattern that begins or ends with `\b`.
    pub(super) fn split(pattern: &str) -> Option<(WordBounds, &str)> {
        let (start, rest) = pattern.strip_prefix(WORD_BOUNDARY).map_or((false, pattern), |rest| (true, rest));
        let (end, rest) = rest.strip_suffix(WORD_BOUNDARY).map_or((false, rest), |rest| (true, rest));
        (start || end).then_some((WordBounds { start, end }, rest))
    }

    pub(super) fn any(self) -> bool {
        self.start || self.end
    }

    /// Whether `needle`, found at `hay[start..]`, has its bounds; `before` is the byte before `hay` (`None`:
    /// the body's start), `last` whether the body ends with `hay`.
    pub(super) fn check(self, needle: &[u8], hay: &[u8], before: Option<u8>, start: usize, last: bool) -> Bounded {
        if self.start {
            let previous = match start {
                0 => before,
                _ => Some(hay[start - 1]),
            };
            if is_word(previous.as_ref()) == is_word(needle.first()) {
                return Bounded::No;
            }
        }
        if self.end {
            let next = match hay.get(start + needle.len()) {
                Some(byte) => Some(byte),
                None if last => None,
                None => return Bounded::Unknown,
            };
            if is_word(next) == is_word(needle.last()) {
                return Bounded::No;
            }
        }
        Bounded::Yes
    }

    /// Whether a rule with these bounds and `needle` may share a search with an earlier literal rule
    /// (`earlier`'s needle, output and bounds): in turn this rule reads the written bytes beside its match
    /// where the earlier rule's match touches it, the shared search the needle's. So at each bounded end,
    /// the earlier needle's byte there and its output's must be word characters alike, or the two matches
    /// cannot touch there: the earlier rule's own bound beside it passed only on a byte of the other kind
    /// than this needle's (whole words replaced by `<b>word</b>`).
    pub(super) fn see_alike(self, needle: &[u8], earlier: (&[u8], &[u8], WordBounds)) -> bool {
        let (earlier_needle, output, earlier_bounds) = earlier;
        let start_safe = !self.start
            || is_word(earlier_needle.last()) == is_word(output.last())
            || earlier_bounds.end && is_word(needle.first()) == is_word(earlier_needle.last());
        let end_safe = !self.end
            || is_word(earlier_needle.first()) == is_word(output.first())
            || earlier_bounds.start && is_word(needle.last()) == is_word(earlier_needle.first());
        start_safe && end_safe
    }
}
