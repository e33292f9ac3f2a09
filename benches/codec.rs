//! What compressing one rewritten page costs: the proxy's encoders against zlib-rs's gzip at the
//! level it used before (1, the quick strategy), at 2 (its first level with dynamic codes and zlib-1
//! sizes) and at the level servers usually send (6); and libdeflate (whole buffers only: it cannot
//! stream, see src/codec/deflate.rs) at levels 1 and 6.
//!
//! Run: `cargo bench --no-default-features --bench codec -- --warm-up-time 1 --measurement-time 4`

use std::hint::black_box;
use std::io::Write;

use criterion::{criterion_group, Criterion, SamplingMode, Throughput};
use devproxy_native::body::Pipeline;
use devproxy_native::codec::{decode_all, encode_all, Encoding};
use devproxy_native::rewrite::{Rewriter, Rule};

mod common;

const PAGE_BYTES: usize = 100 * 1024;

fn zlib_rs_gzip(page: &[u8], level: u32) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
    for piece in page.chunks(16 * 1024) {
        encoder.write_all(piece).expect("in memory");
    }
    encoder.finish().expect("in memory")
}

fn libdeflate_gzip(page: &[u8], level: i32) -> Vec<u8> {
    let mut compressor = libdeflater::Compressor::new(libdeflater::CompressionLvl::new(level).expect("level"));
    let mut out = vec![0; compressor.gzip_compress_bound(page.len())];
    let n = compressor.gzip_compress(page, &mut out).expect("in memory");
    out.truncate(n);
    out
}

fn benches(c: &mut Criterion) {
    let page = common::generate_html("127.0.0.1:8080", PAGE_BYTES);
    eprintln!("page: {} bytes", page.len());
    let ours = [Encoding::Gzip, Encoding::Zstd, Encoding::Brotli];
    for encoding in ours {
        let compressed = encode_all(encoding, &page);
        assert_eq!(decode_all(encoding, &compressed).expect("decodes"), page, "{encoding:?}");
        eprintln!(
            "{:<24} {:>7} bytes ({:.3} of the page)",
            encoding.token(),
            compressed.len(),
            ratio(&compressed, &page)
        );
    }
    for level in [1, 2, 6] {
        let compressed = zlib_rs_gzip(&page, level);
        eprintln!(
            "zlib-rs gzip level {level:<6} {:>7} bytes ({:.3} of the page)",
            compressed.len(),
            ratio(&compressed, &page)
        );
    }
    for level in [1, 6] {
        let compressed = libdeflate_gzip(&page, level);
        eprintln!(
            "libdeflate gzip level {level:<3} {:>7} bytes ({:.3} of the page)",
            compressed.len(),
            ratio(&compressed, &page)
        );
    }

    let mut group = c.benchmark_group("encode_100k_page");
    group.sampling_mode(SamplingMode::Flat).sample_size(30);
    group.throughput(Throughput::Bytes(page.len() as u64));
    for encoding in ours {
        group.bench_function(encoding.token(), |b| b.iter(|| encode_all(encoding, black_box(&page))));
    }
    for level in [1, 2, 6] {
        group.bench_function(format!("zlib_rs_gzip_{level}"), |b| b.iter(|| zlib_rs_gzip(black_box(&page), level)));
    }
    for level in [1, 6] {
        group.bench_function(format!("libdeflate_gzip_{level}"), |b| {
            b.iter(|| libdeflate_gzip(black_box(&page), level))
        });
    }
    group.finish();

    // Workload 1 of `npm run bench` without the network: the upstream's gzip -6 page decoded,
    // rewritten (snippet + links) and gzip-encoded again, in the 16 KiB pieces a socket delivers;
    // `decode_only` and `decode_rewrite` split the cost between the steps; the encoder follows the upstream's
    // matches (`codec::Reuse`), or searches on its own in `decode_rewrite_encode_own_search`.
    let upstream = zlib_rs_gzip(&page, 6);
    let rules = [
        Rule::snippet("<script async src=\"/browser-sync/browser-sync-client.js\"></script>"),
        Rule::links("127.0.0.1:8080", "http"),
    ];
    let run_with = |decode: Encoding, encode: Encoding, rewrite: bool, reuse: bool| {
        let rules: &[Rule] = if rewrite { &rules } else { &[] };
        let mut pipeline = Pipeline::new(decode, encode, Rewriter::new(rules, "127.0.0.1:3000", 64 * 1024));
        if !reuse {
            pipeline = pipeline.without_reuse();
        }
        let mut out = Vec::new();
        for piece in black_box(&upstream[..]).chunks(16 * 1024) {
            pipeline.push(piece, &mut out).expect("in memory");
        }
        pipeline.finish(&mut out).expect("in memory");
        out
    };
    let run = |decode: Encoding, encode: Encoding, rewrite: bool| run_with(decode, encode, rewrite, true);
    eprintln!(
        "w1 pipeline: {} bytes upstream, {} bytes out",
        upstream.len(),
        run(Encoding::Gzip, Encoding::Gzip, true).len()
    );
    let mut group = c.benchmark_group("w1_page");
    group.sampling_mode(SamplingMode::Flat).sample_size(30);
    group.throughput(Throughput::Bytes(page.len() as u64));
    group.bench_function("decode_only", |b| b.iter(|| run(Encoding::Gzip, Encoding::Identity, false)));
    group.bench_function("decode_rewrite", |b| b.iter(|| run(Encoding::Gzip, Encoding::Identity, true)));
    group.bench_function("decode_rewrite_encode", |b| b.iter(|| run(Encoding::Gzip, Encoding::Gzip, true)));
    // The same with our own search instead of the upstream's matches (`Pipeline::without_reuse`).
    group.bench_function("decode_rewrite_encode_own_search", |b| {
        b.iter(|| run_with(Encoding::Gzip, Encoding::Gzip, true, false))
    });
    group.finish();
}

