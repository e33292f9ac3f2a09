//! End-to-end through the core (no Node): a real upstream on 127.0.0.1, the proxy in front of it,
//! every upstream coding against every coding the client may ask for.

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use devproxy_native::codec::{decode_all, encode_all, Encoding};
use devproxy_native::config::UpstreamCompression;
use devproxy_native::{ProxyConfig, ProxyServer, Rule, RuleReplacement, Target};
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};

const ALL: [Encoding; 5] = [Encoding::Identity, Encoding::Gzip, Encoding::Deflate, Encoding::Brotli, Encoding::Zstd];

fn page(origin: &str) -> String {
    let links: String = (0..2000).map(|i| format!("<a href=\"{origin}/p/{i}\">page {i} é</a>\n")).collect();
    format!("<!doctype html><html><body class=\"x\">{links}</body></html>")
}

/// Serves `page()` encoded as the `?enc=` query asks.
async fn upstream() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                let service = service_fn(move |req: Request<hyper::body::Incoming>| async move {
                    let token =
                        req.uri().query().and_then(|q| q.strip_prefix("enc=")).unwrap_or("identity").to_string();
                    let encoding = Encoding::from_content_encoding(Some(&token)).unwrap();
                    let body = encode_all(encoding, page(&format!("http://{addr}")).as_bytes());
                    let seen = req.headers().get("accept-encoding").cloned();
                    let mut response = Response::new(Full::new(Bytes::from(body)));
                    response.headers_mut().insert("content-type", "text/html".parse().unwrap());
                    if let Some(seen) = seen {
                        response.headers_mut().insert("x-seen-accept-encoding", seen);
                    }
                    if encoding != Encoding::Identity {
                        response.headers_mut().insert("content-encoding", token.parse().unwrap());
                    }
                    Ok::<_, Infallible>(response)
                });
                let _ =
                    hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });
    addr
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
    let mut config = ProxyConfig::new(Target::parse(&format!("http://{up}")).unwrap());
    config.port = 0;
    config.quiet = true;
    config.snippet = Some("<script id=snip></script>".into());
    config.rules = vec![Rule::regex("page (\\d+)", "g", RuleReplacement::Text("p$1".into())).unwrap()];
    config.upstream_compression = compression;
    let proxy = ProxyServer::start(config).await.unwrap();
    let local = proxy.local_addr().to_string();
    let client = hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let expected = page(&format!("http://{up}"))
        .replace(&format!("http://{up}"), &format!("//{local}"))
        .replace("<body class=\"x\">", "<body class=\"x\"><script id=snip></script>");
    let expected = (0..2000).rev().fold(expected, |s, i| s.replace(&format!("page {i} "), &format!("p{i} ")));
    for upstream_coding in ALL {
        for client_coding in ALL {
            let uri = format!("http://{local}/?enc={}", upstream_coding.token());
            let request = Request::get(uri)
                .header("accept", "text/html")
                .header("accept-encoding", client_coding.token())
                .body(Full::new(Bytes::new()))
                .unwrap();
            let response = client.request(request).await.unwrap();
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
            let body = response.into_body().collect().await.unwrap().to_bytes();
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
