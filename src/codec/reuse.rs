//! Re-using the upstream's own matches. A gzip page the proxy rewrites is mostly the upstream's bytes
//! with a few links changed, and the upstream (typically gzip -6) already searched those bytes for
//! repeats. The decoder reports each repeat it expands ([`Repeat`]); [`Reuse`] lines the rewritten
//! bytes up with the decoded ones (the stretches they share) and moves the upstream's parse inside
//! those stretches onto the rewritten stream as [`Hint`]s for the encoder. The encoder checks every
//! guided match against its own bytes, so a wrong line-up costs compression, never correctness; bytes
//! no hint covers (what the rules wrote) get the encoder's own search.

use memchr::memmem;

use super::deflate::common_prefix;
use super::Repeat;

/// How far back DEFLATE reaches: a source older than this is of no use.
const WINDOW: u64 = 32 * 1024;
/// Bytes compared to find where the two streams meet again after an edit.
const ANCHOR: usize = 8;
/// How far on the decoded side [`meet_again`] looks for bytes past a replaced stretch, nearest first:
/// links in a `srcset` are edits a few dozen bytes apart, so an anchor further on often lies in the next.
const REACHES: [usize; 8] = [8, 16, 24, 32, 48, 64, 96, 160];
/// How much further on the rewritten side the anchor may lie than on the decoded side.
const REACH_SLACK: usize = 128;
/// How far an inserted or removed stretch may run and still be found, by an anchor this long.
const FAR: usize = 8 * 1024;
const FAR_ANCHOR: usize = 16;
/// Decoded bytes that wait for the rewritten bytes they became: beyond this the oldest are let go.
const PENDING_CAP: usize = 64 * 1024;
/// Past this many edits, a body whose edits come closer than one per `DENSE_EDIT` bytes stops being
/// lined up: its matches would be few, and looking for them costs more than the encoder's own search.
const DENSE_AFTER_EDITS: u64 = 64;
const DENSE_EDIT: u64 = 48;

/// What the encoder does with `len` bytes of the rewritten stream from position `at`: take a match
/// `distance` back (as far as the bytes agree), or, with `distance` 0, search them itself (what the
/// rules wrote). Bytes no hint covers were the upstream's literals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hint {
    /// Position in the rewritten stream (the encoder's input), from the body's first byte.
    pub at: u64,
    /// How many bytes the hint covers.
    pub len: u32,
    /// How far back the match's source lies; 0: the encoder's own search.
    pub distance: u32,
}

/// A stretch the decoded and the rewritten streams share, byte for byte.
#[derive(Clone, Copy, Debug)]
struct Stretch {
    decoded_at: u64,
    rewritten_at: u64,
    len: u64,
}

impl Stretch {
    fn decoded_end(&self) -> u64 {
        self.decoded_at + self.len
    }
}

/// Lines a body's rewritten bytes up with its decoded bytes and moves the upstream's repeats across.
#[derive(Default)]
pub struct Reuse {
    /// Decoded bytes not lined up yet, from stream position `decoded_at`.
    pending: Vec<u8>,
    decoded_at: u64,
    /// Rewritten bytes seen so far.
    rewritten_at: u64,
    /// Lined-up stretches, oldest first; those a window behind `decoded_at` are let go in batches.
    stretches: Vec<Stretch>,
    /// Stretches let go from the front: a stretch's number counts them too.
    dropped: u64,
    /// Where to start looking for a decoded position's stretch (see [`Firsts`]).
    firsts: Firsts,
    /// The decoder's repeats, in stream order; those before `next_repeat` are done with.
    repeats: Vec<Repeat>,
    next_repeat: usize,
    /// Rewritten position up to which hints are given.
    hinted_to: u64,
    /// Times the streams had to be found again after an edit.
    edits: u64,
    /// Given up for this body (edits too dense to pay).
    off: bool,
}

impl Reuse {
    /// A line-up for one body.
    pub fn new() -> Reuse {
        Reuse::default()
    }

    /// Whether the repeats are still wanted.
    pub fn is_on(&self) -> bool {
        !self.off
    }

