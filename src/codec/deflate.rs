//! A DEFLATE encoder (RFC 1951) built for one job: compressing rewritten pages fast, at least as small
//! as zlib level 1 (what nginx sends). Greedy matching with one hash probe per position, matches
//! compared eight bytes at a time, into a buffer of tokens; then each block's Huffman codes are built
//! from the histogram counted on the way (dynamic codes, or the static ones when those come out
//! smaller), and the tokens are written with a bit writer that lives in registers.
//!
//! Why our own: it streams (sync flush, bounded memory) and takes less CPU per page than zlib-rs
//! level 1 for a smaller output; libdeflate is smaller but compresses whole buffers only, and ISA-L,
//! faster, does not cross-build for `npm/`'s packages. Numbers: benches/RESULTS.md, "Module notes".

use super::huffman::{canonical_codes, huffman_lengths, run_lengths};

#[path = "deflate_guided.rs"]
mod guided;
#[path = "deflate_tokens.rs"]
mod tokens;
use tokens::{remember_end, search_step, TokenSink};

/// How far back a match may reach (the DEFLATE window).
const WINDOW: usize = 32 * 1024;
const MIN_MATCH: usize = 4;
const MAX_MATCH: usize = 258;
/// 32 Ki entries: 128 KiB of table stays in L2 (other sizes measured: benches/RESULTS.md, "Module notes").
const HASH_BITS: u32 = 15;
/// Input is compressed in pieces of at most this size.
const PIECE: usize = 64 * 1024;
/// The buffer takes input until it holds this much, then moves the last window to its front: one
/// 32 KiB move per ~128 KiB of input, however small the pieces.
const BUF_CAPACITY: usize = WINDOW + 2 * PIECE;
/// Tokens (literals and matches) per block: each block gets codes fitted to its own histogram. See
/// the block-size note in benches/RESULTS.md ("Encoders").
const BLOCK_TOKENS: usize = 16 * 1024;
/// Literal/length symbols (0..=285) and distance symbols (0..=29).
const LITLEN_SYMBOLS: usize = 286;
const DIST_SYMBOLS: usize = 30;
const END_OF_BLOCK: usize = 256;
/// A token is a literal byte, or `MATCH | distance symbol << 24 | length << 15 | (distance - 1)`.
const MATCH: u32 = 1 << 31;
// No lazy matching: with the five-byte hash (`hash_at`) it saved 1-2% of the bytes for 8-18% more
// time per page (benches/RESULTS.md, "Module notes").

const LENGTH_BASE: [u32; 29] =
    [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258];
const LENGTH_EXTRA: [u32; 29] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
const DIST_EXTRA: [u32; 30] =
    [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13];
/// The order code-length code lengths are sent in (RFC 1951 3.2.7).
const CODE_LENGTH_ORDER: [usize; 19] = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];

/// The length symbol's index (0..29, symbol 257 + index) and extra-bit value for lengths 3..=258.
const fn length_symbols() -> [(u8, u8); MAX_MATCH + 1] {
    let mut table = [(0, 0); MAX_MATCH + 1];
    let mut index = 0;
    while index < 29 {
        let mut extra = 0;
        while extra < 1 << LENGTH_EXTRA[index] {
            let len = (LENGTH_BASE[index] + extra) as usize;
            // 258 fits symbol 284 with extra 31 too, but RFC 1951 gives it symbol 285.
            if len < MAX_MATCH || index == 28 {
                table[len] = (index as u8, extra as u8);
            }
            extra += 1;
        }
        index += 1;
    }
    table
}

static LENGTH_SYMBOLS: [(u8, u8); MAX_MATCH + 1] = length_symbols();

/// The static code lengths (RFC 1951 3.2.6): literal/length symbols 0..=287 (286 and 287 take part
/// in the canonical code though they never occur), then the 30 distance symbols.
const fn static_lengths() -> [u8; 288 + DIST_SYMBOLS] {
    let mut lens = [5; 288 + DIST_SYMBOLS];
    let mut s = 0;
    while s < 288 {
        lens[s] = match s {
            0..=143 => 8,
            144..=255 => 9,
            256..=279 => 7,
            _ => 8,
        };
        s += 1;
    }
    lens
}

static STATIC_LENGTHS: [u8; 288 + DIST_SYMBOLS] = static_lengths();

/// The distance symbol for `d` = distance - 1 (0..32768).
#[inline(always)]
fn distance_symbol(d: u32) -> u32 {
    if d < 4 {
        return d;
    }
    let extra_bits = 30 - d.leading_zeros(); // floor(log2 d) - 1
    2 * (extra_bits + 1) + ((d >> extra_bits) & 1)
}

/// The table slot for position `at`: a hash of its five bytes, or of four within eight bytes of the
/// buffer's end (candidates are compared byte by byte either way). Five bytes made the bench page
/// smaller than four (benches/RESULTS.md, "Module notes"): with four, short fragments that repeat
/// everywhere in HTML (`="h`, `</a>`) take over the entries of the longer repeats that start with them.
#[inline(always)]
fn hash_at(buf: &[u8], at: usize) -> usize {
    if at + 8 <= buf.len() {
        // The five bytes at `at` in the top of the word: the multiply's high bits depend on all of them.
        let word = read_u64(buf, at) << 24;
        (word.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - HASH_BITS)) as usize
    } else {
        (read_u32(buf, at).wrapping_mul(0x9E37_79B1) >> (32 - HASH_BITS)) as usize
    }
}

