//! Tests of the gzip and deflate decoder (inflate.rs): gzip, zlib and raw streams from flate2 (zlib-rs) at
//! levels 0, 1, 6 and 9 and from our encoder decode to their input in any chunking and output limit, the
//! reported repeats replay to the output, and corrupt or cut streams are errors, never panics; where
//! zlib-rs decodes a damaged stream too, both give the same bytes.

use std::io::{Read, Write};

use proptest::prelude::*;

use super::*;
use crate::codec::{decode_all, encode_all, Encoding};

fn gzip(data: &[u8], level: u32) -> Vec<u8> {
    let mut w = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
    w.write_all(data).unwrap();
    w.finish().unwrap()
}

pub(super) fn zlib(data: &[u8], level: u32) -> Vec<u8> {
    let mut w = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(level));
    w.write_all(data).unwrap();
    w.finish().unwrap()
}

pub(super) fn raw_deflate(data: &[u8], level: u32) -> Vec<u8> {
    let mut w = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::new(level));
    w.write_all(data).unwrap();
    w.finish().unwrap()
}

/// A gzip member around a raw DEFLATE stream whose output is `data`.
fn member(deflate: &[u8], data: &[u8]) -> Vec<u8> {
    let mut m = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];
    m.extend_from_slice(deflate);
    m.extend_from_slice(&crc32fast::hash(data).to_le_bytes());
    m.extend_from_slice(&(data.len() as u32).to_le_bytes());
    m
}

/// What zlib-rs (through flate2's readers) decodes from a whole gzip (any members), zlib or raw stream.
pub(super) fn zlib_rs(framing: Framing, raw: bool, stream: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let read = match (framing, raw) {
        (Framing::Gzip, _) => flate2::read::MultiGzDecoder::new(stream).read_to_end(&mut out),
        (Framing::Deflate, false) => flate2::read::ZlibDecoder::new(stream).read_to_end(&mut out),
        (Framing::Deflate, true) => flate2::read::DeflateDecoder::new(stream).read_to_end(&mut out),
    };
    read.ok().map(|_| out)
}

/// Decodes a gzip `stream` fed in pieces of the sizes in `pieces` (cycled) with `max_out` per call,
/// checking each call against the contract, then `finish`es.
fn decode_in(stream: &[u8], pieces: &[usize], max_out: usize) -> Result<(Vec<u8>, Vec<Repeat>), CodecError> {
    decode_with(Inflate::gzip(), stream, pieces, max_out)
}

/// The same with a decoder of another framing, or one that decoded a body before (given by reference).
pub(super) fn decode_with(
    mut inflate: impl std::borrow::BorrowMut<Inflate>,
    stream: &[u8],
    pieces: &[usize],
    max_out: usize,
) -> Result<(Vec<u8>, Vec<Repeat>), CodecError> {
    let (mut out, mut repeats) = (Vec::new(), Vec::new());
    let mut chunks = Vec::new();
    let mut rest = stream;
    for &size in pieces.iter().cycle() {
        let (chunk, tail) = rest.split_at(size.max(1).min(rest.len()));
        chunks.push(chunk);
        rest = tail;
        if rest.is_empty() {
            break;
        }
    }
    let inflate = inflate.borrow_mut();
    for mut chunk in chunks {
        loop {
            let (before, reported) = (out.len(), repeats.len());
            let took = inflate.decode(chunk, &mut out, max_out, &mut repeats)?;
            let produced = out.len() - before;
            assert!(produced <= max_out, "{produced} bytes out of {max_out}");
            assert!(took <= chunk.len());
            assert!(produced == max_out || took == chunk.len(), "took {took} of {} with room left", chunk.len());
            assert_eq!(inflate.total_out(), out.len() as u64);
            assert!(repeats[reported..].iter().all(|r| r.at >= before as u64 && r.at < out.len() as u64));
            chunk = &chunk[took..];
            if chunk.is_empty() && produced < max_out {
                break;
            }
        }
    }
    inflate.finish()?;
    Ok((out, repeats))
}

