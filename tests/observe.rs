//! The exchange record through the core (no Node): a real upstream on 127.0.0.1 sending each coding,
//! the proxy in front of it, a record sink collecting what the proxy reports, compared with what the
//! upstream sent and the client received.

mod common;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use devproxy_native::codec::Encoding;
use devproxy_native::observe::{ExchangeRecord, RecordSink};
use devproxy_native::ProxyServer;
use hyper::body::Body;
use tokio::sync::Notify;

fn page() -> String {
    let items: String = (0..500).map(|i| format!("<li>item {i}</li>\n")).collect();
    format!("<!doctype html><html><body><ul>{items}</ul></body></html>")
}

/// Serves `page()` in the coding `?enc=` names; the header `x-body-length` says how long its body is.
async fn upstream() -> SocketAddr {
    common::upstream(|req, _| {
        let mut response = common::html_encoded_as_asked(&req, page().as_bytes());
        let length = response.body().size_hint().exact().expect("a whole body");
        response.headers_mut().insert("x-body-length", length.to_string().parse().unwrap());
        response
    })
    .await
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
    let mut config = common::proxy_config(up);
    config.snippet = Some("<script id=snip></script>".into());
    config.rules = vec![common::global_rule("item (\\d+)", "i$1")];
    // Ask the target for its codings, so that bytes in are the compressed ones.
    config.upstream_compression = devproxy_native::config::UpstreamCompression::Always;
    config.observe.sinks.push(sink.clone());
    let proxy = ProxyServer::start(config).await.unwrap();
    let local = proxy.local_addr().to_string();
    let client = common::client();
    let codings = [Encoding::Identity, Encoding::Gzip, Encoding::Brotli, Encoding::Zstd];
    for (n, coding) in codings.into_iter().enumerate() {
        let url = format!("http://{local}/p?enc={}", coding.token());
        let response = client.request(common::get_page(&url, Some("gzip, br"))).await.unwrap();
        let sent_by_upstream: u64 = response.headers()["x-body-length"].to_str().unwrap().parse().unwrap();
        let coding_out = response.headers().get("content-encoding").map(|v| v.to_str().unwrap().to_string());
        let timing = response.headers()["server-timing"].to_str().unwrap().to_string();
        let body = common::body(response).await;

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