fn ratio(compressed: &[u8], page: &[u8]) -> f64 {
    compressed.len() as f64 / page.len() as f64
}

criterion_group!(codec, benches);

/// `CODEC_PAGES=a.html:b.html codec` (or `CODEC_PAGES=` for the generated pages alone): each page's size
/// through each encoder, as a ratio to zlib-rs's level 6 (what upstreams send), with its time per page
/// (median of 21).
fn compare_sizes(pages: &str) {
    let time = |f: &dyn Fn() -> usize| {
        let mut runs: Vec<f64> = (0..21)
            .map(|_| {
                let start = std::time::Instant::now();
                black_box(f());
                start.elapsed().as_secs_f64() * 1e6
            })
            .collect();
        runs.sort_by(f64::total_cmp);
        runs[10]
    };
    let generated = [
        ("generated bench page".to_string(), common::generate_html("127.0.0.1:8080", PAGE_BYTES)),
        ("generated API reference page".to_string(), common::generate_doc_page(300 * 1024)),
    ];
    let files =
        pages.split(':').filter(|p| !p.is_empty()).map(|p| (p.to_string(), std::fs::read(p).expect("a readable page")));
    for (path, page) in generated.into_iter().chain(files) {
        let path = path.as_str();
        let level6 = zlib_rs_gzip(&page, 6).len() as f64;
        let ours = encode_all(Encoding::Gzip, &page);
        assert_eq!(decode_all(Encoding::Gzip, &ours).expect("decodes"), page);
        let mut row = format!("{:<36} {:>7} zlib6 {:>6}", path.rsplit('/').next().unwrap_or(path), page.len(), level6);
        let mut cell = |name: &str, f: &dyn Fn() -> usize| {
            row += &format!("  {name} {:.3} {:>5.0}us", f() as f64 / level6, time(f));
        };
        cell("ours", &|| encode_all(Encoding::Gzip, &page).len());
        // The page as the proxy sends it: the upstream's gzip -6 decoded, the snippet and the links
        // rewritten, gzip again; guided by the upstream's repeats (`reuse`), and with our own search.
        let upstream = zlib_rs_gzip(&page, 6);
        let rules = [
            Rule::snippet("<script async src=\"/browser-sync/browser-sync-client.js\"></script>"),
            Rule::links("127.0.0.1:8080", "http"),
        ];
        let proxied = |reuse: bool| {
            let mut pipeline =
                Pipeline::new(Encoding::Gzip, Encoding::Gzip, Rewriter::new(&rules, "127.0.0.1:3000", 64 * 1024));
            if !reuse {
                pipeline = pipeline.without_reuse();
            }
            let mut out = Vec::new();
            for piece in upstream.chunks(16 * 1024) {
                pipeline.push(piece, &mut out).expect("in memory");
            }
            pipeline.finish(&mut out).expect("in memory");
            out.len()
        };
        cell("proxied", &|| proxied(true));
        cell("proxied-own", &|| proxied(false));
        cell("zlib1", &|| zlib_rs_gzip(&page, 1).len());
        cell("zlib4", &|| zlib_rs_gzip(&page, 4).len());
        for level in 1..=6 {
            cell(&format!("ld{level}"), &|| libdeflate_gzip(&page, level).len());
        }
        eprintln!("{row}");
    }
}