/// Replays `repeats` over `out`: in order, not overlapping, each within the output and its member
/// (`starts`: where members begin), each equal to the bytes `distance` before it; the bytes between
/// them are copied as literals. Returns the number of bytes the repeats cover.
pub(super) fn replay(out: &[u8], repeats: &[Repeat], starts: &[usize]) -> usize {
    let mut rebuilt = Vec::with_capacity(out.len());
    let (mut covered, mut literals) = (0, 0);
    for r in repeats {
        let (at, distance, length) = (r.at as usize, usize::from(r.distance), usize::from(r.length));
        assert!(at >= rebuilt.len(), "{r:?} after {} bytes", rebuilt.len());
        assert!((3..=258).contains(&length) && at + length <= out.len(), "{r:?}");
        let member = starts.iter().rev().find(|&&s| s <= at).copied().unwrap_or(0);
        assert!(distance >= 1 && distance <= at - member, "{r:?} in a member from {member}");
        literals += at - rebuilt.len();
        rebuilt.extend_from_slice(&out[rebuilt.len()..at]);
        for _ in 0..length {
            rebuilt.push(rebuilt[rebuilt.len() - distance]);
        }
        covered += length;
    }
    literals += out.len() - rebuilt.len();
    rebuilt.extend_from_slice(&out[rebuilt.len()..]);
    assert!(rebuilt == out, "replaying the repeats gives other bytes");
    assert_eq!(covered + literals, out.len());
    covered
}

/// Bits written least significant first, as DEFLATE reads them (hand-made streams).
#[derive(Default)]
struct Bits {
    out: Vec<u8>,
    acc: u64,
    n: u32,
}

impl Bits {
    fn put(&mut self, value: u32, n: u32) -> &mut Self {
        self.acc |= u64::from(value) << self.n;
        self.n += n;
        while self.n >= 8 {
            self.out.push(self.acc as u8);
            (self.acc, self.n) = (self.acc >> 8, self.n - 8);
        }
        self
    }

    /// A Huffman code, most significant bit first.
    fn code(&mut self, code: u32, len: u32) -> &mut Self {
        self.put(code.reverse_bits() >> (32 - len), len)
    }

    /// A static-code literal/length symbol (RFC 1951 §3.2.6).
    fn fixed(&mut self, sym: u32) -> &mut Self {
        match sym {
            0..=143 => self.code(0x30 + sym, 8),
            144..=255 => self.code(0x190 + sym - 144, 9),
            256..=279 => self.code(sym - 256, 7),
            _ => self.code(0xc0 + sym - 280, 8),
        }
    }

    /// A stored block of `data`.
    fn stored(&mut self, last: bool, data: &[u8]) -> &mut Self {
        self.put(u32::from(last), 3);
        if self.n > 0 {
            self.put(0, 8 - self.n);
        }
        self.out.extend_from_slice(&(data.len() as u16).to_le_bytes());
        self.out.extend_from_slice(&(!(data.len() as u16)).to_le_bytes());
        self.out.extend_from_slice(data);
        self
    }

    fn finish(&mut self) -> Vec<u8> {
        if self.n > 0 {
            self.out.push(self.acc as u8);
        }
        std::mem::take(&mut self.out)
    }
}

/// Pseudo-random bytes (an LCG: cheap to make by the tens of kilobytes in a property).
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 56) as u8
        })
        .collect()
}

const WORDS: [&str; 14] = [
    "<div class=\"item\">",
    "</div>",
    "<a href=\"https://example.com/page/",
    "\">",
    "</a>",
    "<p>",
    "</p>\n",
    "    ",
    "the quick brown fox ",
    "<span>",
    "</span>",
    "&amp;",
    "<li><code>Vec::with_capacity</code></li>\n",
    "<script src=\"/static/app.js\"></script>",
];

/// Page-like text, runs of one byte, noise with copies from up to 32768 bytes back, short texts (static
/// codes), and nothing at all.
pub(super) fn body() -> impl Strategy<Value = Vec<u8>> {
    let html = prop::collection::vec((0..WORDS.len(), any::<u16>()), 0..3000).prop_map(|parts| {
        let mut page = Vec::new();
        for (word, n) in parts {
            page.extend_from_slice(WORDS[word].as_bytes());
            if n % 3 == 0 {
                page.extend_from_slice(n.to_string().as_bytes());
            }
        }
        page
    });
    let runs = prop::collection::vec((any::<u8>(), 1..1200usize), 0..60)
        .prop_map(|runs| runs.into_iter().flat_map(|(byte, n)| std::iter::repeat_n(byte, n)).collect());
    let far = (any::<u64>(), 32_000..40_000usize, prop::collection::vec((1..=32_768usize, 3..=300usize), 1..20))
        .prop_map(|(seed, len, copies)| {
            let mut data = noise(seed, len);
            for (distance, length) in copies {
                let from = data.len() - distance.min(data.len());
                for k in 0..length {
                    data.push(data[from + k]);
                }
            }
            data
        });
    let short = prop::collection::vec(0..WORDS.len(), 0..6)
        .prop_map(|words| words.into_iter().flat_map(|w| WORDS[w].bytes()).collect());
    prop_oneof![Just(Vec::new()), prop::collection::vec(any::<u8>(), 0..300), html, runs, far, short]
}

