//! The whole body pipeline (decoder → rewrite engine → encoder) on random bodies, codings, chunkings
//! and rule sets: the decoded output must equal whole-body rewriting, and corrupt compressed input
//! must give an error, never a panic. Run: `cargo fuzz run pipeline` (nightly).
#![no_main]

use devproxy_native::body::Pipeline;
use devproxy_native::codec::{decode_all, encode_all, Encoding};
use devproxy_native::rewrite::{rewrite_bytes, Rewriter, Rule, RuleReplacement};
use libfuzzer_sys::fuzz_target;

const CODINGS: [Encoding; 5] = [Encoding::Identity, Encoding::Gzip, Encoding::Deflate, Encoding::Brotli, Encoding::Zstd];

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let (input_coding, output_coding) = (CODINGS[data[0] as usize % 5], CODINGS[data[1] as usize % 5]);
    let step = 1 + data[2] as usize;
    let corrupt = data[3] & 1 == 1;
    let body = &data[4..];
    let rules = vec![
        Rule::snippet("<s>"),
        Rule::regex("a+b|b", "g", RuleReplacement::Text("[$&]".into())).unwrap(),
        Rule::links("h.st:1", "http"),
    ];
    let compressed = if corrupt { body.to_vec() } else { encode_all(input_coding, body) };
    let mut pipeline = Pipeline::new(input_coding, output_coding, Rewriter::new(&rules, "me:2", 64));
    let mut out = Vec::new();
    let mut result = Ok(());
    for chunk in compressed.chunks(step) {
        result = pipeline.push(chunk, &mut out);
        if result.is_err() {
            break;
        }
    }
    if result.is_ok() {
        result = pipeline.finish(&mut out);
    }
    if corrupt {
        return; // any outcome but a panic is fine
    }
    result.expect("a well-formed body goes through");
    let decoded = decode_all(output_coding, &out).expect("our own output decodes");
    assert_eq!(decoded, rewrite_bytes(body, &rules, "me:2", 64).unwrap());
});