    /// Takes the decoder's repeats (in stream order), emptying `repeats`.
    pub fn add_repeats(&mut self, repeats: &mut Vec<Repeat>) {
        if !self.off {
            if self.next_repeat > self.repeats.len() / 2 {
                self.repeats.drain(..self.next_repeat);
                self.next_repeat = 0;
            }
            self.repeats.extend_from_slice(repeats);
        }
        repeats.clear();
    }

    /// Lines `rewritten` (the rules' output for the decoded bytes so far, `decoded` the newest of them)
    /// up with the decoded bytes, and writes the hints that guide its encoding into `hints` (cleared first).
    pub fn guide(&mut self, decoded: &[u8], rewritten: &[u8], hints: &mut Vec<Hint>) {
        hints.clear();
        if self.off {
            self.rewritten_at += rewritten.len() as u64;
            return;
        }
        // Decoded bytes are copied only when some wait from before, or to wait for what follows.
        let mut pending = std::mem::take(&mut self.pending);
        let waiting = !pending.is_empty();
        if waiting {
            pending.extend_from_slice(decoded);
        }
        let d: &[u8] = if waiting { &pending } else { decoded };
        let (mut i, mut j) = (0, 0);
        loop {
            let shared = common_prefix(&d[i..], &rewritten[j..], usize::MAX);
            if shared > 0 {
                let stretch = Stretch {
                    decoded_at: self.decoded_at + i as u64,
                    rewritten_at: self.rewritten_at + j as u64,
                    len: shared as u64,
                };
                self.line_up(stretch, hints);
                i += shared;
                j += shared;
            }
            if i == d.len() || j == rewritten.len() {
                break;
            }
            self.edits += 1;
            if self.too_dense(j) {
                break;
            }
            match meet_again(&d[i..], &rewritten[j..]) {
                Some((skip_decoded, skip_rewritten)) => {
                    i += skip_decoded;
                    j += skip_rewritten;
                }
                // What is left of this output is the encoder's to search, and counts as edited.
                None => {
                    // Both sides move on by what is left of this output: the next output then starts
                    // about where the decoded side stands, close enough to meet again.
                    let rest = rewritten.len() - j;
                    self.edits += (rest as u64).div_ceil(DENSE_EDIT);
                    i = (i + rest).min(d.len());
                    break;
                }
            }
        }
        if self.too_dense(j) {
            self.rewritten_at += rewritten.len() as u64;
            self.search_up_to(self.rewritten_at, hints);
            self.give_up();
            return;
        }
        let gone = d.len() - (d.len() - i).min(PENDING_CAP);
        if waiting {
            pending.drain(..gone);
        } else {
            pending.extend_from_slice(&decoded[gone..]);
        }
        self.pending = pending;
        self.decoded_at += gone as u64;
        // Repeats whose bytes were let go can guide nothing: they go too, so that what is kept stays
        // bounded by what waits.
        while self.repeats.get(self.next_repeat).is_some_and(|r| r.at + u64::from(r.length) <= self.decoded_at) {
            self.next_repeat += 1;
        }
        self.rewritten_at += rewritten.len() as u64;
        self.search_up_to(self.rewritten_at, hints);
        let oldest = self.decoded_at.saturating_sub(WINDOW);
        let old = self.stretches.partition_point(|s| s.decoded_end() < oldest);
        if old >= 256 {
            self.stretches.drain(..old);
            self.dropped += old as u64;
        }
    }

    /// Whether the edits so far (`j` bytes into this call's output) come too close to pay for lining up.
    fn too_dense(&self, j: usize) -> bool {
        let seen = self.rewritten_at + j as u64;
        self.edits >= DENSE_AFTER_EDITS && self.edits * DENSE_EDIT > seen
    }

    fn give_up(&mut self) {
        self.off = true;
        self.pending = Vec::new();
        self.stretches = Vec::new();
        self.repeats = Vec::new();
        self.next_repeat = 0;
    }

    /// Leaves the rewritten bytes from `hinted_to` to `to` to the encoder's own search.
    fn search_up_to(&mut self, to: u64, hints: &mut Vec<Hint>) {
        let mut at = self.hinted_to;
        while at < to {
            let len = (to - at).min(u64::from(u32::MAX));
            hints.push(Hint { at, len: len as u32, distance: 0 });
            at += len;
        }
        self.hinted_to = self.hinted_to.max(to);
    }

