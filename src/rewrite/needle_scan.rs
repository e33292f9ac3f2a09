//! A literal set's matches found in one pass for the loop that replaces them (`LiteralSet::replace_run`):
//! the candidates of a block of positions at once from [`Fingerprints`], and at each candidate the needle
//! that starts there from a table keyed by its first bytes (one hash, then a compare of 8 bytes for most
//! needles). A search that starts over after every match (aho-corasick's) is the fastest where matches are
//! rare, but where they are dense its restart is most of the cost of a match.

use super::fingerprint::{BlockLoop, Fingerprints, BLOCK};

/// The needles of a set, by where they may start and by their first bytes.
#[derive(Debug, Clone)]
pub(super) struct NeedleScan {
    fingerprints: Fingerprints,
    /// Bytes of a needle's start that pick its slot: the shortest needle's length, at most 4.
    key_len: usize,
    /// Those bytes of a little-endian word.
    key_mask: u32,
    /// `32 - log2(slots)`: the hash's top bits pick the slot.
    shift: u32,
    /// Per slot, the first needle (lowest index) whose key falls in it, [`NONE`] for none.
    slots: Vec<u32>,
    heads: Vec<Head>,
    /// In lower case where `any_case`.
    needles: Vec<Box<[u8]>>,
    /// ASCII letters match in either case: the hay's bytes are folded to lower case before they are compared.
    any_case: bool,
}

/// A needle's first 8 bytes as a little-endian word, for one compare.
#[derive(Debug, Clone)]
struct Head {
    first: u64,
    /// The bytes of `first` that belong to the needle.
    mask: u64,
    len: u32,
    /// The next needle (by index) in the same slot, or [`NONE`].
    next: u32,
}

const NONE: u32 = u32::MAX;

impl NeedleScan {
    /// `None` where the fingerprints would not run on vector instructions (one by one they lose to
    /// aho-corasick's search) or a needle is empty.
    pub(super) fn new(needles: &[&[u8]]) -> Option<NeedleScan> {
        NeedleScan::build(needles, false)
    }

    /// The same for needles whose ASCII letters match in either case.
    pub(super) fn any_case(needles: &[&[u8]]) -> Option<NeedleScan> {
        NeedleScan::build(needles, true)
    }

    fn build(needles: &[&[u8]], any_case: bool) -> Option<NeedleScan> {
        let folded: Vec<Vec<u8>> = needles.iter().map(|n| folded(n, any_case)).collect();
        let needles: Vec<&[u8]> = folded.iter().map(Vec::as_slice).collect();
        let fingerprints = if any_case { Fingerprints::any_case(&needles) } else { Fingerprints::new(&needles) };
        let fingerprints = fingerprints.filter(Fingerprints::vectorised)?;
        let key_len = needles.iter().map(|n| n.len()).min()?.min(4);
        let bits = (needles.len() * 4).next_power_of_two().max(16).trailing_zeros();
        let shift = 32 - bits;
        let mut slots = vec![NONE; 1 << bits];
        let mut heads: Vec<Head> = needles
            .iter()
            .map(|n| {
                let len = n.len().min(8);
                let mut first = [0u8; 8];
                first[..len].copy_from_slice(&n[..len]);
                let mask = if len == 8 { u64::MAX } else { (1u64 << (8 * len)) - 1 };
                Head { first: u64::from_le_bytes(first), mask, len: n.len() as u32, next: NONE }
            })
            .collect();
        // Pushed in reverse so each slot lists its needles by index: the lowest matching one wins, as in
        // aho-corasick's leftmost-first search.
        for (index, needle) in needles.iter().enumerate().rev() {
            let slot = hash(key(needle, key_len), shift);
            heads[index].next = slots[slot];
            slots[slot] = index as u32;
        }
        let needles = needles.iter().map(|n| Box::from(*n)).collect();
        let key_mask = u32::MAX >> (8 * (4 - key_len));
        Some(NeedleScan { fingerprints, key_len, key_mask, shift, slots, heads, needles, any_case })
    }

    /// The needles that start at `from` or after and before `end`, leftmost first, each with its index.
    pub(super) fn starts<'a>(&'a self, hay: &'a [u8], from: usize, end: usize) -> Starts<'a> {
        let mut starts = Starts { scan: self, hay, base: from, bits: 0, end: end.min(hay.len()) };
        (starts.base, starts.bits) = starts.advance(from);
        starts
    }

    /// Runs `body` with the fingerprints' blocks (see [`Fingerprints::drive`]).
    pub(super) fn drive<L: BlockLoop>(&self, hay: &[u8], body: L) -> L::Output {
        self.fingerprints.drive(hay, body)
    }

    /// The length of needle `index`.
    pub(super) fn len(&self, index: usize) -> usize {
        self.heads[index].len as usize
    }

