//! Look-around rules stay linear (issue 54 item 4): time per MiB at 1, 4, 16 and 64 MiB of body, fed in
//! 16 KiB chunks as the proxy feeds a page.
//!
//! Run: `cargo bench --no-default-features --bench lookaround -- --warm-up-time 1 --measurement-time 5`
//! and, for V8 on the same patterns, `node benches/lookaround.js`.
//!
//! - `links/N`: `(?<![\w.])cdn\.example\.com(?=/)` → `static.example.net` on a generated page
//!   (`common::generate_html`, which names `cdn.example.com` often): a lookbehind and a lookahead of the
//!   kind users write.
//! - `runaway/N`: `(?=(?:a+)+c)a|(?<!a)b` on a run of `a` ending in `b` (no match): the lookahead's body
//!   reads on from every position, where V8 backtracks exponentially (see `lookaround.js`).
//!
//! Before measuring, each body's output is checked against the whole-body result.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput};
use devproxy_native::rewrite::{rewrite_bytes, Rewriter, Rule, RuleReplacement, DEFAULT_MAX_MATCH_BYTES};

mod common;
use common::generate_html;

const MIB: usize = 1024 * 1024;
const SIZES: [usize; 4] = [1, 4, 16, 64];
const CHUNK: usize = 16 * 1024;
const LOCAL_HOST: &str = "127.0.0.1:3000";

/// A body of the given size.
type BodyOf = fn(usize) -> Vec<u8>;

fn rule(source: &str, replace: &str) -> Rule {
    Rule::regex(source, "g", RuleReplacement::Text(replace.into())).expect("the bench's rule compiles")
}

fn chunked(body: &[u8], rules: &[Rule], out: &mut Vec<u8>) {
    out.clear();
    let mut rewriter = Rewriter::new(rules, LOCAL_HOST, DEFAULT_MAX_MATCH_BYTES);
    for chunk in body.chunks(CHUNK) {
        rewriter.push(chunk, out).expect("rewrite");
    }
    rewriter.finish(out).expect("finish");
}

fn benches(c: &mut Criterion) {
    let cases: [(&str, Rule, BodyOf); 2] = [
        ("links", rule(r"(?<![\w.])cdn\.example\.com(?=/)", "static.example.net"), |n| {
            generate_html("127.0.0.1:8080", n)
        }),
        ("runaway", rule("(?=(?:a+)+c)a|(?<!a)b", "x"), |n| {
            let mut body = vec![b'a'; n - 1];
            body.push(b'b');
            body
        }),
    ];
    let mut group = c.benchmark_group("lookaround");
    group.sampling_mode(SamplingMode::Flat).sample_size(10);
    let mut out = Vec::new();
    for (name, rule, body_of) in &cases {
        let rules = [rule.clone()];
        for mib in SIZES {
            let body = body_of(mib * MIB);
            let whole = rewrite_bytes(&body, &rules, LOCAL_HOST, DEFAULT_MAX_MATCH_BYTES).expect("rewrite");
            chunked(&body, &rules, &mut out);
            assert!(out == whole, "{name}/{mib}: chunks differ from the whole body");
            group.throughput(Throughput::Bytes(body.len() as u64));
            group.bench_with_input(BenchmarkId::new(*name, format!("{mib}MiB")), &body, |b, body| {
                b.iter(|| chunked(black_box(body), &rules, &mut out))
            });
        }
    }
    group.finish();
}

criterion_group!(lookaround, benches);
criterion_main!(lookaround);