    /// Records `stretch` and moves the repeats inside it across, as hints. Any part of a repeat is a
    /// repeat at the same distance, so one cut by an edit still guides the stretches on either side.
    fn line_up(&mut self, stretch: Stretch, hints: &mut Vec<Hint>) {
        match self.stretches.last_mut() {
            Some(last)
                if last.decoded_end() == stretch.decoded_at && last.rewritten_at + last.len == stretch.rewritten_at =>
            {
                last.len += stretch.len
            }
            _ => self.stretches.push(stretch),
        }
        let number = self.dropped + self.stretches.len() as u64 - 1;
        self.firsts.map(stretch.decoded_end(), number);
        self.search_up_to(stretch.rewritten_at, hints);
        let (start, end) = (stretch.decoded_at, stretch.decoded_end());
        let moved = |at: u64| stretch.rewritten_at + (at - start);
        // The stretch `stretch` ended up in (itself, or the one it extends): a source in it keeps its distance.
        let newest = self.stretches[self.stretches.len() - 1].decoded_at;
        let mut next = self.next_repeat;
        while let Some(&repeat) = self.repeats.get(next) {
            if repeat.at >= end {
                break;
            }
            let repeat_end = repeat.at + u64::from(repeat.length);
            if repeat_end > start {
                // (A repeat that ends before the stretch had its bytes edited away.)
                let (from, to) = (repeat.at.max(start), repeat_end.min(end));
                let distance = u64::from(repeat.distance);
                if from >= newest + distance {
                    hints.push(Hint { at: moved(from), len: (to - from) as u32, distance: distance as u32 });
                } else {
                    self.move_repeat(from, to, distance, moved(from), hints);
                }
                if repeat_end > end {
                    break; // the rest belongs to the next stretch
                }
            }
            next += 1;
        }
        self.next_repeat = next;
        self.hinted_to = moved(end);
    }

    /// Hints for decoded bytes `from..to` (which went to `moved_from` on), a repeat at `distance`: one
    /// per stretch its source lies in, so that each holds byte for byte.
    fn move_repeat(&self, mut from: u64, to: u64, distance: u64, moved_from: u64, hints: &mut Vec<Hint>) {
        let start = from;
        while from < to {
            let at = moved_from + (from - start);
            let found = from.checked_sub(distance).and_then(|source| {
                let index = self.stretch_index(source);
                Some((source, *self.stretches.get(index)?))
            });
            let Some((source, stretch)) = found else {
                hints.push(Hint { at, len: (to - from) as u32, distance: 0 });
                return;
            };
            if stretch.decoded_at > source {
                // Its source was edited away here: searched, on to where the source is lined up again.
                let len = (stretch.decoded_at - source).min(to - from);
                hints.push(Hint { at, len: len as u32, distance: 0 });
                from += len;
                continue;
            }
            let len = (to - from).min(stretch.decoded_end() - source);
            let moved_distance = at.wrapping_sub(stretch.rewritten_at + (source - stretch.decoded_at));
            let distance = if (1..=WINDOW).contains(&moved_distance) { moved_distance as u32 } else { 0 };
            hints.push(Hint { at, len: len as u32, distance });
            from += len;
        }
    }
}

impl Reuse {
    /// The index of the first stretch that ends after decoded position `at` (`stretches.len()` if none).
    fn stretch_index(&self, at: u64) -> usize {
        let stretches = &self.stretches[..];
        match stretches.last() {
            // Within the newest stretch: a body with no edits nearby.
            Some(last) if last.decoded_at <= at => return stretches.len() - 1,
            Some(_) => {}
            None => return 0,
        }

        // Unknown: older than the ring, and so than any window.
        let Some(first) = self.firsts.first_at(at) else { return stretches.len() };
        let mut index = first.saturating_sub(self.dropped) as usize;
        while index < stretches.len() && stretches[index].decoded_end() <= at {
            index += 1;
        }
        index
    }
}

