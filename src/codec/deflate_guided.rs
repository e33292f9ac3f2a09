//! [`FastDeflate`] guided by the upstream's parse (`codec::reuse`): where a hint says a match, the
//! match is checked against the bytes and taken as far as they agree (up to DEFLATE's longest, past
//! the hint); where it says search, and where a match does not hold, the encoder searches as it does
//! unguided; bytes no hint covers go out as literals, with no search. The result is a stream as valid
//! as an unguided one whatever the hints say.

use super::{
    common_prefix, remember_end, search_step, FastDeflate, Histogram, TokenSink, BLOCK_TOKENS, MAX_MATCH, PIECE, WINDOW,
};
use crate::codec::reuse::Hint;

/// DEFLATE's shortest match; our own search asks for [`super::MIN_MATCH`], a hint's match may be shorter.
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
        let Histogram { litlen, dist } = &mut *self.freq;
        let mut sink = TokenSink { tokens: &mut self.tokens, litlen, dist, n: self.token_count };
        let mut k = *next;
        while pos < end && sink.n < BLOCK_TOKENS {
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
                            sink.matched(dist, len);
                            // Where our own search most often finds the next repeat.
                            remember_end(buf, head, base, pos, len);
                            pos += len;
                            continue;
                        }
                    }
                    // What the rules wrote, the rest of a match entered midway, or a match that does
                    // not hold: searched like any other position.
                }
                next => {
                    // The upstream's literals, up to the next hint.
                    let run_end = next
                        .map_or(end, |hint| ((hint.at - origin) as usize).min(end))
                        .min(pos + (BLOCK_TOKENS - sink.n));
                    for &byte in &buf[pos..run_end] {
                        sink.literal(byte);
                    }
                    pos = run_end;
                    continue;
                }
            }
            pos = search_step(buf, head, base, pos, &mut sink);
        }
        self.token_count = sink.n;
        *next = k;
        pos
    }
}
