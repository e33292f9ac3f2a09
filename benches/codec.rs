//! What compressing one rewritten page costs: the proxy's encoders against zlib-rs's gzip at the
//! level it used before (1, the quick strategy), at 2 (its first level with dynamic codes and zlib-1
//! sizes) and at the level servers usually send (6); and libdeflate (whole buffers only: it cannot
//! stream, see src/codec/deflate.rs) at levels 1 and 6.
//!
//! Run: `cargo bench --no-default-features --bench codec -- --warm-up-time 1 --measurement-time 4`

use std::hint::black_box;
use std::io::Write;

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use devproxy_native::codec::{decode_all, encode_all, Encoding};

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
}

fn ratio(compressed: &[u8], page: &[u8]) -> f64 {
    compressed.len() as f64 / page.len() as f64
}

criterion_group!(codec, benches);
criterion_main!(codec);
