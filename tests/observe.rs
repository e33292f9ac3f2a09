//! The exchange record through the core (no Node): a real upstream on 127.0.0.1 sending each coding,
//! the proxy in front of it, a record sink collecting what the proxy reports, compared with what the
//! upstream sent and the client received.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use devproxy_native::codec::{encode_all, Encoding};
use devproxy_native::observe::{ExchangeRecord, RecordSink};
use devproxy_native::{ProxyConfig, ProxyServer, Rule, RuleReplacement, Target};
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::sync::Notify;

fn page() -> String {
    let items: String = (0..500).map(|i| format!("<li>item {i}</li>\n")).collect();
    format!("<!doctype html><html><body><ul>{items}</ul></body></html>")
}

/// Serves `page()` in the coding `?enc=` names; the header `x-body-length` says how long its body is.
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
                    let body = encode_all(encoding, page().as_bytes());
                    let mut response = Response::new(Full::new(Bytes::from(body.clone())));
                    let headers = response.headers_mut();
                    headers.insert("content-type", "text/html".parse().unwrap());
                    headers.insert("x-body-length", body.len().to_string().parse().unwrap());
                    if encoding != Encoding::Identity {
                        headers.insert("content-encoding", token.parse().unwrap());
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

#[derive(Default)]
struct Collect {
    records: Mutex<Vec<Arc<ExchangeRecord>>>,
    arrived: Notify,
}

impl RecordSink for Collect {
    fn push(&self, record: Arc<ExchangeRecord>) {
        self.records.lock().unwrap().push(record);
        self.arrived.notify_one();
    }
}

impl Collect {
    async fn nth(&self, n: usize) -> Arc<ExchangeRecord> {
        let wait = async {
            loop {
                if let Some(record) = self.records.lock().unwrap().get(n) {
                    return record.clone();
                }
                self.arrived.notified().await;
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(20), wait).await.expect("the record arrives")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_count_bytes_codings_rules_and_times() {
    let up = upstream().await;
    let sink = Arc::new(Collect::default());
    let mut config = ProxyConfig::new(Target::parse(&format!("http://{up}")).unwrap());
    config.port = 0;
    config.quiet = true;
    config.snippet = Some("<script id=snip></script>".into());
    config.rules = vec![Rule::regex("item (\\d+)", "g", RuleReplacement::Text("i$1".into())).unwrap()];
    // Ask the target for its codings, so that bytes in are the compressed ones.
    config.upstream_compression = devproxy_native::config::UpstreamCompression::Always;
    config.observe.sinks.push(sink.clone());
    let proxy = ProxyServer::start(config).await.unwrap();
    let local = proxy.local_addr().to_string();
    let client = hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let codings = [Encoding::Identity, Encoding::Gzip, Encoding::Brotli, Encoding::Zstd];
    for (n, coding) in codings.into_iter().enumerate() {
        let req = Request::get(format!("http://{local}/p?enc={}", coding.token()))
            .header("accept", "text/html")
            .header("accept-encoding", "gzip, br")
            .body(Full::new(Bytes::new()))
            .unwrap();
        let response = client.request(req).await.unwrap();
        let sent_by_upstream: u64 = response.headers()["x-body-length"].to_str().unwrap().parse().unwrap();
        let coding_out = response.headers().get("content-encoding").map(|v| v.to_str().unwrap().to_string());
        let timing = response.headers()["server-timing"].to_str().unwrap().to_string();
        let body = response.into_body().collect().await.unwrap().to_bytes();

        let record = sink.nth(n).await;
        let label = format!("{}: {record:?}", coding.token());
        assert_eq!(record.status, 200, "{label}");
        assert_eq!(record.source, "proxy", "{label}");
        assert_eq!(record.url, format!("/p?enc={}", coding.token()), "{label}");
        assert_eq!(record.coding_in, coding.token(), "{label}");
        assert_eq!(Some(record.coding_out.as_str()), coding_out.as_deref().or(Some("identity")), "{label}");
        assert_eq!(record.bytes_in, sent_by_upstream, "{label}");
        assert_eq!(record.bytes_out, body.len() as u64, "{label}");
        assert!(record.rewritten, "{label}");
        let rules: Vec<(&str, u64)> = record.rules.iter().map(|r| (r.rule.as_str(), r.matches)).collect();
        assert_eq!(rules, [("snippet", 1), ("/item (\\d+)/g", 500)], "{label}");
        let upstream_ms = record.upstream_ms.expect("an upstream exchange");
        assert!(upstream_ms >= 0.0 && record.total_ms >= upstream_ms, "{label}");
        assert!(record.rewrite_ms.is_some() && record.encode_ms.is_some(), "{label}");
        assert!(timing.starts_with("upstream;dur="), "{timing}");
        assert!(record.preview.is_none(), "no preview unless the inspector asks");
        assert!(record.error.is_none(), "{label}");
    }
    let seen = proxy.observations();
    assert_eq!(seen.total.count, codings.len() as u64);
    assert_eq!(seen.upstream.count, codings.len() as u64);
    let rules: Vec<(&str, u64)> = seen.rules.iter().map(|r| (r.rule.as_str(), r.matches)).collect();
    assert_eq!(rules, [("/item (\\d+)/g", 2000), ("snippet", 4)]);
    proxy.stop().await;
}
