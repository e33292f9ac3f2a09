//! A `body` line written straight from the bytes: the same JSON that serde_json writes for
//! [`Line::Body`](crate::cassette::format::Line::Body) (a proptest holds them equal), without the
//! copy into a `String`, with SIMD UTF-8 checking and escaping ([`super::json_escape`]).
//! Body text is the writer's main cost, ~100 KB a request on a page: written this way it costs about
//! half of serde_json's time (benches/RESULTS.md, "Module notes").

use std::io::Write as _;

use base64::Engine as _;

/// Appends the `body` line of `bytes` (text when UTF-8, else base64), newline included.
pub(super) fn push(out: &mut Vec<u8>, id: u64, chunk: u64, at: f64, bytes: &[u8]) {
    // Writing to a Vec cannot fail.
    let _ = write!(out, r#"{{"type":"body","id":{id},"chunk":{chunk},"at":"#);
    // Numbers as serde_json writes them (non-finite as null), so both writers agree.
    serde_json::to_writer(&mut *out, &at).unwrap_or_else(|_| out.extend_from_slice(b"null"));
    out.extend_from_slice(br#","text":"#);
    if !super::json_escape::escape_utf8(bytes, out) {
        out.truncate(out.len() - br#","text":"#.len());
        out.extend_from_slice(br#","base64":""#);
        let start = out.len();
        out.resize(start + base64::encoded_len(bytes.len(), true).unwrap_or(0), 0);
        let written = base64::engine::general_purpose::STANDARD.encode_slice(bytes, &mut out[start..]);
        out.truncate(start + written.unwrap_or(0));
        out.push(b'"');
    }
    out.extend_from_slice(b"}\n");
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
    fn binary_bodies_are_base64_as_before() {
        let bytes = [0xff, 0x00, b'"', 0xc3];
        let mut ours = Vec::new();
        push(&mut ours, 1, 0, 0.5, &bytes);
        assert_eq!(ours, serde_line(1, 0, 0.5, &bytes));
    }

    #[test]
    fn a_binary_body_line_holds_about_its_own_size_in_memory() {
        let bytes = vec![0xff; 64 * 1024];
        let mut ours = Vec::new();
        push(&mut ours, 1, 0, 0.5, &bytes);
        assert_eq!(ours, serde_line(1, 0, 0.5, &bytes));
        // The base64 room is the line's start plus the encoded length (not, say, their product).
        assert!(ours.capacity() <= 3 * ours.len(), "{} bytes held for a line of {}", ours.capacity(), ours.len());
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