#[inline(always)]
fn read_u64(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("eight bytes"))
}

#[inline(always)]
fn read_u32(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("four bytes"))
}

/// A raw DEFLATE stream in the making. Framing (gzip, zlib) is the caller's.
pub(super) struct FastDeflate {
    /// Up to a window of history, then the piece being compressed.
    buf: Vec<u8>,
    /// Stream position of `buf[0]`. It keeps growing across [`FastDeflate::reset`], so the hash table
    /// never needs clearing: entries from an earlier stream lie before `base` and are ignored.
    base: u64,
    /// Low 32 bits of the last stream position seen for each hash of four bytes. A candidate is
    /// taken only within the buffer, so entries left by an earlier stream or by a fresh table (0)
    /// are never used.
    head: Box<[u32]>,
    /// The current block's tokens (`tokens[..token_count]`) and their symbols' frequencies.
    tokens: Box<[u32; BLOCK_TOKENS + MIN_MATCH]>,
    token_count: usize,
    freq: Box<Histogram>,
    bits: u64,
    bit_count: u32,
    total_in: u64,
}

impl FastDeflate {
    pub(super) fn new() -> FastDeflate {
        // An empty table entry reads as position 0: streams start after it.
        FastDeflate::starting_at(1)
    }

    fn starting_at(position: u64) -> FastDeflate {
        FastDeflate {
            buf: Vec::with_capacity(BUF_CAPACITY),
            base: position,
            head: vec![0; 1 << HASH_BITS].into_boxed_slice(),
            // Room for a block and the up to three literals that end a piece.
            tokens: Box::new([0; BLOCK_TOKENS + MIN_MATCH]),
            token_count: 0,
            freq: Box::new(Histogram::EMPTY),
            bits: 0,
            bit_count: 0,
            total_in: 0,
        }
    }

    /// Readies the state for a new stream; what it writes then is what a new state would write (until
    /// positions pass 4 GiB and old entries may alias: verified like any other, they cost a probe).
    pub(super) fn reset(&mut self) {
        self.base += self.buf.len() as u64;
        self.buf.clear();
        self.token_count = 0;
        *self.freq = Histogram::EMPTY;
        self.bits = 0;
        self.bit_count = 0;
        self.total_in = 0;
    }

    /// Uncompressed bytes taken since the stream began.
    #[cfg(test)]
    pub(super) fn total_in(&self) -> u64 {
        self.total_in
    }

    pub(super) fn compress(&mut self, input: &[u8], out: &mut Vec<u8>) {
        for piece in input.chunks(PIECE) {
            let mut pos = self.take_piece(piece);
            while pos < self.buf.len() {
                pos = self.tokenize(pos);
                if self.token_count >= BLOCK_TOKENS {
                    self.write_block(false, out);
                }
            }
        }
    }

    /// Appends `piece` (at most [`PIECE`] bytes) to the buffer, keeping a window before it; returns
    /// where it starts in the buffer.
    fn take_piece(&mut self, piece: &[u8]) -> usize {
        self.total_in += piece.len() as u64;
        if self.buf.len() + piece.len() > BUF_CAPACITY {
            let gone = self.buf.len() - WINDOW;
            self.buf.drain(..gone);
            self.base += gone as u64;
        }
        let start = self.buf.len();
        self.buf.extend_from_slice(piece);
        start
    }

    /// Ends the current block and writes an empty stored block (a zlib sync flush): the client can
    /// decode everything given so far.
    pub(super) fn sync_flush(&mut self, out: &mut Vec<u8>) {
        if self.token_count > 0 {
            self.write_block(false, out);
        }
        self.put(0b000, 3, out); // BFINAL 0, BTYPE 00: stored
        self.align(out);
        out.extend_from_slice(&[0, 0, 0xFF, 0xFF]); // LEN 0, NLEN !0
    }

    pub(super) fn finish(&mut self, out: &mut Vec<u8>) {
        if self.token_count > 0 {
            self.write_block(true, out);
        } else {
            self.put(0b011, 3, out); // BFINAL 1, static Huffman codes
            self.put(0, 7, out); // end of block
        }
        self.align(out);
    }

    fn put(&mut self, code: u32, len: u32, out: &mut Vec<u8>) {
        put_bits(&mut self.bits, &mut self.bit_count, code, len, out);
    }

    fn align(&mut self, out: &mut Vec<u8>) {
        let bytes = self.bit_count.div_ceil(8) as usize;
        out.extend_from_slice(&self.bits.to_le_bytes()[..bytes]);
        self.bits = 0;
        self.bit_count = 0;
    }

    /// Turns `buf[pos..]` into tokens until the block is full or the buffer ends; returns where it
    /// stopped. Matches stop at the end of the buffer; its last three bytes are literals.
    fn tokenize(&mut self, pos: usize) -> usize {
        #[cfg(target_arch = "x86_64")]
        if has_bmi() {
            // SAFETY: the CPU has the features `tokenize_bmi` is compiled for (checked just above).
            return unsafe { self.tokenize_bmi(pos) };
        }
        self.tokenize_with(pos)
    }

    /// [`FastDeflate::tokenize`] compiled for BMI1/BMI2/LZCNT (shifts and bit counts in one instruction).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "bmi1,bmi2,lzcnt")]
    fn tokenize_bmi(&mut self, pos: usize) -> usize {
        self.tokenize_with(pos)
    }

