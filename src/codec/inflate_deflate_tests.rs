//! Tests of the `deflate` coding in the decoder (inflate.rs, inflate_framing.rs): zlib-wrapped and raw
//! streams from flate2 (zlib-rs), with the helpers of the gzip tests.

use proptest::prelude::*;

use super::framing::Framing;
use super::tests::{body, cases, decode_with, max_out, pieces, raw_deflate, replay, zlib, zlib_rs};
use super::*;

/// A `deflate` body, zlib-wrapped or raw, at any level, in any chunking and output limit: decodes to
/// itself, its repeats replay, bytes after the stream are ignored, and a stream cut anywhere is truncated.
fn check_deflate(data: &[u8], level: u32, raw: bool, pieces: &[usize], max_out: usize, cut: usize) {
    let stream = if raw { raw_deflate(data, level) } else { zlib(data, level) };
    let (out, repeats) = decode_with(Inflate::deflate(), &stream, pieces, max_out).unwrap();
    assert!(out == data, "{} bytes decoded of {}", out.len(), data.len());
    replay(&out, &repeats, &[0]);
    assert!(level > 0 || repeats.is_empty(), "stored blocks hold no repeats");
    let padded = [&stream[..], b"\0\x1f\x8b trailing bytes"].concat();
    assert!(decode_with(Inflate::deflate(), &padded, pieces, max_out).unwrap().0 == data);
    let cut = cut % stream.len();
    assert!(matches!(
        decode_with(Inflate::deflate(), &stream[..cut], pieces, max_out),
        Err(CodecError::Truncated("deflate"))
    ));
}

proptest! {
    #![proptest_config(cases(64))]

    #[test]
    fn deflate_streams_zlib_wrapped_or_raw(
        data in body(),
        level in prop::sample::select(vec![0u32, 1, 6, 9]),
        raw in any::<bool>(),
        pieces in pieces(),
        max_out in max_out(),
        cut in any::<usize>(),
    ) {
        check_deflate(&data, level, raw, &pieces, max_out, cut);
    }

    /// A zlib or raw stream with one byte changed: Ok or an error, never a panic; where zlib-rs decodes it
    /// too, both agree.
    #[test]
    fn a_flipped_deflate_byte_never_panics(
        data in body(),
        raw in any::<bool>(),
        at in any::<prop::sample::Index>(),
        flip in 1..=255u8,
        pieces in pieces(),
        max_out in max_out(),
    ) {
        let mut stream = if raw { raw_deflate(&data, 6) } else { zlib(&data, 6) };
        let at = at.index(stream.len());
        stream[at] ^= flip;
        let ours = decode_with(Inflate::deflate(), &stream, &pieces, max_out);
        // zlib-rs is told the framing; ours tells it from the first two bytes, which the flip may change.
        let told = ours.is_ok() && at >= 2;
        if let (true, Ok((out, repeats)), Some(theirs)) = (told, &ours, zlib_rs(Framing::Deflate, raw, &stream)) {
            prop_assert!(*out == theirs);
            replay(out, repeats, &[0]);
        }
    }
}

#[test]
fn deflate_in_every_chunking() {
    let data = b"a deflate body, a deflate body, a deflate body";
    for raw in [false, true] {
        let len = if raw { raw_deflate(data, 6) } else { zlib(data, 6) }.len();
        for piece in 1..=len {
            for max_out in [1, 3, 100] {
                check_deflate(data, 6, raw, &[piece], max_out, piece);
            }
        }
    }
}

fn deflate_corrupt_reason(stream: &[u8]) -> String {
    match decode_with(Inflate::deflate(), stream, &[1], 32 * 1024) {
        Err(CodecError::Corrupt("deflate", reason)) => reason,
        other => panic!("not corrupt: {:?}", other.map(|(out, _)| out)),
    }
}

#[test]
fn corrupt_deflate_streams_say_why() {
    let good = zlib(b"some text, some text", 6);
    let mut wrong_sum = good.clone();
    *wrong_sum.last_mut().unwrap() ^= 1;
    assert_eq!(deflate_corrupt_reason(&wrong_sum), "incorrect data check");
    assert!(zlib_rs(Framing::Deflate, false, &wrong_sum).is_none(), "zlib-rs agrees");
    // A header whose window is larger than DEFLATE's (CINFO 8), and one that names a preset dictionary.
    let header = |cmf: u8, flg: u8| {
        let check = (31 - (u16::from(cmf) << 8 | u16::from(flg)) % 31) % 31;
        [&[cmf, flg + check as u8][..], &good[2..]].concat()
    };
    assert_eq!(deflate_corrupt_reason(&header(0x88, 0)), "invalid window size");
    assert_eq!(deflate_corrupt_reason(&header(0x78, 0x20)), "a preset dictionary is needed");
    assert!(zlib_rs(Framing::Deflate, false, &header(0x78, 0x20)).is_none());
    // Bytes that are no zlib header are a raw stream's start: here an invalid block type.
    assert_eq!(deflate_corrupt_reason(&[0b111, 0]), "invalid block type");
    assert!(matches!(decode_with(Inflate::deflate(), b"x", &[1], 10), Err(CodecError::Truncated("deflate"))));
    assert!(matches!(Inflate::deflate().finish(), Err(CodecError::Truncated("deflate"))));
}
