//! The body pipeline (decode → rewrite → encode) fed in random chunkings: the decoded output always
//! equals whole-body rewriting, a flush makes everything rewritten so far decodable, and corrupt or
//! truncated input is an error, never a panic. The same property as `fuzz/fuzz_targets/pipeline.rs`,
//! bounded, on the stable toolchain.

mod common;

use common::CODINGS;
use devproxy_native::body::Pipeline;
use devproxy_native::codec::{decode_all, encode_all, Decoder, Encoder, Encoding, DECODED_PIECE};
use devproxy_native::rewrite::{rewrite_bytes, Rewriter, Rule};
use proptest::prelude::*;

fn rules() -> Vec<Rule> {
    vec![Rule::snippet("<s>"), common::global_rule("a+b|b", "[$&]"), Rule::links("h.st:1", "http")]
}

fn run(compressed: &[u8], input: Encoding, output: Encoding, step: usize, rules: &[Rule]) -> Result<Vec<u8>, String> {
    let mut pipeline = Pipeline::new(input, output, Rewriter::new(rules, "me:2", 64));
    let mut out = Vec::new();
    for chunk in compressed.chunks(step) {
        pipeline.push(chunk, &mut out).map_err(|e| e.to_string())?;
    }
    pipeline.finish(&mut out).map_err(|e| e.to_string())?;
    Ok(out)
}

const PARTS: [&str; 8] = ["a", "b", "<body>", "'http://h.st:1/x'", "é", "\r\n", " ", "zzzzzzzz"];

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(PARTS.to_vec()), 0..300).prop_map(|parts| parts.concat().into_bytes())
}

/// Bodies of up to about a megabyte that compress to little: each part repeated up to 5,000 times, so
/// one compressed chunk decodes to many 32 KiB pieces.
fn long_body() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec((prop::sample::select(PARTS.to_vec()), 1..5_000usize), 1..40)
        .prop_map(|parts| parts.iter().flat_map(|(part, n)| part.repeat(*n).into_bytes()).collect())
}

/// A streaming decoder of the pipeline's output, fed as the output grows.
struct OutputDecoder {
    decoder: Decoder,
    decoded: Vec<u8>,
}

impl OutputDecoder {
    fn feed(&mut self, mut raw: &[u8]) -> Result<(), String> {
        loop {
            let before = self.decoded.len();
            let consumed = self.decoder.decode(raw, &mut self.decoded).map_err(|e| e.to_string())?;
            raw = &raw[consumed..];
            let produced = self.decoded.len() - before;
            if consumed == 0 && produced == 0 && !raw.is_empty() {
                return Err("the output decoder made no progress".into());
            }
            if raw.is_empty() && produced < DECODED_PIECE {
                return Ok(());
            }
        }
    }
}

/// `body` compressed with a flush at each of `flush_at` (decoded offsets); returns the stream and the
/// compressed offset of each flush.
fn encode_with_flushes(coding: Encoding, body: &[u8], flush_at: &[usize]) -> (Vec<u8>, Vec<usize>) {
    let mut encoder = Encoder::new(coding);
    let (mut out, mut offsets, mut at) = (Vec::new(), Vec::new(), 0);
    for &cut in flush_at {
        encoder.encode(&body[at..cut], &mut out).unwrap();
        encoder.flush(&mut out).unwrap();
        offsets.push(out.len());
        at = cut;
    }
    encoder.encode(&body[at..], &mut out).unwrap();
    encoder.finish(&mut out).unwrap();
    (out, offsets)
}

fn describe(a: &[u8], b: &[u8]) -> String {
    let at = a.iter().zip(b).position(|(x, y)| x != y);
    format!("lengths {} and {}, first difference at {at:?}", a.len(), b.len())
}

