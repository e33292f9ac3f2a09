//! A DEFLATE encoder (RFC 1951) built for one job: compressing rewritten pages as fast as possible at
//! about zlib level 1's ratio. Greedy matching with one hash probe per position and static Huffman
//! codes, like zlib-ng's "quick" strategy, but matches are compared eight bytes at a time and the bit
//! writer lives in registers: a 100 KB page takes about half the time zlib-rs 0.6.8's quick strategy
//! needs, for the same size (benches/RESULTS.md).

/// How far back a match may reach (the DEFLATE window).
const WINDOW: usize = 32 * 1024;
const MIN_MATCH: usize = 4;
const MAX_MATCH: usize = 258;
/// 32 Ki entries: 128 KiB of table stays in L2; 64 Ki entries were slower here for 0.1% less output.
const HASH_BITS: u32 = 15;
/// Input is compressed in pieces of at most this size.
const PIECE: usize = 64 * 1024;
/// The buffer takes input until it holds this much, then moves the last window to its front: one
/// 32 KiB move per ~128 KiB of input, however small the pieces.
const BUF_CAPACITY: usize = WINDOW + 2 * PIECE;

/// Static Huffman codes (RFC 1951 3.2.6), bit-reversed for LSB-first output, as (bits, bit count).
struct StaticCodes {
    literal: [(u32, u32); 256],
    /// The length symbol and its extra bits together, for lengths 3..=258.
    length: [(u32, u32); MAX_MATCH + 1],
}

const fn reverse(code: u32, len: u32) -> u32 {
    code.reverse_bits() >> (32 - len)
}

const fn static_code(symbol: u32) -> (u32, u32) {
    match symbol {
        0..=143 => (reverse(0x30 + symbol, 8), 8),
        144..=255 => (reverse(0x190 + symbol - 144, 9), 9),
        256..=279 => (reverse(symbol - 256, 7), 7),
        _ => (reverse(0xC0 + symbol - 280, 8), 8),
    }
}

const LENGTH_BASE: [u32; 29] =
    [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258];
const LENGTH_EXTRA: [u32; 29] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];

const fn static_codes() -> StaticCodes {
    let mut literal = [(0, 0); 256];
    let mut byte = 0;
    while byte < 256 {
        literal[byte] = static_code(byte as u32);
        byte += 1;
    }
    let mut length = [(0, 0); MAX_MATCH + 1];
    let mut index = 0;
    while index < 29 {
        let (code, code_len) = static_code(257 + index as u32);
        let mut extra = 0;
        while extra < 1 << LENGTH_EXTRA[index] {
            let len = (LENGTH_BASE[index] + extra) as usize;
            // 258 fits symbol 284 with extra 31 too, but RFC 1951 gives it symbol 285.
            if len < MAX_MATCH || index == 28 {
                length[len] = (code | extra << code_len, code_len + LENGTH_EXTRA[index]);
            }
            extra += 1;
        }
        index += 1;
    }
    StaticCodes { literal, length }
}

static CODES: StaticCodes = static_codes();

/// The distance symbol (five bits in the static code) and its extra bits, for `dist` in 1..=32768.
#[inline]
fn distance_code(dist: usize) -> (u32, u32) {
    let d = (dist - 1) as u32;
    if d < 4 {
        return (reverse(d, 5), 5);
    }
    let extra_bits = 30 - d.leading_zeros(); // floor(log2 d) - 1
    let symbol = 2 * (extra_bits + 1) + ((d >> extra_bits) & 1);
    (reverse(symbol, 5) | (d & ((1 << extra_bits) - 1)) << 5, 5 + extra_bits)
}

