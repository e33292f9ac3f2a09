//! A body's bytes as a JSON string (quotes included), escaped as serde_json escapes it, when they
//! are UTF-8: the text of a recording's body lines.
//!
//! Why our own kernel: on a page, json-escape-simd (sonic-rs's kernel) leaves its SIMD loop for
//! every byte that needs escaping, and HTML has one every ~76 bytes (quotes, newlines). On the
//! bench page (105,062 B, 1,385 escapes) it took 15.6 µs; this AVX-512 loop, which escapes a whole
//! 32-byte block at once (each byte widened to a `\`-and-byte pair, the unneeded `\`s squeezed out
//! with VPCOMPRESSB), takes 6.3 µs (`cargo bench --no-default-features --bench record` on the CI
//! machine's Xeon, 2026-12-01, before the ASCII prefix below). Escaping was the largest cost of the
//! recording writer. The loop also notes the first block with a non-ASCII byte: what comes before
//! needs no UTF-8 check, so an ASCII body (most scripts, styles and JSON) is read once instead of
//! twice. CPUs without AVX-512 VBMI2 (older x86, ARM) check with simdutf8 and escape with
//! json-escape-simd.

/// serde_json's two-byte escape of each byte below 0x20 (`\n` for 0x0a); 0 where it writes
/// `\u00XX`.
#[cfg(target_arch = "x86_64")]
const SHORT_ESCAPES: [u8; 32] = {
    let mut table = [0u8; 32];
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table
};

/// Appends `bytes` as a JSON string, quotes included, and returns true when they are UTF-8;
/// otherwise leaves `out` as it was and returns false.
pub fn escape_utf8(bytes: &[u8], out: &mut Vec<u8>) -> bool {
    #[cfg(target_arch = "x86_64")]
    if has_avx512_vbmi2() {
        let start = out.len();
        out.push(b'"');
        // SAFETY: the CPU has the features `escape_avx512` is compiled for (checked just above).
        let ascii = unsafe { escape_avx512::<true>(bytes, out) };
        if ascii < bytes.len() {
            // What comes before `ascii` is ASCII: the whole is UTF-8 when the rest is.
            if simdutf8::basic::from_utf8(&bytes[ascii..]).is_err() {
                out.truncate(start);
                return false;
            }
            // SAFETY: as above.
            unsafe { escape_avx512::<false>(&bytes[ascii..], out) };
        }
        out.push(b'"');
        return true;
    }
    match simdutf8::basic::from_utf8(bytes) {
        Ok(text) => {
            json_escape_simd::escape_into(text, out);
            true
        }
        Err(_) => false,
    }
}

#[cfg(target_arch = "x86_64")]
fn has_avx512_vbmi2() -> bool {
    #[cfg(test)]
    if tests::PORTABLE.with(std::cell::Cell::get) {
        return false;
    }
    is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512vl")
        && is_x86_feature_detected!("avx512vbmi")
        && is_x86_feature_detected!("avx512vbmi2")
        && is_x86_feature_detected!("bmi2")
}

/// The bytes escaped one by one (the tail under 32 bytes, and blocks with a `\u00XX` control).
#[cfg(target_arch = "x86_64")]
fn escape_bytes(bytes: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut plain = 0;
    for (i, &byte) in bytes.iter().enumerate() {
        let short = match byte {
            b'"' | b'\\' => byte,
            0..=0x1f => SHORT_ESCAPES[usize::from(byte)],
            _ => continue,
        };
        out.extend_from_slice(&bytes[plain..i]);
        plain = i + 1;
        if short == 0 {
            out.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[usize::from(byte >> 4)], HEX[usize::from(byte & 15)]]);
        } else {
            out.extend_from_slice(&[b'\\', short]);
        }
    }
    out.extend_from_slice(&bytes[plain..]);
}