/// Makes `garbage` start with bytes the coding can never start with, so it must be an error.
fn spoil_header(coding: Encoding, garbage: &mut [u8]) {
    let first = &mut garbage[0];
    match coding {
        // Not the first byte of gzip's magic 1f 8b.
        Encoding::Gzip if *first == 0x1f => *first = 0x1e,
        // Not a zlib header (low nibble 8), so raw DEFLATE whose first block has the reserved type 11.
        Encoding::Deflate => *first |= 0b110,
        // Window bits 0010001 then 1: the large-window escape with its reserved bit set, which every
        // brotli decoder refuses (large windows or not).
        Encoding::Brotli => *first = 0x91,
        // Below every zstd magic (frames 0xFD2FB5xx with legacy ones, skippable frames 0x184D2A5x).
        Encoding::Zstd => *first &= 0x0F,
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn pipeline_equals_whole_body_rewriting(body in body(), input in 0..5usize, output in 0..5usize, step in 1..700usize) {
        let rules = rules();
        let (input, output) = (CODINGS[input], CODINGS[output]);
        let out = run(&encode_all(input, &body), input, output, step, &rules).unwrap();
        let decoded = decode_all(output, &out).unwrap();
        prop_assert_eq!(decoded, rewrite_bytes(&body, &rules, "me:2", 64).unwrap());
    }

    #[test]
    fn garbage_input_never_panics(garbage in prop::collection::vec(any::<u8>(), 0..2000), input in 1..5usize, step in 1..300usize) {
        // Random bytes may even form a valid stream (raw DEFLATE often does): only the absence of a panic
        // is asserted here; the tests below assert the errors.
        let rules = rules();
        let _ = run(&garbage, CODINGS[input], Encoding::Gzip, step, &rules);
    }

    #[test]
    fn input_with_an_impossible_header_is_an_error(
        garbage in prop::collection::vec(any::<u8>(), 1..2000),
        input in 1..5usize,
        output in 0..5usize,
        step in 1..300usize,
    ) {
        let mut garbage = garbage;
        spoil_header(CODINGS[input], &mut garbage);
        let result = run(&garbage, CODINGS[input], CODINGS[output], step, &rules());
        prop_assert!(result.is_err(), "{:?} garbage starting {:02x?} was accepted", CODINGS[input], &garbage[..garbage.len().min(8)]);
    }

    #[test]
    fn truncated_input_is_an_error(
        body in body(),
        input in 1..5usize,
        output in 0..5usize,
        cut in any::<prop::sample::Index>(),
        step in 1..300usize,
    ) {
        let input = CODINGS[input];
        let whole = encode_all(input, &body);
        let cut = cut.index(whole.len()); // strictly before the end
        let result = run(&whole[..cut], input, CODINGS[output], step, &rules());
        prop_assert!(result.is_err(), "{:?} stream of {} bytes cut at {} was accepted", input, whole.len(), cut);
    }

    /// gzip and zlib streams carry a checksum of their content: damage anywhere past the header is an
    /// error, unless the damaged stream still spells the very same content (a flipped byte can turn a
    /// copy into another copy of identical bytes, e.g. a different distance into a run of `z`; the
    /// checksum cannot see that, and nothing is lost). Never different content without an error.
    #[test]
    fn damaged_checksummed_input_is_an_error(
        body in body(),
        gzip in any::<bool>(),
        output in 0..5usize,
        at in any::<prop::sample::Index>(),
        step in 1..300usize,
    ) {
        let (input, header) = if gzip { (Encoding::Gzip, 10) } else { (Encoding::Deflate, 2) };
        let mut damaged = encode_all(input, &body);
        let at = header + at.index(damaged.len() - header);
        damaged[at] ^= 0xFF;
        let rules = rules();
        if let Ok(out) = run(&damaged, input, CODINGS[output], step, &rules) {
            let decoded = decode_all(CODINGS[output], &out).unwrap();
            prop_assert_eq!(decoded, rewrite_bytes(&body, &rules, "me:2", 64).unwrap(),
                "{:?} stream of {} bytes with byte {} flipped was accepted with other content", input, damaged.len(), at);
        }
    }
}

proptest! {
    // Each case moves up to a megabyte through the pipeline several times.
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Bodies far above the 32 KiB decoded piece, compressed small so that one input chunk decodes to
    /// many pieces, with flushes mid-stream: after each flush the output decodes to exactly what the
    /// rewriter has released for the input so far, and at the end to whole-body rewriting.
    #[test]
    fn long_bodies_with_flushes_decode_at_every_flush(
        body in long_body(),
        input in 0..5usize,
        output in 0..5usize,
        flushes in prop::collection::vec(any::<prop::sample::Index>(), 1..5),
        step in prop::sample::select(vec![1usize, 37, 700, 4096, 1 << 20]),
    ) {
        let rules = rules();
        let (input, output) = (CODINGS[input], CODINGS[output]);
        let mut flush_at: Vec<usize> = flushes.iter().map(|i| i.index(body.len() + 1)).collect();
        flush_at.sort_unstable();
        let (compressed, offsets) = encode_with_flushes(input, &body, &flush_at);
        let mut pipeline = Pipeline::new(input, output, Rewriter::new(&rules, "me:2", 64));
        let mut decoder = OutputDecoder { decoder: Decoder::new(output), decoded: Vec::new() };
        let (mut out, mut at) = (Vec::new(), 0);
        for (&offset, &decoded_upto) in offsets.iter().zip(&flush_at) {
            for chunk in compressed[at..offset].chunks(step) {
                pipeline.push(chunk, &mut out).unwrap();
            }
            at = offset;
            pipeline.flush(&mut out).unwrap();
            decoder.feed(&out).map_err(TestCaseError::fail)?;
            out.clear();
            // What the rewriter releases depends only on the input seen (bytes that may still belong to
            // a match stay held): a rewriter given the same prefix at once releases the same bytes.
            let mut reference = Rewriter::new(&rules, "me:2", 64);
            let mut released = Vec::new();
            reference.push(&body[..decoded_upto], &mut released).unwrap();
            prop_assert!(
                decoder.decoded == released,
                "{:?} -> {:?}, flush after {} of {} bytes: {}",
                input, output, decoded_upto, body.len(), describe(&decoder.decoded, &released)
            );
        }
        for chunk in compressed[at..].chunks(step) {
            pipeline.push(chunk, &mut out).unwrap();
        }
        pipeline.finish(&mut out).unwrap();
        decoder.feed(&out).map_err(TestCaseError::fail)?;
        decoder.decoder.finish().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let expected = rewrite_bytes(&body, &rules, "me:2", 64).unwrap();
        prop_assert!(decoder.decoded == expected, "{:?} -> {:?}: {}", input, output, describe(&decoder.decoded, &expected));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// A compressed chunk may decode to far more than it holds: `push_some` stops once its output reaches the
    /// limit and leaves the rest of the chunk to be pushed again (as the proxy's body does), so that no call
    /// holds more than about the limit, even where the decoder took a whole block's bytes at once (brotli,
    /// zstd); what comes out in the end is whole-body rewriting all the same.
    /// `decode_some` (the sniff's read-ahead) is bounded the same way.
    #[test]
    fn bounded_pushes_leave_the_rest_and_lose_nothing(
        body in long_body(),
        input in 0..5usize,
        output in 0..5usize,
        limit in prop::sample::select(vec![1usize, 1000, 64 * 1024]),
        step in prop::sample::select(vec![700usize, 4096, 1 << 20]),
    ) {
        let rules = rules();
        let (input, output) = (CODINGS[input], CODINGS[output]);
        let compressed = encode_all(input, &body);
        let mut pipeline = Pipeline::new(input, output, Rewriter::new(&rules, "me:2", 64));
        let (mut out, mut largest_call, mut calls_left_a_rest) = (Vec::new(), 0, 0);
        for chunk in compressed.chunks(step) {
            let mut rest = chunk;
            loop {
                let before = out.len();
                let taken = pipeline.push_some(rest, &mut out, before + limit).unwrap();
                largest_call = largest_call.max(out.len() - before);
                rest = &rest[taken..];
                if rest.is_empty() && !pipeline.output_pending() {
                    break;
                }
                calls_left_a_rest += 1;
            }
        }
        pipeline.finish(&mut out).unwrap();
        prop_assert_eq!(decode_all(output, &out).unwrap(), rewrite_bytes(&body, &rules, "me:2", 64).unwrap());
        // One piece rewritten by these rules (a snippet, `[$&]` around one byte in two, links) is at most 3 pieces.
        // An uncompressed chunk goes in whole: it is no larger decoded than as it came.
        let bound = limit + 3 * if input == Encoding::Identity { step.max(DECODED_PIECE) } else { DECODED_PIECE };
        prop_assert!(largest_call <= bound, "one call wrote {} bytes, limit {}", largest_call, limit);
        if input != Encoding::Identity && output == Encoding::Identity && body.len() > 4 * DECODED_PIECE && compressed.len() < step {
            prop_assert!(calls_left_a_rest > 0, "a small chunk of a large body went in at once");
        }

        let mut sniffer = Pipeline::new(input, output, Rewriter::new(&rules, "me:2", 64));
        let (mut decoded, mut rest) = (Vec::new(), &compressed[..]);
        let taken = sniffer.decode_some(rest, &mut decoded, limit).unwrap();
        prop_assert!(decoded.len() <= limit + DECODED_PIECE, "the read-ahead decoded {} bytes, limit {}, {:?}", decoded.len(), limit, input);
        // An uncompressed body holds nothing back: a pipeline that said so would be drained forever.
        prop_assert!(input != Encoding::Identity || !sniffer.output_pending(), "identity: nothing pending");
        rest = &rest[taken..];
        while !rest.is_empty() || sniffer.output_pending() {
            let taken = sniffer.decode_some(rest, &mut decoded, usize::MAX).unwrap();
            rest = &rest[taken..];
        }
        prop_assert_eq!(decoded, body);
    }
}
