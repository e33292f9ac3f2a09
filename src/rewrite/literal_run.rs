//! The loop that replaces a literal set's matches where every member is global (a match is the needle, with
//! its word bounds where it has them): a word list over text finds one every ~10 bytes, so what a match costs beyond
//! copying its bytes is most of the stage's time. The loop keeps its state in registers, gets its blocks of
//! candidates from vector code inlined into it (see `Fingerprints::drive`), passes over the candidates
//! inside a match by a test instead of masking them out (so that finding the next match does not wait for
//! this one's end), and writes into the output's spare room without a length update per copy.

use super::fingerprint::{BlockLoop, Blocks, BLOCK};
use super::needle_scan::NeedleScan;
use super::word_bounds::NeedleBounds;

/// Where `LiteralSet::replace_run` starts and where it left off.
pub(super) struct Progress {
    /// Where the search goes on.
    pub(super) from: usize,
    /// The input's bytes before this are written out.
    pub(super) emitted: usize,
    /// Matches replaced, counted on.
    pub(super) replaced: u64,
    /// No member can match any more.
    pub(super) finished: bool,
}

impl Progress {
    pub(super) fn at(from: usize, emitted: usize, replaced: u64) -> Progress {
        Progress { from, emitted, replaced, finished: false }
    }
}

/// What the loop needs of a member at its match, in one place.
#[derive(Debug, Clone, Copy)]
pub(super) struct DenseMember {
    needle_len: u32,
    /// Its output in the set's `outputs`.
    output: (u32, u32),
    /// The bytes after and before its match (bits of `byte % 64`) that may make a watched pair (see
    /// `literal_watch::Watch`); any other, and the match stands.
    watch_next: u64,
    watch_prev: u64,
    bounds: NeedleBounds,
}

impl DenseMember {
    pub(super) fn new(
        needle_len: usize,
        output: (usize, usize),
        (watch_next, watch_prev): (u64, u64),
        bounds: NeedleBounds,
    ) -> Option<DenseMember> {
        let narrow = |n: usize| u32::try_from(n).ok();
        Some(DenseMember {
            needle_len: narrow(needle_len)?,
            output: (narrow(output.0)?, narrow(output.1)?),
            watch_next,
            watch_prev,
            bounds,
        })
    }
}

/// One call of the loop (see `LiteralSet::replace_run`, whose contract it keeps).
pub(super) struct DenseRun<'a, W> {
    pub(super) members: &'a [DenseMember],
    pub(super) scan: &'a NeedleScan,
    /// The members' outputs end to end, 16 bytes more after the last.
    pub(super) outputs: &'a [u8],
    pub(super) hay: &'a [u8],
    /// The byte before `hay` (`None`: the body's start), for word bounds.
    pub(super) before: Option<u8>,
    pub(super) at: Progress,
    /// Matches that start here or later are left to the search one match at a time.
    pub(super) limit: usize,
    /// Whether a watched pair is found at the match of a member at a position, the input written out up to
    /// a byte (see `LiteralSet::watched`).
    pub(super) watched: W,
    /// Whether some member watches the byte before its match (see `DenseMember`): the loop without that test
    /// is compiled apart, for the sets that need none.
    pub(super) watches_before: bool,
    /// The members' match counts, and the member last replaced.
    pub(super) matches: &'a mut [u64],
    pub(super) current: &'a mut usize,
    pub(super) out: &'a mut Vec<u8>,
}

impl<W: Fn(usize, usize, usize) -> bool> BlockLoop for DenseRun<'_, W> {
    type Output = Progress;

    #[inline(always)]
    fn run<B: Blocks>(self, blocks: B) -> Progress {
        match self.watches_before {
            true => self.replace::<B, true>(blocks),
            false => self.replace::<B, false>(blocks),
        }
    }
}