    #[inline(always)]
    fn tokenize_with(&mut self, mut pos: usize) -> usize {
        let buf = &self.buf[..];
        let head = &mut self.head[..];
        let base = self.base;
        let end = buf.len();
        let Histogram { litlen, dist } = &mut *self.freq;
        let mut sink = TokenSink { tokens: &mut self.tokens, litlen, dist, n: self.token_count };
        while pos + MIN_MATCH <= end && sink.n < BLOCK_TOKENS {
            pos = search_step(buf, head, base, pos, &mut sink);
        }
        if pos + MIN_MATCH > end {
            for &byte in &buf[pos..] {
                sink.literal(byte);
            }
            pos = end;
        }
        self.token_count = sink.n;
        pos
    }

    /// Writes the block of tokens gathered so far, with codes fitted to them (or the static codes
    /// when those cost fewer bits), and starts a new one.
    fn write_block(&mut self, last: bool, out: &mut Vec<u8>) {
        self.freq.litlen[END_OF_BLOCK] = 1;
        let mut lens = [0u8; LITLEN_SYMBOLS + DIST_SYMBOLS];
        huffman_lengths(&self.freq.litlen, 15, &mut lens[..LITLEN_SYMBOLS]);
        huffman_lengths(&self.freq.dist, 15, &mut lens[LITLEN_SYMBOLS..]);
        let header = DynamicHeader::new(&lens);
        // Bits of the codes alone: extra bits are the same either way.
        let cost = |litlen: &[u8], dist: &[u8]| -> u64 {
            let product = |(&f, &l): (&u32, &u8)| u64::from(f) * u64::from(l);
            self.freq.litlen.iter().zip(litlen).map(product).sum::<u64>()
                + self.freq.dist.iter().zip(dist).map(product).sum::<u64>()
        };
        let dynamic = cost(&lens[..LITLEN_SYMBOLS], &lens[LITLEN_SYMBOLS..]) + header.bits;
        let fixed = cost(&STATIC_LENGTHS[..288], &STATIC_LENGTHS[288..]);
        let (codes, code_bits) = if dynamic < fixed {
            self.put(u32::from(last) | 0b10 << 1, 3, out); // BTYPE 10: dynamic codes
            header.write(&mut self.bits, &mut self.bit_count, out);
            (Codes::new(&lens[..LITLEN_SYMBOLS], &lens[LITLEN_SYMBOLS..]), dynamic - header.bits)
        } else {
            self.put(u32::from(last) | 0b01 << 1, 3, out); // BTYPE 01: static codes
            (Codes::new(&STATIC_LENGTHS[..288], &STATIC_LENGTHS[288..]), fixed)
        };
        // The block's exact size in bits is known (codes plus extra bits): room for it, plus the eight
        // bytes the writer stores at a time and the pending bits, so that zeroing the room costs no more
        // than writing it.
        let extra_bits: u64 = self.freq.litlen[257..]
            .iter()
            .zip(LENGTH_EXTRA)
            .chain(self.freq.dist.iter().zip(DIST_EXTRA))
            .map(|(&f, e)| u64::from(f) * u64::from(e))
            .sum();
        let start = out.len();
        out.resize(start + ((code_bits + extra_bits) / 8) as usize + 24, 0);
        let mut w = BlockWriter { buf: &mut out[..], pos: start, bits: 0, count: 0 };
        w.put(self.bits, self.bit_count);
        write_tokens(&mut w, &self.tokens[..self.token_count], &codes);
        let (code, len) = codes.litlen[END_OF_BLOCK];
        w.put(u64::from(code), len);
        let (pos, bits, count) = (w.pos, w.bits, w.count);
        out.truncate(pos);
        self.bits = bits;
        self.bit_count = count;
        self.token_count = 0;
        *self.freq = Histogram::EMPTY;
    }
}

/// Writes a block's tokens with its codes.
fn write_tokens(w: &mut BlockWriter, tokens: &[u32], codes: &Codes) {
    #[cfg(target_arch = "x86_64")]
    if has_bmi() {
        // SAFETY: the CPU has the features `write_tokens_bmi` is compiled for (checked just above).
        return unsafe { write_tokens_bmi(w, tokens, codes) };
    }
    write_tokens_with(w, tokens, codes)
}

/// [`write_tokens`] compiled for BMI1/BMI2/LZCNT: the bit writer's variable shifts take one
/// instruction each (`shlx`, `shrx`) instead of three.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi1,bmi2,lzcnt")]
fn write_tokens_bmi(w: &mut BlockWriter, tokens: &[u32], codes: &Codes) {
    write_tokens_with(w, tokens, codes)
}

#[inline(always)]
fn write_tokens_with(w: &mut BlockWriter, tokens: &[u32], codes: &Codes) {
    // The writer's state in locals: through `w` it was stored back after every token (61 instructions a
    // token, 51 in registers), and the table indexes are in range by construction (no bounds checks).
    let mut writer = BlockWriter { buf: &mut *w.buf, ..*w };
    for &token in tokens {
        // Both codings are computed and one is kept by a mask: literals and matches alternate
        // with no pattern a branch predictor could learn. A literal's fields index entry 0 of the
        // length and distance tables; a match's low byte indexes a literal's entry: both harmless.
        let (lit_code, lit_len) = codes.litlen[(token & 0xFF) as usize];
        let (length_code, length_len) = codes.length[(((token >> 15) & 0x1FF) as usize).min(MAX_MATCH)];
        let (dist_code, dist_len, extra_mask) = codes.dist[((token >> 24) & 0x1F) as usize];
        let dist = u64::from(dist_code) | u64::from(token & extra_mask) << (dist_len & 0xF);
        let match_code = u64::from(length_code) | dist << length_len;
        let match_len = length_len + (dist_len & 0xF) + (dist_len >> 4);
        let is_match = 0u64.wrapping_sub(u64::from(token >> 31));
        let code = (match_code & is_match) | (u64::from(lit_code) & !is_match);
        let len = (match_len & is_match as u32) | (lit_len & !is_match as u32);
        writer.put(code, len);
    }
    (w.pos, w.bits, w.count) = (writer.pos, writer.bits, writer.count);
}