#[inline]
fn hash(word: u32) -> usize {
    (word.wrapping_mul(0x9E37_79B1) >> (32 - HASH_BITS)) as usize
}

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
    bits: u64,
    bit_count: u32,
    block_open: bool,
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
            bits: 0,
            bit_count: 0,
            block_open: false,
            total_in: 0,
        }
    }

    /// Readies the state for a new stream; what it writes then is what a new state would write (until
    /// positions pass 4 GiB and old entries may alias: verified like any other, they cost a probe).
    pub(super) fn reset(&mut self) {
        self.base += self.buf.len() as u64;
        self.buf.clear();
        self.bits = 0;
        self.bit_count = 0;
        self.block_open = false;
        self.total_in = 0;
    }

    /// Uncompressed bytes taken since the stream began.
    pub(super) fn total_in(&self) -> u64 {
        self.total_in
    }

    pub(super) fn compress(&mut self, input: &[u8], out: &mut Vec<u8>) {
        for piece in input.chunks(PIECE) {
            if !self.block_open {
                self.put(0b010, 3, out); // BFINAL 0, BTYPE 01: static Huffman codes
                self.block_open = true;
            }
            self.total_in += piece.len() as u64;
            if self.buf.len() + piece.len() > BUF_CAPACITY {
                let gone = self.buf.len() - WINDOW;
                self.buf.drain(..gone);
                self.base += gone as u64;
            }
            let start = self.buf.len();
            self.buf.extend_from_slice(piece);
            // Static codes spend at most 9 bits on a byte.
            out.reserve(piece.len() + piece.len() / 8 + 8);
            self.encode_from(start, out);
        }
    }

    /// Ends the current block and writes an empty stored block (a zlib sync flush): the client can
    /// decode everything given so far.
    pub(super) fn sync_flush(&mut self, out: &mut Vec<u8>) {
        self.end_block(out);
        self.put(0b000, 3, out); // BFINAL 0, BTYPE 00: stored
        self.align(out);
        out.extend_from_slice(&[0, 0, 0xFF, 0xFF]); // LEN 0, NLEN !0
    }

    pub(super) fn finish(&mut self, out: &mut Vec<u8>) {
        self.end_block(out);
        self.put(0b011, 3, out); // BFINAL 1, static Huffman codes
        self.put(0, 7, out); // end of block
        self.align(out);
    }

    fn end_block(&mut self, out: &mut Vec<u8>) {
        if std::mem::take(&mut self.block_open) {
            self.put(0, 7, out); // end of block: symbol 256, seven zero bits
        }
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

    /// Encodes `buf[pos..]`. Matches stop at the end of the piece; the last three bytes are literals.
    fn encode_from(&mut self, mut pos: usize, out: &mut Vec<u8>) {
        let buf = &self.buf[..];
        let head = &mut self.head[..];
        let base = self.base;
        let end = buf.len();
        // The bit writer in locals: through `self` it would be reloaded after every `out` write.
        let (mut bits, mut bit_count) = (self.bits, self.bit_count);
        let mut put = |code: u32, len: u32| put_bits(&mut bits, &mut bit_count, code, len, out);
        while pos + MIN_MATCH <= end {
            let word = read_u32(buf, pos);
            let here = (base + pos as u64) as u32;
            // Entries hold the low 32 bits of stream positions, so the distance is taken modulo 2^32.
            // A candidate must lie in the buffer and in the window, and its bytes must really repeat:
            // a stale or aliased entry costs a probe, never a wrong stream.
            let dist = here.wrapping_sub(std::mem::replace(&mut head[hash(word)], here)) as usize;
            if (1..=WINDOW.min(pos)).contains(&dist) && read_u32(buf, pos - dist) == word {
                let from = pos - dist;
                let len =
                    MIN_MATCH + common_prefix(&buf[from + MIN_MATCH..], &buf[pos + MIN_MATCH..], MAX_MATCH - MIN_MATCH);
                let (code, code_len) = CODES.length[len];
                let (dist_code, dist_len) = distance_code(dist);
                // Length and distance together take at most 31 bits.
                put(code | dist_code << code_len, code_len + dist_len);
                // Remember where the match ends too: the next repeat often starts there (1.3% smaller).
                let last = pos + len - 2;
                if last + MIN_MATCH <= end {
                    head[hash(read_u32(buf, last))] = (base + last as u64) as u32;
                }
                pos += len;
            } else {
                let (code, code_len) = CODES.literal[usize::from(buf[pos])];
                put(code, code_len);
                pos += 1;
            }
        }
        for &byte in &buf[pos..] {
            let (code, code_len) = CODES.literal[usize::from(byte)];
            put(code, code_len);
        }
        self.bits = bits;
        self.bit_count = bit_count;
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
fn common_prefix(a: &[u8], b: &[u8], max: usize) -> usize {
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

/// Adler-32 (RFC 1950), for the zlib framing of the `deflate` coding.
#[derive(Clone, Copy)]
pub(super) struct Adler32 {
    a: u32,
    b: u32,
}

impl Adler32 {
    pub(super) fn new() -> Adler32 {
        Adler32 { a: 1, b: 0 }
    }

    pub(super) fn update(&mut self, bytes: &[u8]) {
        const MOD: u32 = 65521;
        // 5552 bytes is the most that can be summed before `b` could overflow 32 bits.
        for block in bytes.chunks(5552) {
            for &byte in block {
                self.a += u32::from(byte);
                self.b += self.a;
            }
            self.a %= MOD;
            self.b %= MOD;
        }
    }

    pub(super) fn finish(self) -> u32 {
        self.b << 16 | self.a
    }
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
        let mut parts = Vec::new();
        let (mut at, mut i) = (0, 0);
        while at < body.len() {
            let end = (at + sizes[i % sizes.len()]).min(body.len());
            parts.push((body[at..end].to_vec(), i % 5 == 4));
            (at, i) = (end, i + 1);
        }
        let compressed = deflate(&mut FastDeflate::new(), &parts);
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

    /// Adler-32 by its definition, reduced after every byte in 64 bits.
    fn adler32_by_definition(bytes: &[u8]) -> u32 {
        let (mut a, mut b) = (1u64, 0u64);
        for &byte in bytes {
            a = (a + u64::from(byte)) % 65521;
            b = (b + a) % 65521;
        }
        (b << 16 | a) as u32
    }

    #[test]
    fn adler32_sums_long_runs_of_0xff_without_overflow() {
        // All-0xFF bytes grow the sums fastest: zlib's NMAX (5552) is the longest run that fits 32 bits
        // when the sums start just under the modulus. Prefixes set other starting sums.
        for prefix_len in [0, 1, 7, 300, 5551] {
            let prefix: Vec<u8> = (0..prefix_len).map(|i| 0xFF - (i % 3) as u8).collect();
            for run in [5551, 5552, 5553, 11_104, 11_105, 70_000] {
                let mut body = prefix.clone();
                body.resize(prefix_len + run, 0xFF);
                let expected = adler32_by_definition(&body);
                let mut whole = Adler32::new();
                whole.update(&body);
                assert_eq!(whole.finish(), expected, "prefix {prefix_len}, run {run}, one update");
                let mut split = Adler32::new();
                for piece in body.chunks(5553) {
                    let (x, y) = piece.split_at(piece.len().min(1));
                    split.update(x);
                    split.update(y);
                }
                assert_eq!(split.finish(), expected, "prefix {prefix_len}, run {run}, split updates");
            }
        }
        let body = vec![0xFF; 1 << 20];
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut zlib, &body).unwrap();
        let framed = zlib.finish().unwrap();
        let mut adler = Adler32::new();
        adler.update(&body);
        assert_eq!(framed[framed.len() - 4..], adler.finish().to_be_bytes(), "1 MiB of 0xFF against zlib-rs");
    }

    #[test]
    fn adler32_matches_zlibs() {
        let body: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut zlib, &body).unwrap();
        let framed = zlib.finish().unwrap();
        let mut adler = Adler32::new();
        adler.update(&body[..12_345]);
        adler.update(&body[12_345..]);
        assert_eq!(framed[framed.len() - 4..], adler.finish().to_be_bytes());
    }
}
