//! [`FastDeflate`] guided by the upstream's parse (`codec::reuse`): where a hint says a match, the
//! match is checked against the bytes and taken as far as they agree (up to DEFLATE's longest, past
//! the hint); where it says search, and where a match does not hold, the encoder searches as it does
//! unguided; bytes no hint covers go out as literals, with no search. The result is a stream as valid
//! as an unguided one whatever the hints say.

use super::{
    common_prefix, distance_symbol, hash_at, read_u32, FastDeflate, Histogram, BLOCK_TOKENS, LENGTH_SYMBOLS, MATCH,
    MAX_MATCH, MIN_MATCH, PIECE, WINDOW,
};
use crate::codec::reuse::Hint;

/// DEFLATE's shortest match; our own search asks for [`MIN_MATCH`], a hint's match may be shorter.
const SHORTEST_MATCH: usize = 3;

impl FastDeflate {
    /// Like [`FastDeflate::compress`], following `hints` (in stream order, positions counted in the
    /// stream this state compresses) where they apply.
    pub(in crate::codec) fn compress_guided(&mut self, input: &[u8], hints: &[Hint], out: &mut Vec<u8>) {
        let mut next = 0;
        for piece in input.chunks(PIECE) {
            let mut pos = self.take_piece(piece);
            while pos < self.buf.len() {
                pos = self.tokenize_guided(pos, hints, &mut next);
                if self.token_count >= BLOCK_TOKENS {
                    self.write_block(false, out);
                }
            }
        }
    }

    fn tokenize_guided(&mut self, pos: usize, hints: &[Hint], next: &mut usize) -> usize {
        #[cfg(target_arch = "x86_64")]
        if super::has_bmi() {
            // SAFETY: the CPU has the features `tokenize_guided_bmi` is compiled for (checked just above).
            return unsafe { self.tokenize_guided_bmi(pos, hints, next) };
        }
        self.tokenize_guided_with(pos, hints, next)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "bmi1,bmi2,lzcnt")]
    fn tokenize_guided_bmi(&mut self, pos: usize, hints: &[Hint], next: &mut usize) -> usize {
        self.tokenize_guided_with(pos, hints, next)
    }

    /// Turns `buf[pos..]` into tokens until the block is full or the buffer ends; returns where it stopped.
    #[inline(always)]
    fn tokenize_guided_with(&mut self, mut pos: usize, hints: &[Hint], next: &mut usize) -> usize {
        let buf = &self.buf[..];
        let head = &mut self.head[..];
        let base = self.base;
        let end = buf.len();
        // Stream position of `buf[0]`.
        let origin = self.total_in - end as u64;
        let tokens = &mut *self.tokens;
        let mut n = self.token_count;
        let Histogram { litlen, dist: dist_freq } = &mut *self.freq;
        let mut k = *next;
        while pos < end && n < BLOCK_TOKENS {
            let at = origin + pos as u64;
            // Hints behind us (a match ran over them) are dropped.
            while hints.get(k).is_some_and(|h| h.at + u64::from(h.len.max(1)) <= at) {
                k += 1;
            }
            match hints.get(k) {
                Some(hint) if hint.at <= at => {
                    let dist = hint.distance as usize;
                    if hint.at == at && (1..=pos.min(WINDOW)).contains(&dist) {
                        // Past the hint's end too: where the rules made the same edit at the source and
                        // here (every link of a page), the repeat goes on across it.
                        let len = common_prefix(&buf[pos - dist..], &buf[pos..], MAX_MATCH);
                        if len >= SHORTEST_MATCH {
                            let d = (dist - 1) as u32;
                            let dist_symbol = distance_symbol(d);
                            tokens[n] = MATCH | dist_symbol << 24 | (len as u32) << 15 | d;
                            litlen[257 + usize::from(LENGTH_SYMBOLS[len].0)] += 1;
                            dist_freq[dist_symbol as usize] += 1;
                            // The match's end is where our own search most often finds the next repeat.
                            let last = pos + len - 2;
                            if last + MIN_MATCH <= end {
                                head[hash_at(buf, last)] = (base + last as u64) as u32;
                            }
                            pos += len;
                            n += 1;
                            continue;
                        }
                    }
                    // What the rules wrote, the rest of a match entered midway, or a match that does
                    // not hold: searched like any other position.
                }
                next => {
                    // The upstream's literals, up to the next hint.
                    let run_end =
                        next.map_or(end, |hint| ((hint.at - origin) as usize).min(end)).min(pos + (BLOCK_TOKENS - n));
                    for &byte in &buf[pos..run_end] {
                        tokens[n] = u32::from(byte);
                        litlen[usize::from(byte)] += 1;
                        n += 1;
                    }
                    pos = run_end;
                    continue;
                }
            }
            if pos + MIN_MATCH > end {
                tokens[n] = u32::from(buf[pos]);
                litlen[usize::from(buf[pos])] += 1;
                pos += 1;
                n += 1;
                continue;
            }
            let here = (base + pos as u64) as u32;
            // As in `tokenize_with`: a stale or aliased entry costs a probe, never a wrong stream.
            let dist = here.wrapping_sub(std::mem::replace(&mut head[hash_at(buf, pos)], here)) as usize;
            if (1..=WINDOW.min(pos)).contains(&dist) && read_u32(buf, pos - dist) == read_u32(buf, pos) {
                let from = pos - dist;
                let len =
                    MIN_MATCH + common_prefix(&buf[from + MIN_MATCH..], &buf[pos + MIN_MATCH..], MAX_MATCH - MIN_MATCH);
                let d = (dist - 1) as u32;
                let dist_symbol = distance_symbol(d);
                tokens[n] = MATCH | dist_symbol << 24 | (len as u32) << 15 | d;
                litlen[257 + usize::from(LENGTH_SYMBOLS[len].0)] += 1;
                dist_freq[dist_symbol as usize] += 1;
                let last = pos + len - 2;
                if last + MIN_MATCH <= end {
                    head[hash_at(buf, last)] = (base + last as u64) as u32;
                }
                pos += len;
            } else {
                tokens[n] = u32::from(buf[pos]);
                litlen[usize::from(buf[pos])] += 1;
                pos += 1;
            }
            n += 1;
        }
        self.token_count = n;
        *next = k;
        pos
    }
}