/// Whether this CPU has BMI1, BMI2 and LZCNT (x86-64 since 2013-2015): the hot loops are compiled
/// for them too, and this picks that version (std caches the detection).
#[cfg(target_arch = "x86_64")]
fn has_bmi() -> bool {
    #[cfg(test)]
    if tests::PORTABLE.with(std::cell::Cell::get) {
        return false;
    }
    is_x86_feature_detected!("bmi1") && is_x86_feature_detected!("bmi2") && is_x86_feature_detected!("lzcnt")
}

/// The token loop's bit writer: whole bytes are stored eight at a time into room reserved for the
/// block, with no branch per code (`put_bits` checks for a full word and grows its vector).
struct BlockWriter<'a> {
    buf: &'a mut [u8],
    pos: usize,
    /// Fewer than 8 pending bits between calls.
    bits: u64,
    count: u32,
}

impl BlockWriter<'_> {
    /// Appends `len` bits of `code` (at most 56; nothing above them set).
    #[inline(always)]
    fn put(&mut self, code: u64, len: u32) {
        self.bits |= code << self.count;
        self.count += len;
        self.buf[self.pos..self.pos + 8].copy_from_slice(&self.bits.to_le_bytes());
        let bytes = self.count / 8;
        self.pos += bytes as usize;
        self.bits >>= bytes * 8;
        self.count -= bytes * 8;
    }
}

/// How often each symbol occurs in the block being gathered.
struct Histogram {
    litlen: [u32; LITLEN_SYMBOLS],
    dist: [u32; DIST_SYMBOLS],
}

impl Histogram {
    const EMPTY: Histogram = Histogram { litlen: [0; LITLEN_SYMBOLS], dist: [0; DIST_SYMBOLS] };
}

/// Canonical codes (RFC 1951 3.2.2), bit-reversed for LSB-first output, as (bits, bit count).
struct Codes {
    litlen: [(u32, u32); LITLEN_SYMBOLS],
    /// The distance symbol's code, its length (low 4 bits) and extra-bit count (<< 4), and the mask
    /// of its extra bits in `distance - 1`; 32 entries, as many as a token's 5 bits name.
    dist: [(u32, u32, u32); 32],
    /// The length symbol's code and its extra bits together, for lengths 3..=258.
    length: [(u32, u32); MAX_MATCH + 1],
}

impl Codes {
    fn new(litlen_lens: &[u8], dist_lens: &[u8]) -> Codes {
        let mut litlen = [(0, 0); LITLEN_SYMBOLS];
        canonical_codes(litlen_lens, &mut litlen);
        let mut dist_codes = [(0, 0); DIST_SYMBOLS];
        canonical_codes(dist_lens, &mut dist_codes);
        let mut dist = [(0, 0, 0); 32];
        for ((entry, (code, len)), extra) in dist.iter_mut().zip(dist_codes).zip(DIST_EXTRA) {
            *entry = (code, len | extra << 4, (1 << extra) - 1);
        }
        let mut length = [(0, 0); MAX_MATCH + 1];
        for (len, entry) in length.iter_mut().enumerate().skip(3) {
            let (index, extra) = LENGTH_SYMBOLS[len];
            let (code, code_len) = litlen[257 + usize::from(index)];
            *entry = (code | u32::from(extra) << code_len, code_len + LENGTH_EXTRA[usize::from(index)]);
        }
        Codes { litlen, dist, length }
    }
}

/// A dynamic block's header: the code lengths, run-length coded (RFC 1951 3.2.7).
struct DynamicHeader {
    hlit: usize,
    hdist: usize,
    hclen: usize,
    /// Code-length symbols (0..=18) with their extra-bit values.
    runs: Vec<(u8, u8)>,
    cl_lens: [u8; 19],
    /// The header's size in bits.
    bits: u64,
}

impl DynamicHeader {
    fn new(lens: &[u8; LITLEN_SYMBOLS + DIST_SYMBOLS]) -> DynamicHeader {
        let hlit = 257 + lens[257..LITLEN_SYMBOLS].iter().rposition(|&l| l > 0).map_or(0, |i| i + 1);
        let hdist = 1 + lens[LITLEN_SYMBOLS..].iter().rposition(|&l| l > 0).unwrap_or(0);
        let mut all = Vec::with_capacity(hlit + hdist);
        all.extend_from_slice(&lens[..hlit]);
        all.extend_from_slice(&lens[LITLEN_SYMBOLS..LITLEN_SYMBOLS + hdist]);
        let runs = run_lengths(&all);
        let mut freq = [0u32; 19];
        for &(symbol, _) in &runs {
            freq[usize::from(symbol)] += 1;
        }
        let mut cl_lens = [0u8; 19];
        huffman_lengths(&freq, 7, &mut cl_lens);
        let hclen = 4.max(CODE_LENGTH_ORDER.iter().rposition(|&s| cl_lens[s] > 0).map_or(0, |i| i + 1));
        let extra = |symbol: u8| match symbol {
            16 => 2,
            17 => 3,
            18 => 7,
            _ => 0,
        };
        let body: u64 = runs.iter().map(|&(s, _)| u64::from(cl_lens[usize::from(s)]) + extra(s)).sum();
        let bits = 5 + 5 + 4 + 3 * hclen as u64 + body;
        DynamicHeader { hlit, hdist, hclen, runs, cl_lens, bits }
    }