    /// The needle (the lowest index of those) that starts at `at` in `hay`.
    #[inline(always)]
    pub(super) fn needle_at(&self, hay: &[u8], at: usize) -> Option<usize> {
        let word = hay.get(at..at + 8).map(|w| {
            let word = u64::from_le_bytes(w.try_into().expect("8 bytes"));
            if self.any_case {
                to_lower_case(word)
            } else {
                word
            }
        });
        let key = match word {
            Some(word) => word as u32 & self.key_mask,
            None => {
                let start = hay.get(at..at + self.key_len)?;
                match self.any_case {
                    true => key(&start.to_ascii_lowercase(), self.key_len),
                    false => key(start, self.key_len),
                }
            }
        };
        let mut index = self.slots[hash(key, self.shift)];
        while index != NONE {
            let head = &self.heads[index as usize];
            let found = match word {
                Some(word) => {
                    word & head.mask == head.first
                        && (head.len <= 8 || self.starts_with(&hay[at + 8..], &self.needles[index as usize][8..]))
                }
                None => self.starts_with(&hay[at..], &self.needles[index as usize]),
            };
            if found {
                return Some(index as usize);
            }
            index = head.next;
        }
        None
    }

    /// Whether `hay` starts with `needle` (folded where `any_case`).
    fn starts_with(&self, hay: &[u8], needle: &[u8]) -> bool {
        match hay.get(..needle.len()) {
            Some(start) if self.any_case => start.eq_ignore_ascii_case(needle),
            Some(start) => start == needle,
            None => false,
        }
    }

    pub(super) fn memory_usage(&self) -> usize {
        self.slots.len() * 4
            + self.heads.len() * std::mem::size_of::<Head>()
            + self.needles.iter().map(|n| n.len() + 16).sum::<usize>()
    }
}

fn key(bytes: &[u8], len: usize) -> u32 {
    let mut key = [0u8; 4];
    key[..len].copy_from_slice(&bytes[..len]);
    u32::from_le_bytes(key)
}

/// The word's ASCII capitals in lower case, eight bytes at once: a byte's low seven bits plus 0x3f carry into
/// its top bit from `A` up, plus 0x25 from past `Z`; a byte with its own top bit set is no letter.
fn to_lower_case(word: u64) -> u64 {
    const LOW_SEVEN: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const TOP: u64 = 0x8080_8080_8080_8080;
    let low = word & LOW_SEVEN;
    let from_a = low + 0x3f3f_3f3f_3f3f_3f3f;
    let past_z = low + 0x2525_2525_2525_2525;
    let capitals = from_a & !past_z & !word & TOP;
    word | capitals >> 2
}

/// `text` in lower case where `any_case` (ASCII letters only), as it is otherwise.
pub(super) fn folded(text: &[u8], any_case: bool) -> Vec<u8> {
    if any_case {
        text.to_ascii_lowercase()
    } else {
        text.to_vec()
    }
}

fn hash(key: u32, shift: u32) -> usize {
    (key.wrapping_mul(0x9E37_79B1) >> shift) as usize
}

/// The needles found from a position on (see [`NeedleScan::starts`]).
pub(super) struct Starts<'a> {
    scan: &'a NeedleScan,
    hay: &'a [u8],
    /// The first position of the current block.
    base: usize,
    /// The block's candidates not yet looked at.
    bits: u32,
    end: usize,
}

impl Starts<'_> {
    /// Leaves out the candidates before `at` (inside a match just replaced).
    pub(super) fn skip_to(&mut self, at: usize) {
        if at >= self.base + BLOCK {
            (self.base, self.bits) = self.advance(at);
        } else if at > self.base {
            self.bits &= u32::MAX << (at - self.base);
        }
    }

    /// From `p` on, the first block with a candidate before the end, as (its first position, those
    /// candidates); the end and no candidates where there is none.
    fn advance(&self, mut p: usize) -> (usize, u32) {
        let fingerprints = &self.scan.fingerprints;
        while p < self.end {
            let (at, bits) = fingerprints.next_block(self.hay, p, self.end);
            // Past the blocks that fit: the last positions one by one.
            let (at, bits) = match (bits, at < self.end) {
                (0, true) => (at, fingerprints.scalar_block(self.hay, at)),
                _ => (at, bits),
            };
            let bits = match self.end.saturating_sub(at) {
                left if left < BLOCK => bits & ((1 << left) - 1),
                _ => bits,
            };
            if bits != 0 {
                return (at, bits);
            }
            p = at + BLOCK;
        }
        (self.end, 0)
    }
}

impl Iterator for Starts<'_> {
    /// Where a needle starts, and which.
    type Item = (usize, usize);

    #[inline(always)]
    fn next(&mut self) -> Option<(usize, usize)> {
        loop {
            while self.bits != 0 {
                let at = self.base + self.bits.trailing_zeros() as usize;
                self.bits &= self.bits - 1;
                if let Some(index) = self.scan.needle_at(self.hay, at) {
                    return Some((at, index));
                }
            }
            if self.base + BLOCK >= self.end {
                return None;
            }
            (self.base, self.bits) = self.advance(self.base + BLOCK);
        }
    }
}

