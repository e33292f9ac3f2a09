//! The pairs a shared literal search watches (see `literals::group`): members that give the same output in
//! one search as in turn unless a pair meets across a match's end, and what is looked at, at a match, to tell.
//!
//! - After a match: another member's needle whose start is in the match's own bytes or its replacement's
//!   (`header` then `rewrite`; `new-1.example.net` then `token`), and whose rest follows.
//! - Before a match: a later member's needle that ends where the match's replacement begins (`domai` then
//!   `new-...` makes `domain` in turn). Its first part stands in the text before the match, which the search
//!   has passed but not yet written: the rules run in turn from there.
//! - A chain: that first part may begin in an earlier match, in what the later rule reads there (the earlier
//!   match's replacement where that member comes before it, its needle where it comes after:
//!   `new-1.example.ne|t` + `oke` + `new-2...` makes `token`). It is looked for at the earlier match, ahead:
//!   the rules run in turn from that match, whose replacement is not yet written.

use super::hay::Next;

/// What a set watches, per member (see the module's doc).
#[derive(Debug, Clone, Default)]
pub(super) struct Watch {
    /// Per member: (byte, other member) where the other's needle from that byte on may follow its match.
    after: Vec<Vec<(u32, u32)>>,
    /// Per member: the [`Preceding`] parts whose needle's rest begins its replacement.
    before: Vec<Vec<u32>>,
    preceding: Vec<Preceding>,
    /// Per member: (a [`Preceding`] part, how many of its first bytes the member's text ends with) where that
    /// part may begin inside the member's match.
    chains: Vec<Vec<(u32, u32)>>,
    /// Per member, the bytes (as bits of `byte % 64`) after its match that may make a pair; no bits, none.
    next: Vec<u64>,
    /// Per member, the same for the byte before its match.
    prev: Vec<u64>,
    /// See [`Watch::pair_reach`].
    reach: usize,
    /// The members' needles (none where nothing is watched), and whether they match any case.
    needles: Vec<Box<[u8]>>,
    any_case: bool,
    /// Per member, the [`Preceding`] parts of its own needle.
    parts_of: Vec<Vec<u32>>,
    /// The bytes a [`Preceding`] part may begin with (both cases where the members match any case).
    part_starts: Vec<bool>,
}

/// The first `len` bytes of member `other`'s needle, whose rest begins the replacement of each member of `on`.
#[derive(Debug, Clone)]
struct Preceding {
    other: u32,
    len: u32,
    on: Vec<u32>,
}

/// A member's match as the watch looks at it.
#[derive(Debug, Clone, Copy)]
pub(super) struct MatchAt {
    pub(super) start: usize,
    pub(super) member: usize,
    /// The input before this is written out: the end of the last match, or where the search began.
    pub(super) emitted: usize,
}

/// What a search knows of the body at a match: see [`Watch::at_match`].
pub(super) struct Body<'a> {
    pub(super) hay: &'a [u8],
    pub(super) last: bool,
    pub(super) max_match: usize,
    pub(super) done: &'a [bool],
}