pub(super) fn pieces() -> impl Strategy<Value = Vec<usize>> {
    prop_oneof![Just(vec![1]), prop::collection::vec(1..5000usize, 1..8), Just(vec![usize::MAX])]
}

pub(super) fn max_out() -> impl Strategy<Value = usize> {
    prop_oneof![Just(1), Just(32 * 1024), 1..40_000usize]
}

pub(super) fn cases(default: u32) -> ProptestConfig {
    ProptestConfig::with_cases(std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(default))
}

proptest! {
    #![proptest_config(cases(64))]

    /// Any body at any level, in any chunking and output limit, decodes to itself; its repeats replay.
    #[test]
    fn decodes_flate2_streams_in_any_chunking(
        data in body(),
        level in prop::sample::select(vec![0u32, 1, 6, 9]),
        pieces in pieces(),
        max_out in max_out(),
    ) {
        let stream = gzip(&data, level);
        let (out, repeats) = decode_in(&stream, &pieces, max_out).unwrap();
        prop_assert!(out == data, "{} bytes decoded of {}", out.len(), data.len());
        replay(&out, &repeats, &[0]);
        if level == 0 {
            prop_assert!(repeats.is_empty());
        }
    }

    /// The same for our own encoder's streams.
    #[test]
    fn decodes_our_encoders_streams(data in body(), pieces in pieces(), max_out in max_out()) {
        let stream = encode_all(Encoding::Gzip, &data);
        let (out, repeats) = decode_in(&stream, &pieces, max_out).unwrap();
        prop_assert!(out == data);
        replay(&out, &repeats, &[0]);
    }

    /// Members follow one another (repeat positions go on counting, distances stay in their member);
    /// bytes after the last one are ignored; a stream cut anywhere is truncated.
    #[test]
    fn members_padding_and_cuts(
        bodies in prop::collection::vec((body(), prop::sample::select(vec![0u32, 1, 6, 9])), 1..4),
        padding in prop_oneof![Just(Vec::new()), Just(vec![0; 4]), prop::collection::vec(any::<u8>(), 1..50)],
        pieces in pieces(),
        max_out in max_out(),
        cut in any::<prop::sample::Index>(),
    ) {
        let (mut stream, mut ends) = (Vec::new(), Vec::new());
        let (mut expected, mut starts) = (Vec::new(), Vec::new());
        for (data, level) in &bodies {
            stream.extend_from_slice(&gzip(data, *level));
            ends.push(stream.len());
            starts.push(expected.len());
            expected.extend_from_slice(data);
        }
        let whole = stream.len();
        // Padding that starts like a member is a member (and corrupt, or cut short).
        let padded = padding.first() != Some(&0x1f);
        if padded {
            stream.extend_from_slice(&padding);
        }
        let (out, repeats) = decode_in(&stream, &pieces, max_out).unwrap();
        prop_assert!(out == expected);
        replay(&out, &repeats, &starts);
        let cut = cut.index(whole);
        match decode_in(&stream[..cut], &pieces, max_out) {
            Err(CodecError::Truncated("gzip")) => prop_assert!(!ends.contains(&cut)),
            Ok(_) => prop_assert!(ends.contains(&cut), "cut at {} of {} decoded", cut, whole),
            Err(e) => prop_assert!(false, "cut at {} of {}: {}", cut, whole, e),
        }
    }

    /// Arbitrary bytes, alone or after a valid member header, never panic nor overrun `max_out`; where
    /// zlib-rs decodes them too, both agree.
    #[test]
    fn garbage_never_panics(
        bytes in prop::collection::vec(any::<u8>(), 0..2000),
        headed in any::<bool>(),
        pieces in pieces(),
        max_out in max_out(),
    ) {
        let stream = if headed { [&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3][..], &bytes].concat() } else { bytes };
        let ours = decode_in(&stream, &pieces, max_out);
        if let (Ok((out, repeats)), Some(theirs)) = (&ours, zlib_rs(Framing::Gzip, false, &stream)) {
            prop_assert!(*out == theirs);
            replay(out, repeats, &[0]);
        }
    }

    /// A valid stream with one byte changed: Ok or an error, never a panic; where zlib-rs decodes it too,
    /// both agree.
    #[test]
    fn a_flipped_byte_never_panics(
        data in body(),
        level in prop::sample::select(vec![0u32, 1, 6, 9]),
        at in any::<prop::sample::Index>(),
        flip in 1..=255u8,
        pieces in pieces(),
        max_out in max_out(),
    ) {
        let mut stream = gzip(&data, level);
        let at = at.index(stream.len());
        stream[at] ^= flip;
        let ours = decode_in(&stream, &pieces, max_out);
        if let (Ok((out, repeats)), Some(theirs)) = (&ours, zlib_rs(Framing::Gzip, false, &stream)) {
            prop_assert!(*out == theirs);
            replay(out, repeats, &[0]);
        }
    }
}