/// Escapes 32 bytes a step: a block without quote, backslash or control is stored as it is;
/// otherwise each byte becomes the pair (`\`, byte or its short escape letter) and the `\`s of the
/// bytes that need none are squeezed out, so the block comes out in one 64-byte store. Returns how
/// many bytes it escaped: all, or with `ASCII_ONLY` those before the first 32-byte block (or the
/// tail) that holds a non-ASCII byte.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,bmi2")]
fn escape_avx512<const ASCII_ONLY: bool>(bytes: &[u8], out: &mut Vec<u8>) -> usize {
    use std::arch::x86_64::*;
    /// Input bytes per reservation: the output room is reserved for all of them escaped.
    const BATCH: usize = 4096;
    // SAFETY: `SHORT_ESCAPES` is 32 bytes, the size of one unaligned 256-bit load.
    let letters = unsafe { _mm256_loadu_si256(SHORT_ESCAPES.as_ptr().cast()) };
    let quote = _mm256_set1_epi8(b'"' as i8);
    let backslash = _mm256_set1_epi8(b'\\' as i8);
    let space = _mm256_set1_epi8(0x20);
    let prefix = _mm512_set1_epi16(i16::from(b'\\'));
    let mut at = 0;
    while bytes.len() - at >= 32 {
        let batch_end = at + ((bytes.len() - at).min(BATCH) & !31);
        // A block of 32 bytes comes out as at most 64, and each step stores 64 bytes.
        out.reserve(2 * (batch_end - at));
        let mut len = out.len();
        while at < batch_end {
            // SAFETY: `at + 32 <= batch_end <= bytes.len()`.
            let block = unsafe { _mm256_loadu_si256(bytes.as_ptr().add(at).cast()) };
            if ASCII_ONLY && _mm256_movepi8_mask(block) != 0 {
                // SAFETY: as at the end of a batch.
                unsafe { out.set_len(len) };
                return at;
            }
            let controls = _mm256_cmplt_epu8_mask(block, space);
            let escaped = _mm256_cmpeq_epi8_mask(block, quote) | _mm256_cmpeq_epi8_mask(block, backslash) | controls;
            if escaped == 0 {
                // SAFETY: `len + 32` is within the room reserved for this batch (see above).
                unsafe { _mm256_storeu_si256(out.as_mut_ptr().add(len).cast(), block) };
                len += 32;
                at += 32;
                continue;
            }
            // Each control byte (< 32) indexes the table of its escape letter.
            let short = _mm256_permutexvar_epi8(block, letters);
            if controls & _mm256_cmpeq_epi8_mask(short, _mm256_setzero_si256()) != 0 {
                // A control written `\u00XX` (rare): this block byte by byte.
                // SAFETY: the bytes below `len` were there before or written by the stores above.
                unsafe { out.set_len(len) };
                escape_bytes(&bytes[at..at + 32], out);
                at += 32;
                out.reserve(2 * (batch_end - at));
                len = out.len();
                continue;
            }
            let letters_or_bytes = _mm256_mask_blend_epi8(controls, block, short);
            // 16-bit lanes, little-endian: the `\` first, then the byte.
            let pairs = _mm512_or_si512(_mm512_slli_epi16(_mm512_cvtepu8_epi16(letters_or_bytes), 8), prefix);
            // Keep every byte, and the `\` of those that are escaped.
            let keep = _pdep_u64(u64::from(escaped), 0x5555_5555_5555_5555) | 0xAAAA_AAAA_AAAA_AAAA;
            // SAFETY: the 64 bytes from `len` are within the room reserved for this batch.
            unsafe { _mm512_storeu_si512(out.as_mut_ptr().add(len).cast(), _mm512_maskz_compress_epi8(keep, pairs)) };
            len += 32 + escaped.count_ones() as usize;
            at += 32;
        }
        // SAFETY: every byte below `len` was written by a store of this batch or was there before.
        unsafe { out.set_len(len) };
    }
    if ASCII_ONLY && !bytes[at..].is_ascii() {
        return at;
    }
    escape_bytes(&bytes[at..], out);
    bytes.len()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::cell::Cell;

    thread_local! {
        /// Set by a test to run json-escape-simd instead of the AVX-512 kernel.
        pub static PORTABLE: Cell<bool> = const { Cell::new(false) };
    }

    fn serde(text: &str) -> Vec<u8> {
        serde_json::to_vec(text).unwrap()
    }

    fn both(text: &str) -> (Vec<u8>, Vec<u8>) {
        let mut kernel = Vec::new();
        assert!(escape_utf8(text.as_bytes(), &mut kernel));
        PORTABLE.with(|p| p.set(true));
        let mut portable = Vec::new();
        assert!(escape_utf8(text.as_bytes(), &mut portable));
        PORTABLE.with(|p| p.set(false));
        (kernel, portable)
    }

    #[test]
    fn every_char_below_0x80_at_every_block_offset() {
        for byte in 0..0x80u8 {
            for offset in 0..70 {
                let mut text = "a".repeat(offset);
                text.push(char::from(byte));
                text.push_str(&"b".repeat(70 - offset));
                let (kernel, portable) = both(&text);
                assert_eq!(kernel, serde(&text), "byte {byte:#04x} at {offset}");
                assert_eq!(portable, kernel);
            }
        }
    }

    #[test]
    fn long_texts_cross_batches() {
        let text: String = "<a href=\"x\">\té\n\\😀\u{1}".repeat(2000);
        assert_eq!(both(&text).0, serde(&text));
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
            let (kernel, portable) = both(&text);
            prop_assert_eq!(&kernel, &serde(&text));
            prop_assert_eq!(&portable, &kernel);
        }
    }

    #[test]
    fn invalid_utf8_after_ascii_blocks_leaves_out_as_it_was() {
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
            for portable in [false, true] {
                PORTABLE.with(|p| p.set(portable));
                let mut out = b"kept".to_vec();
                let text = escape_utf8(&bytes, &mut out);
                PORTABLE.with(|p| p.set(false));
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
}
