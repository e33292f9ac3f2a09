//! The steps both of [`super::FastDeflate`]'s tokenizing loops take (its own search, and the one guided by
//! the upstream's matches): one probe of the hash table, a token into the block with its symbols counted,
//! and the match's end remembered.

use super::{
    common_prefix, distance_symbol, hash_at, read_u32, BLOCK_TOKENS, DIST_SYMBOLS, LENGTH_SYMBOLS, LITLEN_SYMBOLS,
    MATCH, MAX_MATCH, MIN_MATCH, WINDOW,
};

/// Where the tokenizing loops put the current block's tokens and count their symbols.
pub(super) struct TokenSink<'a> {
    pub(super) tokens: &'a mut [u32; BLOCK_TOKENS + MIN_MATCH],
    pub(super) litlen: &'a mut [u32; LITLEN_SYMBOLS],
    pub(super) dist: &'a mut [u32; DIST_SYMBOLS],
    /// Tokens so far (`tokens[..n]`).
    pub(super) n: usize,
}

impl TokenSink<'_> {
    #[inline(always)]
    pub(super) fn literal(&mut self, byte: u8) {
        self.tokens[self.n] = u32::from(byte);
        self.litlen[usize::from(byte)] += 1;
        self.n += 1;
    }

    /// A match of `len` (3..=258) bytes, `dist` (1..=32768) back.
    #[inline(always)]
    pub(super) fn matched(&mut self, dist: usize, len: usize) {
        let d = (dist - 1) as u32;
        let dist_symbol = distance_symbol(d);
        self.tokens[self.n] = MATCH | dist_symbol << 24 | (len as u32) << 15 | d;
        self.litlen[257 + usize::from(LENGTH_SYMBOLS[len].0)] += 1;
        self.dist[dist_symbol as usize] += 1;
        self.n += 1;
    }
}

/// Our search at `pos` (at least [`MIN_MATCH`] bytes before the buffer's end): one probe of the table,
/// which then holds `pos`; the match `(distance, length)` if the candidate's bytes really repeat.
#[inline(always)]
pub(super) fn search(buf: &[u8], head: &mut [u32], base: u64, pos: usize) -> Option<(usize, usize)> {
    let here = (base + pos as u64) as u32;
    // Entries hold the low 32 bits of stream positions, so the distance is taken modulo 2^32.
    // A candidate must lie in the buffer and in the window, and its bytes must really repeat:
    // a stale or aliased entry costs a probe, never a wrong stream.
    let dist = here.wrapping_sub(std::mem::replace(&mut head[hash_at(buf, pos)], here)) as usize;
    if !((1..=WINDOW.min(pos)).contains(&dist) && read_u32(buf, pos - dist) == read_u32(buf, pos)) {
        return None;
    }
    let from = pos - dist;
    Some((dist, MIN_MATCH + common_prefix(&buf[from + MIN_MATCH..], &buf[pos + MIN_MATCH..], MAX_MATCH - MIN_MATCH)))
}

/// One step of our search at `pos`: the match found there (its end remembered too) or the byte as a literal,
/// into `sink`; where the next step starts. Where no match fits before the buffer's end, a literal.
#[inline(always)]
pub(super) fn search_step(buf: &[u8], head: &mut [u32], base: u64, pos: usize, sink: &mut TokenSink) -> usize {
    match (pos + MIN_MATCH <= buf.len()).then(|| search(buf, head, base, pos)).flatten() {
        Some((dist, len)) => {
            sink.matched(dist, len);
            remember_end(buf, head, base, pos, len);
            pos + len
        }
        None => {
            sink.literal(buf[pos]);
            pos + 1
        }
    }
}

/// Remembers where the match of `len` bytes at `pos` ends too: the next repeat often starts there (1.3%
/// smaller).
#[inline(always)]
pub(super) fn remember_end(buf: &[u8], head: &mut [u32], base: u64, pos: usize, len: usize) {
    let last = pos + len - 2;
    if last + MIN_MATCH <= buf.len() {
        head[hash_at(buf, last)] = (base + last as u64) as u32;
    }
}