fn html_page() -> Vec<u8> {
    (0..3000u32)
        .flat_map(|i| format!("<li><a href=\"/docs/page-{}.html\">Page {i}</a></li>\n", i % 97).into_bytes())
        .collect()
}

#[test]
fn level_6_reports_repeats_and_stored_none() {
    let page = html_page();
    let (out, repeats) = decode_in(&gzip(&page, 6), &[16 * 1024], 32 * 1024).unwrap();
    assert_eq!(out, page);
    assert!(!repeats.is_empty());
    let covered = replay(&out, &repeats, &[0]);
    assert!(covered > page.len() * 9 / 10, "repeats cover {covered} of {} bytes", page.len());
    let (out, repeats) = decode_in(&gzip(&page, 0), &[16 * 1024], 32 * 1024).unwrap();
    assert_eq!(out, page);
    assert!(repeats.is_empty());
}

#[test]
fn short_texts_take_the_static_codes() {
    let text = b"<p>hello hello hello</p>";
    let stream = gzip(text, 6);
    assert_eq!(stream[10] >> 1 & 3, 1, "a static block");
    for max_out in [1, 2, 5, 1000] {
        let (out, repeats) = decode_in(&stream, &[1], max_out).unwrap();
        assert_eq!(out, text);
        assert_eq!(repeats, [Repeat { at: 9, distance: 6, length: 11 }], "max_out {max_out}");
    }
}

/// Sync flushes after small and large writes: static, dynamic and empty stored blocks in one stream (the
/// static tables are kept between static blocks, rebuilt after a dynamic one).
#[test]
fn flushed_streams_mix_block_types() {
    let page = html_page();
    let mut w = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
    let mut expected = Vec::new();
    for piece in [&b"<p>a</p>"[..], b"<p>b</p>", &page[..20_000], b"<p>c</p>", &page[20_000..], b"<p>d</p>"] {
        w.write_all(piece).unwrap();
        w.flush().unwrap();
        expected.extend_from_slice(piece);
    }
    let stream = w.finish().unwrap();
    for (pieces, max_out) in [(vec![usize::MAX], 32 * 1024), (vec![1], 7), (vec![100, 3], 1000)] {
        let (out, repeats) = decode_in(&stream, &pieces, max_out).unwrap();
        assert!(out == expected);
        replay(&out, &repeats, &[0]);
    }
}

#[test]
fn the_farthest_distance_and_the_longest_length() {
    let start = noise(7, 32 * 1024);
    let mut deflate = Bits::default();
    deflate.stored(false, &start);
    // Length 258 (symbol 285), distance 32768 (symbol 29, 13 extra bits of 8191), a literal, the end.
    deflate.put(0b011, 3).fixed(285).code(29, 5).put(8191, 13).fixed(u32::from(b'x')).fixed(256);
    let expected = [&start[..], &start[..258], b"x"].concat();
    let stream = member(&deflate.finish(), &expected);
    for (pieces, max_out) in [(vec![usize::MAX], usize::MAX), (vec![1], 100), (vec![3], 32 * 1024 + 1)] {
        let (out, repeats) = decode_in(&stream, &pieces, max_out).unwrap();
        assert!(out == expected);
        assert_eq!(repeats, [Repeat { at: 32 * 1024, distance: 32 * 1024, length: 258 }]);
    }
}

