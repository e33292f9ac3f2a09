//! A JSON string (quotes included) escaped as serde_json escapes it, for the body lines of a
//! recording.
//!
//! Why our own kernel: on a page, json-escape-simd (sonic-rs's kernel) leaves its SIMD loop for
//! every byte that needs escaping, and HTML has one every ~76 bytes (quotes, newlines). On the
//! bench page (105,062 B, 1,385 escapes) it took 15.2 µs; this AVX-512 loop, which escapes a
//! whole 32-byte block at once (each byte widened to a `\`-and-byte pair, the unneeded `\`s
//! squeezed out with VPCOMPRESSB), takes 5.9 µs (best of 7 x 2,000 runs, hot cache, on the CI
//! machine's Xeon). Escaping was the largest cost of the recording writer. CPUs without AVX-512
//! VBMI2 (older x86, ARM) use json-escape-simd.

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

/// Appends `text` as a JSON string, quotes included.
pub fn escape_into(text: &str, out: &mut Vec<u8>) {
    #[cfg(target_arch = "x86_64")]
    if has_avx512_vbmi2() {
        out.push(b'"');
        // SAFETY: the CPU has the features `escape_avx512` is compiled for (checked just above).
        unsafe { escape_avx512(text.as_bytes(), out) };
        out.push(b'"');
        return;
    }
    json_escape_simd::escape_into(text, out);
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
/// bytes that need none are squeezed out, so the block comes out in one 64-byte store.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,bmi2")]
fn escape_avx512(bytes: &[u8], out: &mut Vec<u8>) {
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
    escape_bytes(&bytes[at..], out);
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
        escape_into(text, &mut kernel);
        PORTABLE.with(|p| p.set(true));
        let mut portable = Vec::new();
        escape_into(text, &mut portable);
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
}