/// Appends `bytes[from..to]` to `out`; a short run as one fixed 16-byte copy cut back (a call to `memcpy`
/// for a few bytes cost as much as finding the match).
#[inline]
pub(super) fn copy_short(out: &mut Vec<u8>, bytes: &[u8], from: usize, to: usize) {
    let len = out.len();
    match bytes.get(from..from + 16) {
        Some(block) if to - from <= 16 => {
            out.extend_from_slice(block);
            out.truncate(len + to - from);
        }
        _ => out.extend_from_slice(&bytes[from..to]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rewrite::seeded::seeded;

    /// Numbers below `n` from a xorshift generator started at `seed`.
    fn random(seed: u64) -> impl FnMut(u64) -> usize {
        let mut next = seeded(seed);
        move |n| next(n as usize)
    }

    #[test]
    fn finds_what_a_plain_search_finds() {
        let mut next = random(0x9e37_79b9_7f4a_7c15);
        for _ in 0..3000 {
            let needles: Vec<Vec<u8>> =
                (0..1 + next(12)).map(|_| (0..1 + next(12)).map(|_| b"abcd"[next(4)]).collect()).collect();
            let refs: Vec<&[u8]> = needles.iter().map(|n| &n[..]).collect();
            let scan = NeedleScan::new(&refs).expect("vectors here");
            let hay: Vec<u8> = (0..next(200)).map(|_| b"abcde"[next(5)]).collect();
            let from = next(hay.len() as u64 + 1);
            let end = from + next((hay.len() - from) as u64 + 1);
            let expected: Vec<(usize, usize)> = (from..end)
                .filter_map(|at| refs.iter().position(|n| hay[at..].starts_with(n)).map(|index| (at, index)))
                .collect();
            let found: Vec<(usize, usize)> = scan.starts(&hay, from, end).collect();
            assert_eq!(found, expected, "{needles:?} in {hay:?} from {from} to {end}");
            // Skipping ahead leaves out exactly the starts before the new position.
            let skip = from + next((end - from) as u64 + 40);
            let mut starts = scan.starts(&hay, from, end);
            starts.skip_to(skip);
            let after: Vec<(usize, usize)> = expected.iter().copied().filter(|&(at, _)| at >= skip).collect();
            assert_eq!(starts.collect::<Vec<_>>(), after);
        }
    }

    #[test]
    fn finds_in_any_case_what_a_plain_search_finds() {
        let mut next = random(0x2545_f491_4f6c_dd1d);
        // Letters in both cases and the bytes next to them (`@[`{`), and bytes whose low seven bits are letters.
        let alphabet = b"abAB-@[`{\xc1\xe1";
        for _ in 0..3000 {
            let needles: Vec<Vec<u8>> = (0..1 + next(12))
                .map(|_| (0..1 + next(12)).map(|_| alphabet[next(alphabet.len() as u64)]).collect())
                .collect();
            let refs: Vec<&[u8]> = needles.iter().map(|n| &n[..]).collect();
            let scan = NeedleScan::any_case(&refs).expect("vectors here");
            let hay: Vec<u8> = (0..next(200)).map(|_| alphabet[next(alphabet.len() as u64)]).collect();
            let from = next(hay.len() as u64 + 1);
            let end = from + next((hay.len() - from) as u64 + 1);
            let expected: Vec<(usize, usize)> = (from..end)
                .filter_map(|at| {
                    let starts = |n: &&[u8]| hay.get(at..at + n.len()).is_some_and(|h| h.eq_ignore_ascii_case(n));
                    refs.iter().position(starts).map(|index| (at, index))
                })
                .collect();
            let found: Vec<(usize, usize)> = scan.starts(&hay, from, end).collect();
            assert_eq!(found, expected, "{needles:?} in {hay:?} from {from} to {end}");
        }
    }

    #[test]
    fn words_fold_as_their_bytes_do() {
        for byte in 0..=255u8 {
            let word = u64::from_le_bytes([byte, b'Z', byte, b'@', b'[', byte, 0xc1, byte]);
            let mut folded = word.to_le_bytes();
            folded.make_ascii_lowercase();
            assert_eq!(to_lower_case(word), u64::from_le_bytes(folded), "{byte:#x}");
        }
    }

    #[test]
    fn short_copies_write_the_same_bytes() {
        let bytes: Vec<u8> = (0..40).collect();
        for from in 0..40 {
            for to in from..=40 {
                let mut out = vec![7];
                copy_short(&mut out, &bytes, from, to);
                assert_eq!(out[1..], bytes[from..to]);
            }
        }
    }
}