fn corrupt_reason(stream: &[u8]) -> String {
    match decode_in(stream, &[usize::MAX], 32 * 1024) {
        Err(CodecError::Corrupt("gzip", reason)) => reason,
        other => panic!("not corrupt: {:?}", other.map(|(out, _)| out)),
    }
}

#[test]
fn corrupt_streams_say_why() {
    let header = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];
    let with = |deflate: Vec<u8>| [&header[..], &deflate, &[0; 8]].concat();
    assert_eq!(corrupt_reason(&with(vec![0b111])), "invalid block type");
    assert_eq!(corrupt_reason(&with(vec![1, 5, 0, 0, 0])), "invalid stored block lengths");
    // A match reaching one byte before the member's first.
    let mut far = Bits::default();
    far.stored(false, b"abcd").put(0b011, 3).fixed(257).code(4, 5).put(0, 1).fixed(256);
    assert_eq!(corrupt_reason(&with(far.finish())), "invalid distance too far back");
    let mut bad = Bits::default();
    bad.put(0b011, 3).fixed(286);
    assert_eq!(corrupt_reason(&with(bad.finish())), "invalid literal/length code");
    let mut bad = Bits::default();
    bad.put(0b011, 3).fixed(u32::from(b'a')).fixed(257).code(30, 5);
    assert_eq!(corrupt_reason(&with(bad.finish())), "invalid distance code");
    // A dynamic header whose code-length code is over-subscribed (19 codes of one bit).
    let mut bad = Bits::default();
    bad.put(0b101, 3).put(0, 5).put(0, 5).put(15, 4);
    (0..19).for_each(|_| {
        bad.put(1, 3);
    });
    assert_eq!(corrupt_reason(&with(bad.finish())), "invalid code lengths set");
    // HLIT of 287 symbols.
    let mut bad = Bits::default();
    bad.put(0b101, 3).put(30, 5).put(0, 5).put(0, 4);
    assert_eq!(corrupt_reason(&with(bad.finish())), "too many length or distance symbols");

    let good = gzip(b"some text, some text", 6);
    for (at, value, reason) in [
        (0, 0x1e, "incorrect header check"),
        (1, 0x8c, "incorrect header check"),
        (2, 7, "unknown compression method"),
        (3, 0x20, "unknown header flags set"),
        (good.len() - 8, good[good.len() - 8] ^ 1, "incorrect data check"),
        (good.len() - 1, good[good.len() - 1] ^ 0x80, "incorrect length check"),
    ] {
        let mut stream = good.clone();
        stream[at] = value;
        assert_eq!(corrupt_reason(&stream), reason, "byte {at}");
        assert!(zlib_rs(Framing::Gzip, false, &stream).is_none(), "zlib-rs agrees on byte {at}");
    }
    let garbage: Vec<u8> = (0..200u8).map(|i| i.wrapping_mul(37)).collect();
    assert_eq!(corrupt_reason(&garbage), "incorrect header check");
    // A distance into the member before is corrupt too.
    let first = gzip(b"abcdefgh", 6);
    let mut second = Bits::default();
    second.put(0b011, 3).fixed(257).code(0, 5).fixed(256);
    let second = member(&second.finish(), b"???");
    assert_eq!(corrupt_reason(&[first, second].concat()), "invalid distance too far back");
}

#[test]
fn a_restarted_state_decodes_the_next_body_and_reads_nothing_of_the_last() {
    let first = b"<p>the first body, with words that repeat and repeat</p>\n".repeat(2000);
    let second = b"<li>a second one: other words, other repeats</li>\n".repeat(1500);
    let mut inflate = Inflate::gzip();
    assert!(decode_with(&mut inflate, &gzip(&first, 6), &[5000], 32 * 1024).unwrap().0 == first);
    inflate.restart(Framing::Gzip);
    let (out, repeats) = decode_with(&mut inflate, &gzip(&second, 6), &[700], 32 * 1024).unwrap();
    assert!(out == second);
    assert!(replay(&out, &repeats, &[0]) > out.len() / 2, "its repeats, each checked against the bytes");
    // The last body's bytes are still in the window: a match reaching back to them is refused.
    inflate.restart(Framing::Gzip);
    let mut far = Bits::default();
    far.put(0b011, 3).fixed(257).code(0, 5).fixed(256);
    let far = member(&far.finish(), b"???");
    let refused = decode_with(&mut inflate, &far, &[1], 1024);
    assert!(matches!(refused, Err(CodecError::Corrupt("gzip", r)) if r == "invalid distance too far back"));
    // And as zlib-wrapped deflate after gzip.
    inflate.restart(Framing::Deflate);
    let zlib = crate::codec::encode_all(Encoding::Deflate, &first);
    assert!(decode_with(&mut inflate, &zlib, &[4096], 32 * 1024).unwrap().0 == first);
}

