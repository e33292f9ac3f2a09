//! End-to-end through the core (no Node): a real upstream on 127.0.0.1, the proxy in front of it,
//! every upstream coding against every coding the client may ask for.

mod common;

use std::net::SocketAddr;

use common::CODINGS;
use devproxy_native::codec::{decode_all, Encoding};
use devproxy_native::config::UpstreamCompression;
use devproxy_native::ProxyServer;

fn page(origin: &str) -> String {
    let links: String = (0..2000).map(|i| format!("<a href=\"{origin}/p/{i}\">page {i} é</a>\n")).collect();
    format!("<!doctype html><html><body class=\"x\">{links}</body></html>")
}

/// Serves `page()` encoded as the `?enc=` query asks; `x-seen-accept-encoding` says what it was offered.
async fn upstream() -> SocketAddr {
    common::upstream(|req, addr| {
        let mut response = common::html_encoded_as_asked(&req, page(&format!("http://{addr}")).as_bytes());
        if let Some(seen) = req.headers().get("accept-encoding").cloned() {
            response.headers_mut().insert("x-seen-accept-encoding", seen);
        }
        response
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_coding_is_decoded_rewritten_and_re_encoded() {
    let up = upstream().await;
    for compression in [UpstreamCompression::Auto, UpstreamCompression::Always] {
        every_coding(up, compression).await;
    }
}

/// The upstream sends the coding the URL names, whatever it was offered.
async fn every_coding(up: SocketAddr, compression: UpstreamCompression) {
    let mut config = common::proxy_config(up);
    config.snippet = Some("<script id=snip></script>".into());
    config.rules = vec![common::global_rule("page (\\d+)", "p$1")];
    config.upstream_compression = compression;
    let proxy = ProxyServer::start(config).await.unwrap();
    let local = proxy.local_addr().to_string();
    let client = common::client();
    let expected = page(&format!("http://{up}"))
        .replace(&format!("http://{up}"), &format!("//{local}"))
        .replace("<body class=\"x\">", "<body class=\"x\"><script id=snip></script>");
    let expected = (0..2000).rev().fold(expected, |s, i| s.replace(&format!("page {i} "), &format!("p{i} ")));
    for upstream_coding in CODINGS {
        for client_coding in CODINGS {
            let uri = format!("http://{local}/?enc={}", upstream_coding.token());
            let response = client.request(common::get_page(&uri, Some(client_coding.token()))).await.unwrap();
            let header = |name: &str| response.headers().get(name).map(|v| v.to_str().unwrap().to_string());
            let (coding, seen) = (header("content-encoding"), header("x-seen-accept-encoding"));
            // A loopback target is asked for pages uncompressed unless told otherwise.
            let offered = match (client_coding, compression) {
                (Encoding::Identity, _) => None,
                (_, UpstreamCompression::Auto) => Some("identity"),
                (coding, _) => Some(coding.token()),
            };
            assert_eq!(seen.as_deref(), offered, "{compression:?}, client asked for {client_coding:?}");
            assert!(response.headers().get("content-length").is_none());
            let body = common::body(response).await;
            let encoding = Encoding::from_content_encoding(coding.as_deref()).unwrap();
            // Compressed for the client whenever it asked, even when the upstream did not compress.
            let want = if upstream_coding == Encoding::Identity && offered != Some("identity") {
                Encoding::Identity
            } else {
                client_coding
            };
            assert_eq!(
                encoding, want,
                "{compression:?}: {upstream_coding:?} upstream, client asked for {client_coding:?}"
            );
            let decoded = decode_all(encoding, &body).unwrap();
            assert!(
                decoded == expected.as_bytes(),
                "{upstream_coding:?} -> {client_coding:?}: body differs ({} vs {} bytes)",
                decoded.len(),
                expected.len()
            );
        }
    }
    assert_eq!(proxy.stats().rewritten, 25);
    proxy.stop().await;
}
