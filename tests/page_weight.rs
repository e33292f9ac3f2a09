//! Page weight of what the proxy sends, on the benches' generated pages (`benches/common`): gzip from
//! our DEFLATE near the level-6 gzip servers send, and br re-encoded from a br upstream within 1.15x
//! of the upstream's own (quality 11) bytes.

mod common;

use devproxy_native::codec::{decode_all, encode_all, Encoder, Encoding};
use std::io::Write;

fn page() -> Vec<u8> {
    common::bench_page::generate_html("127.0.0.1:8080", 100 * 1024)
}

/// Our gzip decoded by zlib-rs (flate2's reader), not by our own inflater.
fn gunzip(gz: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(gz), &mut out).expect("a valid gzip stream");
    out
}

fn zlib_rs_gzip(page: &[u8], level: u32) -> usize {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
    encoder.write_all(page).unwrap();
    encoder.finish().unwrap().len()
}

/// Page weight against the level-6 gzip the upstream sent, in percent: the encoder trades bytes for CPU
/// (one probe per position); hash chains would reach 110 on both, at twice the encoder's CPU
/// (benches/RESULTS.md, "Page weight").
#[test]
fn gzip_stays_near_level_six_and_below_zlib_rs_level_one() {
    let pages = [
        ("the bench page", page(), 120),
        ("an API reference page", common::bench_page::generate_doc_page(300 * 1024), 125),
    ];
    for (name, page, percent_of_level6) in pages {
        let ours = encode_all(Encoding::Gzip, &page);
        assert_eq!(gunzip(&ours), page);
        let (level1, level6) = (zlib_rs_gzip(&page, 1), zlib_rs_gzip(&page, 6));
        eprintln!("{name}: ours {} B, zlib-rs level 1 {level1} B, level 6 {level6} B", ours.len());
        assert!(
            ours.len() * 100 <= level6 * percent_of_level6,
            "{name}: {} B against level 6's {level6} B",
            ours.len()
        );
        assert!(ours.len() < level1, "{name}: {} B against zlib-rs level 1's {level1} B", ours.len());
    }
}

#[test]
fn br_from_a_br_upstream_weighs_at_most_115_percent_of_the_upstreams() {
    let page = page();
    let mut upstream = Vec::new();
    let params = brotli::enc::BrotliEncoderParams { quality: 11, lgwin: 22, ..Default::default() };
    brotli::BrotliCompress(&mut &page[..], &mut upstream, &params).unwrap();
    let mut encoder = Encoder::for_upstream(Encoding::Brotli, Encoding::Brotli);
    let mut ours = Vec::new();
    for piece in page.chunks(16 * 1024) {
        encoder.encode(piece, &mut ours).unwrap();
    }
    encoder.finish(&mut ours).unwrap();
    assert_eq!(decode_all(Encoding::Brotli, &ours).unwrap(), page);
    let fast = encode_all(Encoding::Brotli, &page);
    eprintln!(
        "upstream q11 {} B, ours for a br upstream {} B, ours otherwise {} B",
        upstream.len(),
        ours.len(),
        fast.len()
    );
    assert!(ours.len() * 100 <= upstream.len() * 115, "{} B against the upstream's {} B", ours.len(), upstream.len());
    assert!(fast.len() > ours.len(), "other bodies keep the faster quality");
}

/// A gzip or deflate page (zlib-wrapped or raw) sent on as gzip (a remote target): the encoder follows
/// the upstream's own matches (`codec::Reuse`), so the page keeps the upstream's weight however our own
/// search would do; the links rewritten on every line of the bench page do not break it.
#[test]
fn gzip_from_a_gzip_or_deflate_upstream_keeps_the_upstreams_weight() {
    use devproxy_native::body::Pipeline;
    use devproxy_native::rewrite::{Rewriter, Rule};
    let rules = [
        Rule::snippet("<script async src=\"/browser-sync/browser-sync-client.js\"></script>"),
        Rule::links("127.0.0.1:8080", "http"),
    ];
    let proxied = |coding: Encoding, upstream: &[u8], reuse: bool| {
        let rewriter = Rewriter::new(&rules, "127.0.0.1:3000", 64 * 1024);
        let mut pipeline = Pipeline::new(coding, Encoding::Gzip, rewriter);
        if !reuse {
            pipeline = pipeline.without_reuse();
        }
        let mut out = Vec::new();
        for piece in upstream.chunks(16 * 1024) {
            pipeline.push(piece, &mut out).unwrap();
        }
        pipeline.finish(&mut out).unwrap();
        out
    };
    let pages =
        [("the bench page", page()), ("an API reference page", common::bench_page::generate_doc_page(300 * 1024))];
    let level6 = flate2::Compression::new(6);
    for (name, page) in pages {
        let gzip = flate2::write::GzEncoder::new(Vec::new(), level6);
        let zlib = flate2::write::ZlibEncoder::new(Vec::new(), level6);
        let raw = flate2::write::DeflateEncoder::new(Vec::new(), level6);
        let upstreams = [
            ("gzip", Encoding::Gzip, finish(gzip, &page, |w| w.finish())),
            ("zlib-wrapped deflate", Encoding::Deflate, finish(zlib, &page, |w| w.finish())),
            ("raw deflate", Encoding::Deflate, finish(raw, &page, |w| w.finish())),
        ];
        let mut guided_pages = Vec::new();
        for (framing, coding, upstream) in upstreams {
            let (guided, own) = (proxied(coding, &upstream, true), proxied(coding, &upstream, false));
            let (page_out, own_out) = (gunzip(&guided), gunzip(&own));
            assert_eq!(page_out, own_out, "{name}, {framing}");
            eprintln!(
                "{name}, {framing}: upstream {} B, guided {} B, own search {} B",
                upstream.len(),
                guided.len(),
                own.len()
            );
            let (weight, name) = (upstream.len(), format!("{name}, {framing}"));
            assert!(guided.len() * 100 <= weight * 102, "{name}: {} B against {weight} B", guided.len());
            assert!(own.len() * 100 > weight * 110, "{name}: our own search alone is this close ({} B)", own.len());
            guided_pages.push(page_out);
        }
        assert!(guided_pages.windows(2).all(|w| w[0] == w[1]), "{name}: every framing gives the same page");
    }
}

fn finish<W: Write>(mut writer: W, page: &[u8], end: impl FnOnce(W) -> std::io::Result<Vec<u8>>) -> Vec<u8> {
    writer.write_all(page).unwrap();
    end(writer).unwrap()
}