#[test]
fn an_error_sticks() {
    let mut inflate = Inflate::gzip();
    let (mut out, mut repeats) = (Vec::new(), Vec::new());
    assert!(inflate.decode(b"\x1f\x8b\x09", &mut out, 100, &mut repeats).is_err());
    assert!(inflate.decode(b"", &mut out, 100, &mut repeats).is_err());
    assert!(matches!(inflate.finish(), Err(CodecError::Truncated("gzip"))));
}

#[test]
fn every_header_field_is_read_and_its_crc_checked() {
    let data = b"a body behind every optional header field";
    let deflate = raw_deflate(data, 6);
    for extra in [&b""[..], b"\x01\x02\x03\x04"] {
        let mut header = vec![0x1f, 0x8b, 8, 0x1f, 1, 2, 3, 4, 0, 3];
        header.extend_from_slice(&(extra.len() as u16).to_le_bytes());
        header.extend_from_slice(extra);
        header.extend_from_slice(b"name.html\0a comment\0");
        let crc = crc32fast::hash(&header) as u16;
        header.extend_from_slice(&crc.to_le_bytes());
        let stream = [&header[..], &member(&deflate, data)[10..]].concat();
        assert_eq!(zlib_rs(Framing::Gzip, false, &stream).unwrap(), data, "zlib-rs reads it");
        for piece in [1, 2, 7, usize::MAX] {
            assert_eq!(decode_in(&stream, &[piece], 1000).unwrap().0, data, "extra {extra:?}, pieces of {piece}");
        }
        let mut wrong = stream.clone();
        wrong[header.len() - 1] ^= 1;
        assert_eq!(corrupt_reason(&wrong), "header crc mismatch");
    }
}

#[test]
fn an_empty_body_is_truncated_like_zlib_rs() {
    assert!(matches!(decode_all(Encoding::Gzip, b""), Err(CodecError::Truncated("gzip"))));
    assert!(zlib_rs(Framing::Gzip, false, b"").is_none());
    assert!(matches!(decode_in(b"", &[1], 100), Err(CodecError::Truncated("gzip"))));
    assert!(matches!(Inflate::gzip().finish(), Err(CodecError::Truncated("gzip"))));
    assert_eq!(decode_in(&gzip(b"", 6), &[1], 1).unwrap().0, b"");
}

#[test]
fn members_in_every_chunking() {
    let two = [gzip(b"first member, first member, ", 6), gzip(b"second member, second member", 1)].concat();
    for piece in 1..=two.len() {
        for max_out in [1, 3, 100] {
            let (out, repeats) = decode_in(&two, &[piece], max_out).unwrap();
            assert_eq!(out, b"first member, first member, second member, second member");
            assert_eq!(repeats.len(), 2);
            assert!(repeats[1].at >= 28, "positions go on across members: {repeats:?}");
            replay(&out, &repeats, &[0, 28]);
        }
    }
    let padded = [&gzip(b"padded", 6)[..], &[0, 0, 0, 0]].concat();
    assert_eq!(decode_in(&padded, &[1], 100).unwrap().0, b"padded");
    let cut = &two[..two.len() - 3];
    assert!(matches!(decode_in(cut, &[5], 100), Err(CodecError::Truncated("gzip"))));
    // A lone 0x1f after a member starts one (as the zlib-rs decoder has it): cut short.
    let lone = [&gzip(b"x", 6)[..], &[0x1f]].concat();
    assert!(matches!(decode_in(&lone, &[usize::MAX], 100), Err(CodecError::Truncated("gzip"))));
    assert!(zlib_rs(Framing::Gzip, false, &lone).is_none());
}

#[test]
fn bounded_state() {
    assert!(BUF + SLACK + std::mem::size_of::<Tables>() + std::mem::size_of::<Inflate>() < 100 * 1024);
}
