//! What the recording writer spends on one page's body (issue 15): the key scan, the UTF-8 check
//! and the JSON escaping (json-escape-simd, sonic-rs's kernel) that make a `body` line, each alone,
//! then the whole line.
//!
//! Run: `cargo bench --no-default-features --bench record -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use devproxy_native::cassette::record::bench::body_line;
use devproxy_native::cassette::redact::find_key;

mod common;

const PAGE_BYTES: usize = 100 * 1024;

type Group<'a> = criterion::BenchmarkGroup<'a, criterion::measurement::WallTime>;

/// One case that writes into `out` (emptied before each run).
fn bench_into(group: &mut Group<'_>, name: &str, out: &mut Vec<u8>, mut write: impl FnMut(&mut Vec<u8>)) {
    group.bench_function(name, |b| {
        b.iter(|| {
            out.clear();
            write(out);
            out.len()
        })
    });
}

fn record(c: &mut Criterion) {
    let page = common::generate_html("127.0.0.1:8080", PAGE_BYTES);
    let text = std::str::from_utf8(&page).expect("the generated page is UTF-8");
    assert_eq!(find_key(&page), None, "the page holds no key-shaped string");
    let mut out = Vec::with_capacity(3 * page.len());

    let mut group = c.benchmark_group("record_page");
    group.throughput(Throughput::Bytes(page.len() as u64));
    group.bench_function("find_key", |b| b.iter(|| find_key(black_box(&page))));
    group.bench_function("utf8_check", |b| b.iter(|| simdutf8::basic::from_utf8(black_box(&page)).is_ok()));
    bench_into(&mut group, "escape_json_escape_simd", &mut out, |out| {
        json_escape_simd::escape_into(black_box(text), out)
    });
    bench_into(&mut group, "body_line", &mut out, |out| body_line(out, 1, 0, 12.5, black_box(&page)));
    group.finish();
}

criterion_group!(benches, record);
criterion_main!(benches);