    fn write(&self, bits: &mut u64, count: &mut u32, out: &mut Vec<u8>) {
        put_bits(bits, count, (self.hlit - 257) as u32, 5, out);
        put_bits(bits, count, (self.hdist - 1) as u32, 5, out);
        put_bits(bits, count, (self.hclen - 4) as u32, 4, out);
        for &symbol in &CODE_LENGTH_ORDER[..self.hclen] {
            put_bits(bits, count, u32::from(self.cl_lens[symbol]), 3, out);
        }
        let mut codes = [(0, 0); 19];
        canonical_codes(&self.cl_lens, &mut codes);
        for &(symbol, extra) in &self.runs {
            let (code, len) = codes[usize::from(symbol)];
            let extra_len = match symbol {
                16 => 2,
                17 => 3,
                18 => 7,
                _ => 0,
            };
            put_bits(bits, count, code | u32::from(extra) << len, len + extra_len, out);
        }
    }
}

/// Appends `len` (at most 32) bits of `code` to an LSB-first bit buffer, writing out whole 32-bit words.
#[inline(always)]
fn put_bits(bits: &mut u64, count: &mut u32, code: u32, len: u32, out: &mut Vec<u8>) {
    *bits |= u64::from(code) << *count;
    *count += len;
    if *count >= 32 {
        out.extend_from_slice(&(*bits as u32).to_le_bytes());
        *bits >>= 32;
        *count -= 32;
    }
}

