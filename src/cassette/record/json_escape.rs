//! A body's bytes as a JSON string (quotes included), escaped as serde_json escapes it, when they
//! are UTF-8: the text of a recording's body lines. simdutf8 checks, json-escape-simd (napi-rs's
//! SIMD kernel, from sonic-rs) escapes. A hand-written AVX-512 escaper was faster on a micro-bench but
//! made no measurable difference to workload 11, so it was removed (benches/RESULTS.md, "Module notes").

/// Appends `bytes` as a JSON string, quotes included, and returns true when they are UTF-8;
/// otherwise leaves `out` as it was and returns false.
pub(super) fn escape_utf8(bytes: &[u8], out: &mut Vec<u8>) -> bool {
    match simdutf8::basic::from_utf8(bytes) {
        Ok(text) => {
            json_escape_simd::escape_into(text, out);
            true
        }
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn serde(text: &str) -> Vec<u8> {
        serde_json::to_vec(text).unwrap()
    }

    fn escaped(text: &str) -> Vec<u8> {
        let mut out = Vec::new();
        assert!(escape_utf8(text.as_bytes(), &mut out));
        out
    }

    #[test]
    fn every_char_below_0x80_at_every_block_offset() {
        for byte in 0..0x80u8 {
            for offset in 0..70 {
                let mut text = "a".repeat(offset);
                text.push(char::from(byte));
                text.push_str(&"b".repeat(70 - offset));
                assert_eq!(escaped(&text), serde(&text), "byte {byte:#04x} at {offset}");
            }
        }
    }

    #[test]
    fn long_texts() {
        let text: String = "<a href=\"x\">\té\n\\😀\u{1}".repeat(2000);
        assert_eq!(escaped(&text), serde(&text));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        #[test]
        fn equals_serde_json(
            text in proptest::collection::vec(prop_oneof![
                3 => proptest::char::range(' ', '~'),
                2 => proptest::sample::select(vec!['"', '\\', '\n', '\r', '\t', '\u{8}', '\u{c}']),
                1 => proptest::sample::select(vec!['\u{0}', '\u{b}', '\u{1f}', '\u{7f}', 'é', '😀', '\u{2028}']),
            ], 0..400),
        ) {
            let text: String = text.into_iter().collect();
            prop_assert_eq!(escaped(&text), serde(&text));
        }
    }

    #[test]
    fn invalid_utf8_after_ascii_leaves_out_as_it_was() {
        for ascii in [0, 5, 31, 32, 33, 64, 100, 4096, 4100] {
            for bad in [&b"\xff"[..], b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xc3\xa9\xc3"] {
                let mut bytes = vec![b'a'; ascii];
                bytes.extend_from_slice(bad);
                let mut out = b"kept".to_vec();
                assert!(!escape_utf8(&bytes, &mut out), "{ascii} {bad:?}");
                assert_eq!(out, b"kept");
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        #[test]
        fn utf8_or_not_as_std_says(
            pieces in proptest::collection::vec(prop_oneof![
                6 => proptest::collection::vec(b'a'..=b'z', 0..40),
                2 => proptest::sample::select(vec![&b"\""[..], b"\\", b"\n", b"\x01", "é".as_bytes(), "😀".as_bytes(), "\u{2028}".as_bytes()]).prop_map(|b| b.to_vec()),
                1 => proptest::collection::vec(any::<u8>(), 1..4),
            ], 0..40),
        ) {
            let bytes: Vec<u8> = pieces.concat();
            let mut out = b"kept".to_vec();
            let text = escape_utf8(&bytes, &mut out);
            match std::str::from_utf8(&bytes) {
                Ok(s) => {
                    prop_assert!(text);
                    prop_assert_eq!(&out[4..], &serde(s)[..]);
                }
                Err(_) => {
                    prop_assert!(!text);
                    prop_assert_eq!(&out[..], b"kept");
                }
            }
        }
    }
}
