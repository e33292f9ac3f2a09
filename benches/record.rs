//! What the recording writer spends on one page's body (issue 15): the key scan, the UTF-8 check
//! and the JSON escaping that make a `body` line, each alone, then the whole line; the escaping both
//! with json-escape-simd (sonic-rs's kernel) and with the writer's own (src/cassette/record/
//! json_escape.rs, AVX-512 where the CPU has it, which also checks UTF-8 after the ASCII prefix
//! only); then an all-ASCII page, where that check has nothing left to read.
//!
//! Run: `cargo bench --no-default-features --bench record -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use devproxy_native::cassette::record::bench::{body_line, escape_json};
use devproxy_native::cassette::redact::find_key;

mod common;

const PAGE_BYTES: usize = 100 * 1024;

fn record(c: &mut Criterion) {
    let page = common::generate_html("127.0.0.1:8080", PAGE_BYTES);
    let text = std::str::from_utf8(&page).expect("the generated page is UTF-8");
    let mut ours = Vec::new();
    assert!(escape_json(&page, &mut ours));
    let mut theirs = Vec::new();
    json_escape_simd::escape_into(text, &mut theirs);
    assert_eq!(ours, theirs, "both escapers write the same JSON");
    assert_eq!(find_key(&page), None, "the page holds no key-shaped string");

    let mut group = c.benchmark_group("record_page");
    group.throughput(Throughput::Bytes(page.len() as u64));
    let mut out = Vec::with_capacity(3 * page.len());
    group.bench_function("find_key", |b| b.iter(|| find_key(black_box(&page))));
    group.bench_function("utf8_check", |b| b.iter(|| simdutf8::basic::from_utf8(black_box(&page)).is_ok()));
    group.bench_function("escape_json_escape_simd", |b| {
        b.iter(|| {
            out.clear();
            json_escape_simd::escape_into(black_box(text), &mut out);
            out.len()
        })
    });
    group.bench_function("utf8_check_and_escape_ours", |b| {
        b.iter(|| {
            out.clear();
            escape_json(black_box(&page), &mut out);
            out.len()
        })
    });
    group.bench_function("body_line", |b| {
        b.iter(|| {
            out.clear();
            body_line(&mut out, 1, 0, 12.5, black_box(&page));
            out.len()
        })
    });
    group.finish();

    // The same page with its non-ASCII bytes made ASCII (as most scripts, styles and JSON are): the
    // escaper's ASCII prefix needs no UTF-8 check.
    let ascii: Vec<u8> = page.iter().map(|&b| if b.is_ascii() { b } else { b'x' }).collect();
    let mut group = c.benchmark_group("record_ascii_page");
    group.throughput(Throughput::Bytes(ascii.len() as u64));
    group.bench_function("utf8_check_then_escape_json_escape_simd", |b| {
        b.iter(|| {
            out.clear();
            let text = simdutf8::basic::from_utf8(black_box(&ascii)).expect("ASCII");
            json_escape_simd::escape_into(text, &mut out);
            out.len()
        })
    });
    group.bench_function("utf8_check_and_escape_ours", |b| {
        b.iter(|| {
            out.clear();
            escape_json(black_box(&ascii), &mut out);
            out.len()
        })
    });
    group.bench_function("body_line", |b| {
        b.iter(|| {
            out.clear();
            body_line(&mut out, 1, 0, 12.5, black_box(&ascii));
            out.len()
        })
    });
    group.finish();
}

criterion_group!(benches, record);
criterion_main!(benches);