/// Decoded positions in blocks of [`BLOCK`] bytes, each with the number of the first stretch that ends
/// after the block's start, over a ring of the latest [`BLOCKS`] blocks: finding a repeat's source
/// starts there and steps past a few stretches, where a binary search over a window's stretches (one
/// per link on a page) cost more than the encoder's own search saved.
struct Firsts {
    /// (block number, stretch number), both modulo 2^32: an entry of an older lap reads as unknown, and
    /// one that aliases it (a body past 256 GiB) gives a wrong start, which makes the lookup miss its
    /// stretch (the bytes are searched) but never find a wrong one.
    ring: Box<[(u32, u32)]>,
    /// Blocks below this one are mapped.
    mapped: u64,
}

const BLOCK: u64 = 64;
/// 128 KiB of positions: more than a window plus what one call lines up.
const BLOCKS: usize = 2048;

impl Default for Firsts {
    fn default() -> Firsts {
        Firsts { ring: vec![(u32::MAX, 0); BLOCKS].into_boxed_slice(), mapped: 0 }
    }
}

impl Firsts {
    /// Blocks starting before `end` that are not mapped yet start at stretch `number`.
    fn map(&mut self, end: u64, number: u64) {
        while self.mapped * BLOCK < end {
            self.ring[self.mapped as usize % BLOCKS] = (self.mapped as u32, number as u32);
            self.mapped += 1;
        }
    }

    /// The stretch number to start from for decoded position `at`, if its block is in the ring.
    fn first_at(&self, at: u64) -> Option<u64> {
        let block = at / BLOCK;
        let (tag, number) = self.ring[block as usize % BLOCKS];
        (tag == block as u32).then_some(u64::from(number))
    }
}

/// How many trailing bytes `a` and `b` share; eight at a time.
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    let max = a.len().min(b.len());
    let (a, b) = (&a[a.len() - max..], &b[b.len() - max..]);
    let mut n = 0;
    while n + 8 <= max {
        let word = |s: &[u8]| u64::from_be_bytes(s[max - n - 8..max - n].try_into().expect("eight bytes"));
        let differ = word(a) ^ word(b);
        if differ != 0 {
            return n + (differ.trailing_zeros() / 8) as usize;
        }
        n += 8;
    }
    n + a[..max - n].iter().rev().zip(b[..max - n].iter().rev()).take_while(|(x, y)| x == y).count()
}

/// Where the eight bytes of `anchor` first occur in `hay` (a few hundred bytes): memchr for the first
/// byte, then one compare. A `memmem` searcher costs more to build than this search over so few bytes.
fn find_anchor(hay: &[u8], anchor: &[u8]) -> Option<usize> {
    let anchor = u64::from_le_bytes(anchor.try_into().expect("an eight-byte anchor"));
    let last = hay.len().checked_sub(ANCHOR)?;
    memchr::memchr_iter(anchor as u8, &hay[..=last])
        .find(|&at| u64::from_le_bytes(hay[at..at + ANCHOR].try_into().expect("eight bytes")) == anchor)
}

/// Where `decoded` and `rewritten`, which differ at their first byte, meet again: how many bytes of
/// each to skip. Tried in turn: a short replacement (the bytes some [`REACHES`] on in `decoded` found near the
/// start of `rewritten`, then backed up to where the two agree), an insertion (`decoded`'s start found
/// further on in `rewritten`), a removal (`rewritten`'s start found further on in `decoded`).
fn meet_again(decoded: &[u8], rewritten: &[u8]) -> Option<(usize, usize)> {
    for reach in REACHES {
        if decoded.len() < reach + ANCHOR {
            break;
        }
        let near = &rewritten[..rewritten.len().min(reach + REACH_SLACK)];
        if let Some(found) = find_anchor(near, &decoded[reach..reach + ANCHOR]) {
            let back = common_suffix(&decoded[..reach], &rewritten[..found]);
            return Some((reach - back, found - back));
        }
    }
    if decoded.len() >= FAR_ANCHOR {
        if let Some(found) = memmem::find(&rewritten[..rewritten.len().min(FAR)], &decoded[..FAR_ANCHOR]) {
            return Some((0, found));
        }
    }
    if rewritten.len() >= FAR_ANCHOR {
        if let Some(found) = memmem::find(&decoded[..decoded.len().min(FAR)], &rewritten[..FAR_ANCHOR]) {
            return Some((found, 0));
        }
    }
    None
}

#[cfg(test)]
#[path = "reuse_tests.rs"]
mod tests;
