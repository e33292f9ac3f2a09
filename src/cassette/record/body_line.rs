//! A `body` line written straight from the bytes: the same JSON that serde_json writes for
//! [`Line::Body`](crate::cassette::format::Line::Body), without the copy into a `String` and with
//! an escaper that tests sixteen bytes at a time. Body text is the writer's main cost (a rewritten
//! page is ~100 KB a request); serde_json's escaper looks up every byte in a table.

use std::io::Write as _;

use base64::Engine as _;

/// Appends the `body` line of `bytes` (text when UTF-8, else base64), newline included.
pub(super) fn push(out: &mut Vec<u8>, id: u64, chunk: u64, at: f64, bytes: &[u8]) {
    // Writing to a Vec cannot fail.
    let _ = write!(out, r#"{{"type":"body","id":{id},"chunk":{chunk},"at":"#);
    // Numbers as serde_json writes them (non-finite as null), so both writers agree.
    serde_json::to_writer(&mut *out, &at).unwrap_or_else(|_| out.extend_from_slice(b"null"));
    let field_at = out.len();
    out.extend_from_slice(br#","text":""#);
    // The escaper sees whether every byte is ASCII; only other text needs the UTF-8 check.
    let ascii = escape_into(out, bytes);
    if !ascii && simdutf8::basic::from_utf8(bytes).is_err() {
        out.truncate(field_at);
        out.extend_from_slice(br#","base64":""#);
        let start = out.len();
        out.resize(start + base64::encoded_len(bytes.len(), true).unwrap_or(0), 0);
        let written = base64::engine::general_purpose::STANDARD.encode_slice(bytes, &mut out[start..]);
        out.truncate(start + written.unwrap_or(0));
    }
    out.extend_from_slice(b"\"}\n");
}

/// Appends `text` JSON-escaped as serde_json escapes it: `"` and `\` with a backslash, the short
/// forms `\b \f \n \r \t`, other bytes below 0x20 as `\u00XX`, everything else as it is.
/// Returns whether every byte was ASCII.
pub(super) fn escape_into(out: &mut Vec<u8>, text: &[u8]) -> bool {
    out.reserve(text.len() + text.len() / 16 + 2);
    let mut high = false;
    // Bytes before `start` are written; runs without escapes are copied whole.
    let mut start = 0;
    let mut blocks = text.chunks_exact(16);
    for (index, block) in blocks.by_ref().enumerate() {
        let (mut mask, non_ascii) = block_mask(block.try_into().unwrap_or(&[0; 16]));
        high |= non_ascii;
        while mask != 0 {
            let at = index * 16 + mask.trailing_zeros() as usize;
            out.extend_from_slice(&text[start..at]);
            escape_byte(out, text[at]);
            start = at + 1;
            mask &= mask - 1;
        }
    }
    let tail = text.len() - blocks.remainder().len();
    for (at, &byte) in text.iter().enumerate().skip(tail) {
        high |= byte >= 0x80;
        if byte < 0x20 || byte == b'"' || byte == b'\\' {
            out.extend_from_slice(&text[start..at]);
            escape_byte(out, byte);
            start = at + 1;
        }
    }
    out.extend_from_slice(&text[start..]);
    !high
}

/// Bit i set when byte i is below 0x20, `"` or `\`; and whether any byte is not ASCII.
#[cfg(target_arch = "x86_64")]
fn block_mask(block: &[u8; 16]) -> (u32, bool) {
    use std::arch::x86_64::*;
    // SAFETY: the intrinsics need SSE2, which every x86_64 CPU has (the target's baseline); the
    // unaligned load reads the 16 bytes `block` borrows, no more.
    unsafe {
        let bytes = _mm_loadu_si128(block.as_ptr().cast());
        let quote = _mm_cmpeq_epi8(bytes, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(bytes, _mm_set1_epi8(b'\\' as i8));
        // Unsigned `byte <= 0x1f` is `max(byte, 0x1f) == 0x1f`.
        let control = _mm_cmpeq_epi8(_mm_max_epu8(bytes, _mm_set1_epi8(0x1f)), _mm_set1_epi8(0x1f));
        let escapes = _mm_or_si128(_mm_or_si128(quote, backslash), control);
        (_mm_movemask_epi8(escapes) as u32, _mm_movemask_epi8(bytes) != 0)
    }
}

#[cfg(not(target_arch = "x86_64"))]
use portable_block_mask as block_mask;

/// [`block_mask`] a byte at a time: other CPUs' version, and the x86_64 one's reference in tests.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn portable_block_mask(block: &[u8; 16]) -> (u32, bool) {
    let mut mask = 0;
    for (i, &byte) in block.iter().enumerate() {
        mask |= u32::from(byte < 0x20 || byte == b'"' || byte == b'\\') << i;
    }
    (mask, block.iter().any(|&b| b >= 0x80))
}

fn escape_byte(out: &mut Vec<u8>, byte: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match byte {
        b'"' => out.extend_from_slice(b"\\\""),
        b'\\' => out.extend_from_slice(b"\\\\"),
        b'\n' => out.extend_from_slice(b"\\n"),
        b'\r' => out.extend_from_slice(b"\\r"),
        b'\t' => out.extend_from_slice(b"\\t"),
        0x08 => out.extend_from_slice(b"\\b"),
        0x0c => out.extend_from_slice(b"\\f"),
        _ => {
            out.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[usize::from(byte >> 4)], HEX[usize::from(byte & 0xf)]])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cassette::format::{Data, Line};
    use proptest::prelude::*;

    fn serde_line(id: u64, chunk: u64, at: f64, bytes: &[u8]) -> Vec<u8> {
        let mut line = serde_json::to_vec(&Line::Body { id, chunk, at, data: Data::of(bytes) }).unwrap();
        line.push(b'\n');
        line
    }

    #[test]
    fn every_byte_escapes_as_serde_json_escapes_it() {
        let all: Vec<u8> = (0..=0x7f).collect();
        let mut ours = Vec::new();
        push(&mut ours, 7, 3, 12.25, &all);
        assert_eq!(String::from_utf8(ours).unwrap(), String::from_utf8(serde_line(7, 3, 12.25, &all)).unwrap());
    }

    #[test]
    fn the_block_mask_marks_exactly_the_bytes_to_escape() {
        let wanted = |b: u8| b < 0x20 || b == b'"' || b == b'\\';
        for filler in [b'a', 0xff, b'"', 0x00] {
            for first in 0..=255u8 {
                for second in 0..=255u8 {
                    let mut block = [filler; 16];
                    block[7] = first;
                    block[8] = second;
                    let (mask, non_ascii) = block_mask(&block);
                    assert_eq!((mask, non_ascii), portable_block_mask(&block));
                    for (i, &b) in block.iter().enumerate() {
                        assert_eq!(mask >> i & 1 == 1, wanted(b), "byte {b:#04x} at {i} in {block:?}");
                    }
                    assert_eq!(non_ascii, block.iter().any(|&b| b >= 0x80));
                }
            }
        }
    }

    #[test]
    fn binary_bodies_are_base64_as_before() {
        let bytes = [0xff, 0x00, b'"', 0xc3];
        let mut ours = Vec::new();
        push(&mut ours, 1, 0, 0.5, &bytes);
        assert_eq!(ours, serde_line(1, 0, 0.5, &bytes));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn lines_equal_serde_jsons(
            text in proptest::collection::vec(prop_oneof![
                4 => proptest::char::range(' ', '~'),
                1 => proptest::sample::select(vec!['"', '\\', '\n', '\r', '\t', '\u{0}', '\u{1f}', '\u{7f}', 'é', '😀', '\u{2028}']),
            ], 0..80),
            bytes in proptest::collection::vec(any::<u8>(), 0..40),
            at in 0.0f64..1e7,
            id in any::<u64>(),
        ) {
            let text: String = text.into_iter().collect();
            for body in [text.as_bytes(), &bytes[..]] {
                let mut ours = Vec::new();
                push(&mut ours, id, 9, at, body);
                prop_assert_eq!(&ours, &serde_line(id, 9, at, body));
            }
        }
    }
}