/// How many leading bytes `a` and `b` share, at most `max`; eight at a time.
#[inline(always)]
pub(super) fn common_prefix(a: &[u8], b: &[u8], max: usize) -> usize {
    let max = max.min(a.len()).min(b.len());
    let mut n = 0;
    while n + 8 <= max {
        let word = |s: &[u8]| u64::from_le_bytes(s[n..n + 8].try_into().expect("eight bytes"));
        let differ = word(a) ^ word(b);
        if differ != 0 {
            return n + (differ.trailing_zeros() / 8) as usize;
        }
        n += 8;
    }
    n + a[n..max].iter().zip(&b[n..max]).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Inflates a whole raw DEFLATE stream; panics if it is invalid or cut short.
    fn inflate(raw: &[u8]) -> Vec<u8> {
        let mut inflater = Inflater::new();
        inflater.feed(raw).unwrap_or_else(|e| panic!("{e}"));
        inflater.end().unwrap_or_else(|e| panic!("{e}"))
    }

    /// zlib-rs's inflate fed a stream piece by piece, so that what is decodable after each sync flush
    /// can be compared with the input so far.
    struct Inflater {
        inflater: flate2::Decompress,
        out: Vec<u8>,
        ended: bool,
    }

    impl Inflater {
        fn new() -> Inflater {
            Inflater { inflater: flate2::Decompress::new(false), out: Vec::new(), ended: false }
        }

        /// Decodes all of `raw`, and everything it makes decodable. A stream cut short makes zlib
        /// return `Ok(BufError)` on every call: a call that moves neither input nor output is an error,
        /// not a reason to try again.
        fn feed(&mut self, mut raw: &[u8]) -> Result<(), String> {
            loop {
                if self.ended {
                    return match raw.len() {
                        0 => Ok(()),
                        n => Err(format!("{n} bytes after the final block")),
                    };
                }
                let (in_before, out_before) = (self.inflater.total_in(), self.inflater.total_out());
                self.out.reserve(64 * 1024);
                let room = self.out.capacity() - self.out.len();
                let status = self
                    .inflater
                    .decompress_vec(raw, &mut self.out, flate2::FlushDecompress::Sync)
                    .map_err(|e| format!("invalid DEFLATE stream: {e}"))?;
                let consumed = (self.inflater.total_in() - in_before) as usize;
                let produced = (self.inflater.total_out() - out_before) as usize;
                raw = &raw[consumed..];
                self.ended = status == flate2::Status::StreamEnd;
                if raw.is_empty() && produced < room {
                    return Ok(());
                }
                if consumed == 0 && produced == 0 && !self.ended {
                    return Err(format!("inflate made no progress with {} bytes left", raw.len()));
                }
            }
        }

        /// Everything decoded so far.
        fn decoded(&self) -> &[u8] {
            &self.out
        }

        /// Checks that the stream ended with its final block; returns the whole output.
        fn end(mut self) -> Result<Vec<u8>, String> {
            if self.ended {
                return Ok(self.out);
            }
            // Output still inside zlib's window comes out with a call that has no input left.
            loop {
                let out_before = self.inflater.total_out();
                self.out.reserve(64 * 1024);
                let status = self
                    .inflater
                    .decompress_vec(&[], &mut self.out, flate2::FlushDecompress::Finish)
                    .map_err(|e| format!("invalid DEFLATE stream: {e}"))?;
                if status == flate2::Status::StreamEnd {
                    return Ok(self.out);
                }
                if self.inflater.total_out() == out_before {
                    return Err(format!("stream cut off before its final block after {} bytes", self.out.len()));
                }
            }
        }
    }

    /// `body` cut in pieces of `sizes` in turn, every `flush_every`-th followed by a sync flush.
    fn pieces(body: &[u8], sizes: &[usize], flush_every: usize) -> Vec<(Vec<u8>, bool)> {
        let mut parts = Vec::new();
        let (mut at, mut i) = (0, 0);
        while at < body.len() {
            let end = (at + sizes[i % sizes.len()]).min(body.len());
            parts.push((body[at..end].to_vec(), i % flush_every == flush_every - 1));
            (at, i) = (end, i + 1);
        }
        parts
    }

    /// Compresses `parts` in turn, with a sync flush after those marked so.
    fn deflate(state: &mut FastDeflate, parts: &[(Vec<u8>, bool)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (part, flush) in parts {
            state.compress(part, &mut out);
            if *flush {
                state.sync_flush(&mut out);
            }
        }
        state.finish(&mut out);
        out
    }

    /// Text that repeats at every distance and length class, from a small alphabet plus bytes of
    /// every value (9-bit codes), copied from up to 40 KB back (past the window). Up to `max_len`
    /// bytes: most bodies pass `BUF_CAPACITY`, where the buffer moves its last window to the front.
    fn repetitive(max_len: usize) -> impl Strategy<Value = Vec<u8>> {
        let ops = prop::collection::vec((any::<u8>(), 0..6u8, 1..40_000usize, 1..2_000usize), 1..200);
        (0..=max_len, ops).prop_map(move |(len, ops)| {
            let mut out: Vec<u8> = Vec::with_capacity(len);
            // The operations repeat until the body is long enough.
            for &(byte, kind, back, run) in ops.iter().cycle() {
                if out.len() >= len {
                    break;
                }
                match kind {
                    0 => out.push(byte),
                    1 | 2 => out.extend((0..run).map(|i| b"<a href=\"/x\">"[(i + byte as usize) % 13])),
                    _ if out.is_empty() => out.push(byte),
                    _ => {
                        let from = out.len().saturating_sub(back.min(out.len()));
                        for i in 0..run {
                            out.push(out[from + i % (out.len() - from)]);
                        }
                    }
                }
            }
            out.truncate(len);
            out
        })
    }

    /// Where two byte strings first differ (assertion messages that do not print megabytes).
    fn first_difference(a: &[u8], b: &[u8]) -> String {
        match a.iter().zip(b).position(|(x, y)| x != y) {
            Some(at) => format!("lengths {} and {}, first difference at {at}", a.len(), b.len()),
            None => format!("lengths {} and {}, one a prefix of the other", a.len(), b.len()),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(
            std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(64)
        ))]

        /// Each sync flush makes the input so far decodable, and the whole stream inflates to the input.
        #[test]
        fn any_chunking_and_flushing_inflates_to_the_input(
            body in repetitive(3 * BUF_CAPACITY),
            cuts in prop::collection::vec((any::<prop::sample::Index>(), any::<bool>()), 0..12),
        ) {
            let mut cuts: Vec<(usize, bool)> = cuts.iter().map(|(i, f)| (i.index(body.len() + 1), *f)).collect();
            cuts.sort();
            cuts.push((body.len(), false));
            let mut state = FastDeflate::new();
            let mut inflater = Inflater::new();
            let mut out = Vec::new();
            let mut at = 0;
            for (cut, flush) in cuts {
                state.compress(&body[at..cut], &mut out);
                at = cut;
                if flush {
                    state.sync_flush(&mut out);
                    inflater.feed(&out).map_err(TestCaseError::fail)?;
                    out.clear();
                    let so_far = &body[..at];
                    prop_assert!(inflater.decoded() == so_far, "after a flush at {}: {}", at, first_difference(inflater.decoded(), so_far));
                }
            }
            state.finish(&mut out);
            inflater.feed(&out).map_err(TestCaseError::fail)?;
            let decoded = inflater.end().map_err(TestCaseError::fail)?;
            prop_assert!(decoded == body, "{}", first_difference(&decoded, &body));
        }
    }

    /// Inputs that stress the encoder's edges: all-equal bytes (distance-1 matches of 258), random
    /// bytes (literal-only blocks, where static codes may win), runs of 255-260 equal bytes between
    /// noise (the longest match and its neighbours), copies from exactly the window's edge and one
    /// past it, and long bodies that fill blocks and move the window.
    fn adversarial() -> impl Strategy<Value = Vec<u8>> {
        let noise = |seed: u64, len: usize| -> Vec<u8> {
            let mut x = seed | 1;
            (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect()
        };
        prop_oneof![
            (any::<u8>(), 0..70_000usize).prop_map(|(b, n)| vec![b; n]),
            (any::<u64>(), 0..20_000usize).prop_map(move |(seed, n)| noise(seed, n)),
            (any::<u64>(), prop::collection::vec((any::<u8>(), 255..=260usize, 0..40usize), 1..40)).prop_map(
                move |(seed, runs)| {
                    let mut out = Vec::new();
                    for (i, (byte, run, gap)) in runs.into_iter().enumerate() {
                        out.extend(std::iter::repeat_n(byte, run));
                        out.extend(noise(seed ^ i as u64, gap));
                    }
                    out
                }
            ),
            (any::<u64>(), WINDOW - 2..=WINDOW + 2, 4..300usize).prop_map(move |(seed, dist, len)| {
                // The only earlier copy of the tail starts `dist` back.
                let mut out = noise(seed, dist);
                out.extend_from_within(..len);
                out
            }),
            // Four-byte repeats whose fifth byte varies: the table hashes five bytes (four near the
            // buffer's end), so these are found only where the hashes agree, and never mistaken.
            (any::<u64>(), 1..4_000usize).prop_map(move |(seed, n)| {
                noise(seed, n).iter().flat_map(|&b| [b'<', b'a', b' ', b'h', b"rRs\""[usize::from(b % 4)]]).collect()
            }),
            // Text from a small alphabet: short matches and literals, more tokens than a block holds.
            (any::<u64>(), 1..3usize).prop_map(move |(seed, k)| {
                noise(seed, BLOCK_TOKENS * 2 * k).iter().map(|b| b"abcdefgh <>/=\"!"[usize::from(b % 14)]).collect()
            }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(
            std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(2_000)
        ))]

        /// zlib's inflate (zlib-rs) gives back every adversarial input, cut into up to three pieces
        /// with a sync flush after each, and the output never exceeds a stored copy by much.
        #[test]
        fn adversarial_inputs_inflate_to_themselves(
            body in adversarial(),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..3),
        ) {
            let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(body.len() + 1)).collect();
            cuts.sort();
            cuts.push(body.len());
            let mut parts = Vec::new();
            let mut at = 0;
            for cut in cuts {
                parts.push((body[at..cut].to_vec(), cut < body.len()));
                at = cut;
            }
            let compressed = deflate(&mut FastDeflate::new(), &parts);
            let decoded = {
                let mut inflater = Inflater::new();
                inflater.feed(&compressed).map_err(TestCaseError::fail)?;
                inflater.end().map_err(TestCaseError::fail)?
            };
            prop_assert!(decoded == body, "{}", first_difference(&decoded, &body));
            // Literal-only blocks cost at most 9 bits a byte (static codes), plus block framing.
            prop_assert!(compressed.len() <= body.len() * 9 / 8 + 64 * parts.len() + 64);
        }
    }

    thread_local! {
        /// Set by a test to make this thread's encoders take the portable (non-BMI) loops.
        pub(super) static PORTABLE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(
            std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(2_000)
        ))]

        /// The loops compiled for BMI1/BMI2/LZCNT write exactly what the portable ones write (the
        /// portable ones are what a CPU without those features runs, so they are checked here too).
        #[test]
        fn the_bmi_and_portable_loops_write_the_same_stream(
            body in prop_oneof![adversarial(), repetitive(300_000)],
            piece in 1..70_000usize,
        ) {
            let parts: Vec<_> = body.chunks(piece).map(|p| (p.to_vec(), false)).collect();
            PORTABLE.with(|p| p.set(true));
            let portable = deflate(&mut FastDeflate::new(), &parts);
            PORTABLE.with(|p| p.set(false));
            let default = deflate(&mut FastDeflate::new(), &parts);
            prop_assert!(portable == default, "{} and {} bytes", portable.len(), default.len());
            prop_assert!(inflate(&portable) == body);
        }

        /// Pieces of 1-12 bytes: every position lies near a piece's end when it is hashed (four bytes)
        /// and many are looked up later with five: the stream still decodes to the body.
        #[test]
        fn tiny_pieces_round_trip(body in repetitive(20_000), sizes in prop::collection::vec(1..=12usize, 1..20)) {
            let compressed = deflate(&mut FastDeflate::new(), &pieces(&body, &sizes, 97));
            let decoded = inflate(&compressed);
            prop_assert!(decoded == body, "{}", first_difference(&decoded, &body));
        }
    }

    #[test]
    fn a_cut_stream_makes_the_test_inflater_fail_not_hang() {
        // zlib answers a stream cut short with Ok(BufError) forever: the helper must not retry it.
        let body = b"<p>cut short</p>".repeat(5000);
        let mut state = FastDeflate::new();
        let mut flushed = Vec::new();
        state.compress(&body, &mut flushed);
        state.sync_flush(&mut flushed); // decodable up to here, but no final block
        let whole = deflate(&mut FastDeflate::new(), &[(body.clone(), true)]);
        let cut_streams =
            vec![whole[..1].to_vec(), whole[..whole.len() / 2].to_vec(), whole[..whole.len() - 1].to_vec(), flushed];
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let failed: Vec<bool> =
                cut_streams.into_iter().map(|raw| std::panic::catch_unwind(move || inflate(&raw)).is_err()).collect();
            tx.send(failed).unwrap();
        });
        let failed =
            rx.recv_timeout(std::time::Duration::from_secs(120)).expect("inflating a cut stream never returned");
        assert_eq!(failed, [true; 4], "each cut stream must make `inflate` panic");
        assert_eq!(inflate(&whole), body);
    }

    #[test]
    fn an_all_equal_stream_of_megabytes_decodes_at_every_flush() {
        // Distance-1 matches run across every move of the window to the buffer's front (about 32
        // moves), in pieces of sizes around PIECE and BUF_CAPACITY.
        const TOTAL: usize = 4 << 20;
        let sizes = [1, 4096, PIECE - 1, PIECE, PIECE + 1, 3 * PIECE + 7, BUF_CAPACITY, BUF_CAPACITY + 1, 100_000];
        let equal = vec![b'='; 3 * PIECE + 7];
        let mut state = FastDeflate::new();
        let mut inflater = Inflater::new();
        let (mut out, mut compressed) = (Vec::new(), 0);
        let (mut at, mut checked, mut i) = (0, 0, 0);
        while at < TOTAL {
            let n = sizes[i % sizes.len()].min(TOTAL - at);
            state.compress(&equal[..n], &mut out);
            state.sync_flush(&mut out);
            (at, i) = (at + n, i + 1);
            inflater.feed(&out).unwrap_or_else(|e| panic!("after a flush at {at}: {e}"));
            compressed += out.len();
            out.clear();
            let decoded = inflater.decoded();
            assert_eq!(decoded.len(), at, "bytes decodable after a flush at {at}");
            assert!(decoded[checked..].iter().all(|&b| b == b'='), "wrong bytes decoded before {at}");
            checked = at;
        }
        state.finish(&mut out);
        inflater.feed(&out).unwrap();
        assert_eq!(inflater.end().unwrap().len(), TOTAL);
        assert!(compressed < TOTAL / 50, "runs were matched: {compressed} bytes for {TOTAL}");
    }

    #[test]
    fn every_length_and_distance_class_round_trips() {
        let noise: Vec<u8> = (0..40_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        let mut body = noise.clone();
        for dist in [
            1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 255, 256, 257, 1024, 1025, 4096, 16_385, 24_577, 32_767, 32_768, 32_769,
            40_000,
        ] {
            for len in [4, 5, 10, 11, 18, 19, 34, 35, 66, 67, 130, 131, 227, 257, 258, 259, 600] {
                let from = body.len() - dist;
                for i in 0..len {
                    body.push(body[from + i]);
                }
                body.extend_from_slice(&noise[len..len + 50]); // break the run
            }
        }
        let compressed = deflate(&mut FastDeflate::new(), &[(body.clone(), false)]);
        assert_eq!(inflate(&compressed), body);
        assert!(compressed.len() < body.len() / 2, "matches were found: {} of {}", compressed.len(), body.len());
    }

    #[test]
    fn long_streams_in_pieces_of_every_size_round_trip() {
        // Well past several moves of the window to the buffer's front, matches crossing each one.
        let line = |i: usize| format!("<li><a href=\"http://127.0.0.1:8080/p/{}\">item {i}</a></li>\n", i % 977);
        let body: Vec<u8> = (0..40_000).flat_map(|i| line(i).into_bytes()).collect();
        assert!(body.len() > 8 * BUF_CAPACITY);
        let sizes = [1, 7, 4096, PIECE, 100_000, 13, 2 * PIECE + 5];
        let compressed = deflate(&mut FastDeflate::new(), &pieces(&body, &sizes, 5));
        assert_eq!(inflate(&compressed), body);
        assert!(compressed.len() < body.len() / 4, "{} of {}", compressed.len(), body.len());
    }

    #[test]
    fn matches_never_reach_past_the_window() {
        // splitmix64: bytes without repeats worth a match.
        let noise = |seed: u64, len: usize| -> Vec<u8> {
            (0..len as u64)
                .map(|i| {
                    let mut z = (seed << 32 | i).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                    (z ^ (z >> 31)) as u8
                })
                .collect()
        };
        for dist in [WINDOW, WINDOW + 1] {
            // The only earlier copy of the last 200 bytes starts exactly `dist` back.
            let mut body = noise(1, 200);
            body.extend(noise(2, dist - 200));
            let mut unrepeated = body.clone();
            body.extend(noise(1, 200));
            unrepeated.extend(noise(3, 200));
            let compressed = deflate(&mut FastDeflate::new(), &[(body.clone(), false)]);
            assert_eq!(inflate(&compressed), body, "distance {dist}");
            let baseline = deflate(&mut FastDeflate::new(), &[(unrepeated, false)]).len();
            let matched = compressed.len() + 150 < baseline;
            assert_eq!(
                matched,
                dist == WINDOW,
                "distance {dist}: {} bytes, {baseline} without the repeat",
                compressed.len()
            );
        }
    }

    #[test]
    fn a_reset_state_writes_what_a_new_one_writes() {
        let first = b"<p>first stream, cut off".repeat(3000);
        let second = b"<li><a href=\"/second\">second stream</a></li>".repeat(3000);
        let mut reused = FastDeflate::new();
        let mut out = Vec::new();
        reused.compress(&first, &mut out); // abandoned mid-stream
        reused.reset();
        let again = deflate(&mut reused, &[(second.clone(), false)]);
        assert_eq!(again, deflate(&mut FastDeflate::new(), &[(second.clone(), false)]));
        assert_eq!(reused.total_in(), second.len() as u64);
    }

    #[test]
    fn positions_past_four_gigabytes_still_find_their_matches() {
        let body = b"<a href=\"http://example.com/page\">a link</a>\n".repeat(4000);
        // The table holds low 32 bits: start just below the wrap so the stream crosses it.
        let mut state = FastDeflate::starting_at((1 << 32) - 50_000);
        let compressed = deflate(&mut state, &[(body.clone(), false)]);
        assert_eq!(inflate(&compressed), body);
        assert!(compressed.len() < body.len() / 20, "matches were found: {} of {}", compressed.len(), body.len());
    }

    #[test]
    fn empty_streams_and_empty_flushes_are_valid() {
        assert_eq!(inflate(&deflate(&mut FastDeflate::new(), &[])), b"");
        let parts = [(Vec::new(), true), (b"x".to_vec(), true), (Vec::new(), true)];
        assert_eq!(inflate(&deflate(&mut FastDeflate::new(), &parts)), b"x");
    }
}
