//! The body pipeline (decode → rewrite → encode) fed in random chunkings: the decoded output always
//! equals whole-body rewriting, and corrupt input is an error, never a panic. The same property as
//! `fuzz/fuzz_targets/pipeline.rs`, bounded, on the stable toolchain.

use devproxy_native::body::Pipeline;
use devproxy_native::codec::{decode_all, encode_all, Encoding};
use devproxy_native::rewrite::{rewrite_bytes, Rewriter, Rule, RuleReplacement};
use proptest::prelude::*;

const CODINGS: [Encoding; 5] =
    [Encoding::Identity, Encoding::Gzip, Encoding::Deflate, Encoding::Brotli, Encoding::Zstd];

fn rules() -> Vec<Rule> {
    vec![
        Rule::snippet("<s>"),
        Rule::regex("a+b|b", "g", RuleReplacement::Text("[$&]".into())).unwrap(),
        Rule::links("h.st:1"),
    ]
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

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop::sample::select(vec!["a", "b", "<body>", "'http://h.st:1/x'", "é", "\r\n", " ", "zzzzzzzz"]),
        0..300,
    )
    .prop_map(|parts| parts.concat().into_bytes())
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
    fn corrupt_input_is_an_error_not_a_panic(garbage in prop::collection::vec(any::<u8>(), 0..2000), input in 1..5usize, step in 1..300usize) {
        let rules = rules();
        let _ = run(&garbage, CODINGS[input], Encoding::Gzip, step, &rules);
    }
}
