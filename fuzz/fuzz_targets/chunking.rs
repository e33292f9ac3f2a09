//! Random bodies, random chunkings, random rule sets: the streamed result must equal the
//! whole-body result, and nothing may panic. Run: `cargo fuzz run chunking` (nightly).
#![no_main]

use devproxy_native::rewrite::{rewrite_bytes, Rewriter, Rule, RuleReplacement};
use libfuzzer_sys::fuzz_target;

const PATTERNS: &[(&str, &str, &str)] = &[
    ("abc|a", "g", "[$&]"),
    ("a*", "g", "-"),
    ("^a|b$", "gm", "<$&>"),
    ("\\bb+\\b", "g", "B"),
    ("(a)(b)?c", "g", "$2$1"),
    ("<b[^>]*>", "i", "$&!"),
    ("é+|ß", "gi", "u"),
    ("x*?y", "g", ""),
    ("[^a]{2,4}", "g", "."),
];

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let (selector, cut_seed, body) = (data[0], data[1], &data[2..]);
    let mut rules: Vec<Rule> = PATTERNS
        .iter()
        .enumerate()
        .filter(|(i, _)| selector & (1 << (i % 8)) != 0)
        .map(|(_, (source, flags, replace))| Rule::regex(source, flags, RuleReplacement::Text(replace.to_string())).unwrap())
        .collect();
    if selector & 1 != 0 {
        rules.push(Rule::links("ab.c", "http"));
    }
    let max_match = 1 + (cut_seed as usize % 64);
    let whole = rewrite_bytes(body, &rules, "l:1", max_match).unwrap();
    let mut rewriter = Rewriter::new(&rules, "l:1", max_match);
    let mut out = Vec::new();
    let step = 1 + (cut_seed as usize % 7);
    for chunk in body.chunks(step) {
        rewriter.push(chunk, &mut out).unwrap();
    }
    rewriter.finish(&mut out).unwrap();
    assert_eq!(out, whole);
});