impl Watch {
    /// `after`: per member, (byte, other) pairs; `before`: (member, other, bytes) where `other`'s needle's
    /// first bytes may stand before the member's match. Texts are compared folded where `any_case`.
    pub(super) fn new(
        needles: &[&[u8]],
        outputs: &[&[u8]],
        after: Vec<Vec<(u32, u32)>>,
        before: &[(u32, u32, u32)],
        any_case: bool,
    ) -> Watch {
        let n = needles.len();
        let folded = |text: &[u8]| if any_case { text.to_ascii_lowercase() } else { text.to_vec() };
        let bits = |byte: u8| match any_case {
            true => 1 << (byte.to_ascii_lowercase() % 64) | 1 << (byte.to_ascii_uppercase() % 64),
            false => 1u64 << (byte % 64),
        };
        let mut watch = Watch {
            next: vec![0; n],
            prev: vec![0; n],
            before: vec![Vec::new(); n],
            chains: vec![Vec::new(); n],
            parts_of: vec![Vec::new(); n],
            ..Watch::default()
        };
        for (member, pairs) in after.iter().enumerate() {
            for &(overlap, other) in pairs {
                watch.next[member] |= bits(needles[other as usize][overlap as usize]);
            }
        }
        watch.after = after;
        watch.after.resize(n, Vec::new());
        let mut parts = std::collections::HashMap::new();
        for &(on, other, len) in before {
            let index = *parts.entry((other, len)).or_insert_with(|| {
                watch.preceding.push(Preceding { other, len, on: Vec::new() });
                watch.preceding.len() - 1
            });
            if watch.preceding[index].on.is_empty() {
                watch.parts_of[other as usize].push(index as u32);
            }
            watch.preceding[index].on.push(on);
            watch.before[on as usize].push(index as u32);
            watch.prev[on as usize] |= bits(needles[other as usize][len as usize - 1]);
        }
        watch.part_starts = vec![false; 256];
        for part in &watch.preceding {
            let byte = needles[part.other as usize][0];
            let cases = if any_case { [byte.to_ascii_lowercase(), byte.to_ascii_uppercase()] } else { [byte, byte] };
            for byte in cases {
                watch.part_starts[usize::from(byte)] = true;
            }
        }
        watch.reach = watch
            .preceding
            .iter()
            .map(|part| {
                let longest = part.on.iter().map(|&on| needles[on as usize].len()).max().unwrap_or(1);
                part.len as usize + longest - 1
            })
            .max()
            .unwrap_or(0);
        // Where the needle's first part may begin inside a match: in what the later rule reads there, the
        // member's replacement where it comes first, its needle where it comes after. Both kinds of text
        // reversed and sorted: the ones that end with a part's first `q` bytes are one run of each.
        let reversed = |text: &[u8]| folded(text).into_iter().rev().collect::<Vec<u8>>();
        let sorted = |texts: &[&[u8]]| {
            let mut ends: Vec<(Vec<u8>, usize)> = texts.iter().enumerate().map(|(m, t)| (reversed(t), m)).collect();
            ends.sort_unstable();
            ends
        };
        let (ends_of_outputs, ends_of_needles) = (sorted(outputs), sorted(needles));
        for (index, part) in watch.preceding.iter().enumerate() {
            let other = part.other as usize;
            let first = folded(&needles[other][..part.len as usize]);
            for taken in 1..=first.len() {
                let key: Vec<u8> = first[..taken].iter().rev().copied().collect();
                let ending = |ends: &'_ [(Vec<u8>, usize)]| -> Vec<usize> {
                    let from = ends.partition_point(|(end, _)| end.as_slice() < key.as_slice());
                    ends[from..].iter().take_while(|(end, _)| end.starts_with(&key)).map(|&(_, m)| m).collect()
                };
                let earlier = ending(&ends_of_outputs).into_iter().filter(|&m| m < other);
                for member in earlier.chain(ending(&ends_of_needles).into_iter().filter(|&m| m > other)) {
                    watch.chains[member].push((index as u32, taken as u32));
                    watch.next[member] |= match first.get(taken) {
                        Some(&byte) => bits(byte),
                        None => part.on.iter().map(|&on| bits(needles[on as usize][0])).fold(0, |a, b| a | b),
                    };
                }
            }
        }
        let watches = watch.next.iter().chain(&watch.prev).any(|&bits| bits != 0);
        if watches {
            watch.needles = needles.iter().map(|&needle| Box::from(needle)).collect();
        }
        watch.any_case = any_case;
        watch
    }

    /// How many bytes a watched needle's first part and the needle after it may span, less one.
    pub(super) fn pair_reach(&self) -> usize {
        self.reach
    }

    /// Whether `tail` (the data's last bytes) may begin a needle's first part watched before a match, with
    /// that match after it.
    pub(super) fn begins_a_pair(&self, tail: &[u8]) -> bool {
        let same = |a: &[u8], b: &[u8]| if self.any_case { a.eq_ignore_ascii_case(b) } else { a == b };
        if !tail.first().is_some_and(|&byte| self.part_starts[usize::from(byte)]) {
            return false;
        }
        self.preceding.iter().any(|part| {
            let first = &self.needles[part.other as usize][..part.len as usize];
            if tail.len() <= first.len() {
                return same(tail, &first[..tail.len()]);
            }
            let rest = &tail[first.len()..];
            if !same(&tail[..first.len()], first) {
                return false;
            }
            part.on.iter().any(|&on| {
                let needle = &self.needles[on as usize];
                rest.len() < needle.len() && same(rest, &needle[..rest.len()])
            })
        })
    }

    /// Whether some member's match is watched for what comes before it.
    pub(super) fn watches_before(&self) -> bool {
        !self.preceding.is_empty()
    }

    /// The bytes after a match of `member` that may make a pair (bits of `byte % 64`).
    pub(super) fn next_bits(&self, member: usize) -> u64 {
        self.next.get(member).copied().unwrap_or(0)
    }

    /// The bytes before a match of `member` that may make a pair.
    pub(super) fn prev_bits(&self, member: usize) -> u64 {
        self.prev.get(member).copied().unwrap_or(0)
    }

    /// At a match of `at.member` at `at.start`: [`Next::InTurn`] where a watched pair is found, [`Next::Pending`]
    /// where the data may end inside one (both from [`Watch::boundary`]), `None` where the match stands.
    pub(super) fn at_match(&self, body: &Body, at: MatchAt) -> Option<Next> {
        if self.needles.is_empty() {
            return None;
        }
        let Body { hay, last, max_match, done } = *body;
        let same = |a: &[u8], b: &[u8]| if self.any_case { a.eq_ignore_ascii_case(b) } else { a == b };
        // A member that would leave its match alone (first-match-only and had, or too long) is no threat.
        let threat = |member: u32| !done[member as usize] && self.needles[member as usize].len() <= max_match;
        let MatchAt { start, member, emitted } = at;
        let end = start + self.needles[member].len();
        // Before: the needle's first part in the text since the last match. (Where it would begin inside that
        // match, the chain was looked for there.)
        let before = self.before.get(member).into_iter().flatten().any(|&index| {
            let part = &self.preceding[index as usize];
            let (len, needle) = (part.len as usize, &self.needles[part.other as usize]);
            threat(part.other) && start >= emitted + len && same(&hay[start - len..start], &needle[..len])
        });
        // What must follow the match for each pair, as one or two texts.
        let mut pending = false;
        let mut follows = |wanted: &[&[u8]]| -> bool {
            let mut after = &hay[end..];
            for text in wanted {
                let n = text.len().min(after.len());
                if !same(&after[..n], &text[..n]) {
                    return false;
                }
                if n < text.len() {
                    pending |= !last;
                    return false;
                }
                after = &after[n..];
            }
            true
        };
        let mut found = before;
        for &(overlap, other) in self.after.get(member).into_iter().flatten() {
            found = found || threat(other) && follows(&[&self.needles[other as usize][overlap as usize..]]);
        }
        // A chain: the part's rest, then the match its needle's rest would begin, in the text as it is or
        // itself across a replacement's start (then that needle's own first part stands there).
        for &(index, taken) in self.chains.get(member).into_iter().flatten() {
            let part = &self.preceding[index as usize];
            if found || !threat(part.other) {
                continue;
            }
            let gap = &self.needles[part.other as usize][taken as usize..part.len as usize];
            for &on in part.on.iter().filter(|&&on| !done[on as usize]) {
                let needle = &self.needles[on as usize];
                let own_part = |p: &u32| &needle[..self.preceding[*p as usize].len as usize];
                found = found
                    || follows(&[gap, needle])
                    || self.parts_of[on as usize].iter().any(|p| follows(&[gap, own_part(p)]));
            }
        }
        let from = || self.boundary(hay, emitted, start);
        match (found, pending) {
            (true, _) => Some(Next::InTurn(from())),
            (false, true) => Some(Next::Pending(from())),
            (false, false) => None,
        }
    }

    /// Where the rules in turn (or the held bytes) begin for a pair found at a match at `start`: at the first
    /// byte of a watched needle's first part that the text since `emitted` holds up to `start`, else at
    /// `start`. A later rule's match from there would cross `start`: into this match's replacement, or into one
    /// that the shared search passed over for this match. That match, found in turn, may need another part
    /// before it in the same way (`ab` + `b` + `aa` when `baa` matches across `bbbb`'s replacement `a...`, and
    /// `aba` across `baa`'s `a-b`): the search goes back until no part reaches the place found.
    pub(super) fn boundary(&self, hay: &[u8], emitted: usize, start: usize) -> usize {
        let same = |a: &[u8], b: &[u8]| if self.any_case { a.eq_ignore_ascii_case(b) } else { a == b };
        let reaching = |to: usize| {
            let parts = self.preceding.iter().map(|part| &self.needles[part.other as usize][..part.len as usize]);
            let starts = parts.filter_map(|first| {
                let earliest = to.saturating_sub(first.len()).max(emitted);
                (earliest..to).find(|&s| same(&hay[s..to], &first[..to - s]))
            });
            starts.min()
        };
        let mut from = start;
        while let Some(earlier) = reaching(from) {
            from = earlier;
        }
        from
    }
}