impl<W: Fn(usize, usize, usize) -> bool> DenseRun<'_, W> {
    #[inline(always)]
    fn replace<B: Blocks, const WATCHES_BEFORE: bool>(self, blocks: B) -> Progress {
        let DenseRun { members, scan, outputs, hay, before, mut at, limit, watched, matches, current, out, .. } = self;
        let mut output = Output { len: out.len(), out };
        // Cut to `members`' length: once `members[member]` is checked, `matches[member]` needs no check of its own.
        let matches = &mut matches[..members.len()];
        // Two blocks at a time: the loop over a block's candidates ends where the CPU cannot guess it, so
        // the fewer ends the better.
        let pair = |p: usize| u64::from(blocks.block(p)) | u64::from(blocks.block(p + BLOCK)) << BLOCK;
        let mut base = at.from;
        let mut bits = if base < limit { pair(base) } else { 0 };
        let mut stopped = false;
        'matches: loop {
            while bits == 0 {
                base += 2 * BLOCK;
                if base >= limit {
                    break 'matches;
                }
                bits = pair(base);
            }
            let start = base + bits.trailing_zeros() as usize;
            if start >= limit {
                break;
            }
            bits &= bits - 1;
            // A candidate inside the last match. Tested rather than masked out of `bits`: the next candidate
            // then does not wait for this match's end, and the CPU works on several matches at once.
            if start < at.emitted {
                continue;
            }
            let Some(member) = scan.needle_at(hay, start) else { continue };
            let DenseMember { needle_len, output: (from, to), watch_next, watch_prev, bounds } = members[member];
            let end = start + needle_len as usize;
            // Not a match: the text stays, and a later candidate may start inside it.
            if bounds.any() && !bounds.hold(hay, before, start, end) {
                continue;
            }
            let near_before = if WATCHES_BEFORE { watch_prev & 1 << (hay[start.saturating_sub(1)] % 64) } else { 0 };
            let near = watch_next & 1 << (hay[end] % 64) | near_before;
            if near != 0 && watched(start, member, at.emitted) {
                // The search one match at a time finds it again and says what it needs.
                (at.from, stopped) = (start, true);
                break;
            }
            output.append(hay, at.emitted, start, outputs, from as usize, to as usize);
            at.emitted = end;
            at.replaced += 1;
            matches[member] += 1;
            // Stored, not kept: the loop has no register to spare.
            *current = member;
        }
        output.finish();
        if !stopped {
            at.from = at.from.max(at.emitted).max(limit);
        }
        at
    }
}

/// The output while the loop writes it: `out`'s first `len` bytes are written, its length is set when done.
struct Output<'a> {
    out: &'a mut Vec<u8>,
    len: usize,
}

impl Output<'_> {
    /// Appends `hay[gap_from..gap_to]`, then `outputs[from..to]` (which holds 16 bytes more after every
    /// member's output). A run of up to 16 bytes goes as one fixed 16-byte copy, the bytes past it written
    /// over by the next copy or left past the length.
    #[inline(always)]
    fn append(&mut self, hay: &[u8], gap_from: usize, gap_to: usize, outputs: &[u8], from: usize, to: usize) {
        let (gap, output_len) = (gap_to - gap_from, to - from);
        let room = gap.max(16) + output_len.max(16);
        if self.out.capacity() - self.len < room {
            // SAFETY: the first `len` bytes were written by earlier appends (or were there), so the reserve
            // keeps them.
            unsafe { self.out.set_len(self.len) };
            self.out.reserve(room);
        }
        assert!(gap_to <= hay.len() && to + 16 <= outputs.len());
        // SAFETY: `room` bytes are spare from `len` (reserved above), and the copies write at most
        // `gap.max(16)` from there, then from `len + gap` at most `output_len.max(16)`. The fixed copies read
        // 16 bytes inside `hay` (checked) and `outputs` (16 bytes past every output, asserted), the others
        // inside them (asserted); `out` cannot overlap either, being borrowed mutably.
        unsafe {
            let dst = self.out.as_mut_ptr().add(self.len);
            if gap <= 16 && gap_from + 16 <= hay.len() {
                copy_16(hay.as_ptr().add(gap_from), dst);
            } else {
                std::ptr::copy_nonoverlapping(hay.as_ptr().add(gap_from), dst, gap);
            }
            if output_len <= 16 {
                copy_16(outputs.as_ptr().add(from), dst.add(gap));
            } else {
                std::ptr::copy_nonoverlapping(outputs.as_ptr().add(from), dst.add(gap), output_len);
            }
        }
        self.len += gap + output_len;
    }

    fn finish(self) {
        // SAFETY: `len` is within the capacity (every append reserved its room first) and every byte below
        // it was written by `append` or was there before.
        unsafe { self.out.set_len(self.len) };
    }
}

/// Copies 16 bytes as one load and one store (a `memcpy` call of a variable length cost more than the match).
///
/// # Safety
/// `src` must be readable and `dst` writable for 16 bytes.
#[inline(always)]
unsafe fn copy_16(src: *const u8, dst: *mut u8) {
    // SAFETY: as the caller promises; unaligned reads and writes are allowed for `[u8; 16]`.
    unsafe { dst.cast::<[u8; 16]>().write_unaligned(src.cast::<[u8; 16]>().read_unaligned()) }
}