/// `CODEC_LOOPS=N [CODEC_CASE=gzip|w1|w1own|decode|decode_rewrite|libdeflateN|zlib1|rules] codec`: that case N times and nothing else,
/// (`w1own`: w1 with the encoder's own search, not the upstream's repeats; `rules`: the page through the rewrite engine alone with `CODEC_RULES`, a comma list of csp, snippet,
/// links and encoded, the stages a proxied page runs, and `re:<source>` for a user's regex rule, to price
/// each one; the rules are compiled once, before the loops: run it with `CODEC_LOOPS=0` too to subtract that)
/// for `perf stat` (instructions and cycles per page do not depend on what else the machine runs)
/// and `perf record`.
fn main() {
    if let Ok(pages) = std::env::var("CODEC_PAGES") {
        compare_sizes(&pages);
        return;
    }
    if let Ok(loops) = std::env::var("CODEC_LOOPS") {
        let loops: usize = loops.parse().expect("CODEC_LOOPS is a number");
        let page = common::generate_html("127.0.0.1:8080", PAGE_BYTES);
        let upstream = zlib_rs_gzip(&page, 6);
        let rules = [
            Rule::snippet("<script async src=\"/browser-sync/browser-sync-client.js\"></script>"),
            Rule::links("127.0.0.1:8080", "http"),
        ];
        let names = std::env::var("CODEC_RULES").unwrap_or_default();
        let named_rules: Vec<Rule> = names
            .split(',')
            .filter(|n| !n.is_empty())
            .map(|n| match n {
                "csp" => Rule::csp_meta(),
                "snippet" => Rule::snippet("<script async src=\"/browser-sync/browser-sync-client.js\"></script>"),
                "links" => Rule::links("127.0.0.1:8080", "http"),
                "encoded" => Rule::encoded_origin("127.0.0.1:8080", "http"),
                // `re:<source>`: a user's regex rule (flags `g`), its matches removed.
                other => match other.strip_prefix("re:") {
                    Some(source) => {
                        Rule::regex(source, "g", devproxy_native::rewrite::RuleReplacement::Text(String::new()))
                            .expect("the rule compiles")
                    }
                    None => panic!("unknown rule {other}"),
                },
            })
            .collect();
        let case = std::env::var("CODEC_CASE").unwrap_or_else(|_| "gzip".into());
        let mut bytes = 0;
        for _ in 0..loops {
            bytes += match case.as_str() {
                "gzip" => encode_all(Encoding::Gzip, black_box(&page)).len(),
                "rules" => {
                    let mut rewriter = Rewriter::new(&named_rules, "127.0.0.1:3000", 64 * 1024);
                    let mut out = Vec::new();
                    for piece in black_box(&page[..]).chunks(16 * 1024) {
                        rewriter.push(piece, &mut out).expect("in memory");
                    }
                    rewriter.finish(&mut out).expect("in memory");
                    out.len()
                }
                libdeflate if libdeflate.starts_with("libdeflate") => {
                    libdeflate_gzip(black_box(&page), libdeflate[10..].parse().expect("a level")).len()
                }
                "zlib1" => zlib_rs_gzip(black_box(&page), 1).len(),
                "w1" | "w1own" | "decode" | "decode_rewrite" => {
                    let (rules, encode): (&[Rule], _) = match case.as_str() {
                        "w1" | "w1own" => (&rules, Encoding::Gzip),
                        "decode" => (&[], Encoding::Identity),
                        _ => (&rules, Encoding::Identity),
                    };
                    let mut pipeline =
                        Pipeline::new(Encoding::Gzip, encode, Rewriter::new(rules, "127.0.0.1:3000", 64 * 1024));
                    if case == "w1own" {
                        pipeline = pipeline.without_reuse();
                    }
                    let mut out = Vec::new();
                    for piece in black_box(&upstream[..]).chunks(16 * 1024) {
                        pipeline.push(piece, &mut out).expect("in memory");
                    }
                    pipeline.finish(&mut out).expect("in memory");
                    out.len()
                }
                other => panic!("unknown CODEC_CASE {other}"),
            };
        }
        eprintln!("{case}: {loops} x {} bytes", bytes / loops.max(1));
        return;
    }
    codec();
    Criterion::default().configure_from_args().final_summary();
}
