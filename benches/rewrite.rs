//! Throughput of the streaming rewrite engine (issue 3's performance targets).
//!
//! Run: `cargo bench --no-default-features --bench rewrite -- --warm-up-time 1 --measurement-time 5`
//!
//! The body is a deterministic, generated ~10 MiB HTML page (`common::generate_html`). The bench also
//! writes it, and the engine's output for the link + snippet rules, to `benches/.work/` so that
//! `node benches/engine-vs-node.js` can time Node's `String.prototype.replace` on the very same bytes
//! and check that both produce the same output.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use devproxy_native::rewrite::{rewrite_bytes, Rewriter, Rule, RuleReplacement};

mod common;
use common::generate_html;

/// The proxied server, as the link rule looks for it.
const TARGET_HOST: &str = "127.0.0.1:8080";
/// The proxy, as the browser's Host header names it.
const LOCAL_HOST: &str = "127.0.0.1:3000";
const SNIPPET: &str = "<script async src=\"/__dev.js\"></script>";
const MAX_MATCH: usize = 64 * 1024;
const BODY_BYTES: usize = 10 * 1024 * 1024;
const CHUNK: usize = 4 * 1024;

fn link_and_snippet_rules() -> Vec<Rule> {
    // Browsersync's order: the snippet first, then the link rewrite.
    vec![Rule::snippet(SNIPPET), Rule::links(TARGET_HOST, "http")]
}

fn whole(body: &[u8], rules: &[Rule]) -> Vec<u8> {
    rewrite_bytes(body, rules, LOCAL_HOST, MAX_MATCH).expect("rewrite")
}

/// `push` everything in one call, then `finish`, into a reused buffer.
fn pushed_whole(body: &[u8], rules: &[Rule], out: &mut Vec<u8>) {
    out.clear();
    let mut rewriter = Rewriter::new(rules, LOCAL_HOST, MAX_MATCH);
    rewriter.push(body, out).expect("push");
    rewriter.finish(out).expect("finish");
}

fn chunked(body: &[u8], rules: &[Rule], chunk: usize, out: &mut Vec<u8>) {
    out.clear();
    let mut rewriter = Rewriter::new(rules, LOCAL_HOST, MAX_MATCH);
    for piece in body.chunks(chunk) {
        rewriter.push(piece, out).expect("push");
    }
    rewriter.finish(out).expect("finish");
}

fn work_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches").join(".work")
}

fn count(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).filter(|w| *w == needle).count()
}

fn benches(c: &mut Criterion) {
    let body = generate_html(TARGET_HOST, BODY_BYTES);
    let foreign = generate_html("www.example.org", BODY_BYTES);
    assert_eq!(count(&foreign, TARGET_HOST.as_bytes()), 0);
    let links = count(&body, TARGET_HOST.as_bytes());
    let no_prefix = Rule::regex(r"\b[a-z]+-[0-9]{3,}\b", "g", RuleReplacement::Text("[$&]".into())).expect("rule");
    let rules = link_and_snippet_rules();

    // The same output whatever the feeding; write body and output for the Node comparison.
    let expected = whole(&body, &rules);
    let mut out = Vec::with_capacity(body.len() * 2);
    chunked(&body, &rules, CHUNK, &mut out);
    assert!(out == expected, "4 KiB chunks differ from whole-body output");
    let dir = work_dir();
    std::fs::create_dir_all(&dir).expect("create benches/.work");
    std::fs::write(dir.join("body.html"), &body).expect("write body.html");
    std::fs::write(dir.join("engine-out.html"), &expected).expect("write engine-out.html");
    let no_prefix_matches = count(&whole(&body, std::slice::from_ref(&no_prefix)), b"[");
    eprintln!(
        "body: {} bytes, {} occurrences of {TARGET_HOST} (one per {} bytes), output {} bytes; \
         /\\b[a-z]+-[0-9]{{3,}}\\b/g matches ~{}; written to {}",
        body.len(),
        links,
        body.len() / links.max(1),
        expected.len(),
        no_prefix_matches,
        dir.display()
    );

    let mut group = c.benchmark_group("rewrite");
    group.sampling_mode(SamplingMode::Flat).sample_size(20);
    group.throughput(Throughput::Bytes(body.len() as u64));

    group.bench_function("a_links_snippet_whole", |b| b.iter(|| whole(black_box(&body), &rules)));
    group
        .bench_function("a2_links_snippet_push_whole", |b| b.iter(|| pushed_whole(black_box(&body), &rules, &mut out)));
    group
        .bench_function("b_links_snippet_4k_chunks", |b| b.iter(|| chunked(black_box(&body), &rules, CHUNK, &mut out)));
    let single = std::slice::from_ref(&no_prefix);
    group.bench_function("c_no_prefix_regex_whole", |b| b.iter(|| whole(black_box(&body), single)));
    group.bench_function("c2_no_prefix_regex_4k_chunks", |b| {
        b.iter(|| chunked(black_box(&body), single, CHUNK, &mut out))
    });
    // Multi-line anchors: the rule's automata read the line view of each chunk (issue 17).
    let lines = Rule::regex(r"^\s*<(?:li|p)\b", "gm", RuleReplacement::Text("[$&]".into())).expect("rule");
    let lines = std::slice::from_ref(&lines);
    group.bench_function("e_multiline_anchor_whole", |b| b.iter(|| whole(black_box(&body), lines)));
    group.bench_function("e2_multiline_anchor_4k_chunks", |b| {
        b.iter(|| chunked(black_box(&body), lines, CHUNK, &mut out))
    });
    group.throughput(Throughput::Bytes(foreign.len() as u64));
    let link_only = vec![Rule::links(TARGET_HOST, "http")];
    group.bench_function("d_links_no_host_whole", |b| b.iter(|| whole(black_box(&foreign), &link_only)));
    group.bench_function("d2_links_no_host_4k_chunks", |b| {
        b.iter(|| chunked(black_box(&foreign), &link_only, CHUNK, &mut out))
    });
    // The floor for (d): one memmem pass plus one copy.
    let finder = memchr::memmem::Finder::new(TARGET_HOST.as_bytes());
    group.bench_function("d_floor_memmem_plus_copy", |b| {
        b.iter(|| {
            let found = finder.find(black_box(&foreign));
            out.clear();
            out.extend_from_slice(&foreign);
            (found, out.len())
        })
    });
    group.finish();
}

criterion_group!(rewrite, benches);
criterion_main!(rewrite);
