//! What the skip table buys (issue 18): a 100 KB page through the real proxy, 20 user rules of which
//! 18 never match it. The upstream answers `/etag` with an ETag (after the first response the proxy
//! skips the 18 rules) and `/plain` without one (every rule runs every time); everything else is the
//! same. Client and upstream speak identity, so the rules are most of the work.
//!
//! Run: `cargo bench --no-default-features --bench skip -- --warm-up-time 1 --measurement-time 4`

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use devproxy_native::{ProxyConfig, ProxyServer, Rule, RuleReplacement, Target};
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};

mod common;

const PAGE_BYTES: usize = 100 * 1024;

async fn upstream(page: Bytes) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else { continue };
            let page = page.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req: Request<hyper::body::Incoming>| {
                    let mut response = Response::new(Full::new(page.clone()));
                    response.headers_mut().insert("content-type", "text/html".parse().expect("header"));
                    if req.uri().path() == "/etag" {
                        response.headers_mut().insert("etag", "\"page-v1\"".parse().expect("header"));
                    }
                    async move { Ok::<_, Infallible>(response) }
                });
                let _ =
                    hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });
    addr
}

/// 18 rules the page never matches (attributes and words it does not have), 2 it does.
fn rules() -> Vec<Rule> {
    let text = |s: &str| RuleReplacement::Text(s.into());
    let mut rules: Vec<Rule> = (0..18)
        .map(|i| Rule::regex(&format!("data-never-{i}=\"[^\"]*\"|\\bzq{i}x\\w+"), "g", text("")).expect("rule"))
        .collect();
    rules.push(Rule::regex("<p>", "g", text("<p class=\"x\">")).expect("rule"));
    rules.push(Rule::regex("\\bthe\\b", "gi", text("THE")).expect("rule"));
    rules
}

fn benches(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let page = common::generate_html("127.0.0.1:8080", PAGE_BYTES);
    let page_len = page.len() as u64;
    let (proxy, client) = runtime.block_on(async {
        let up = upstream(Bytes::from(page)).await;
        let mut config = ProxyConfig::new(Target::parse(&format!("http://{up}")).expect("target"));
        config.port = 0;
        config.quiet = true;
        config.rules = rules();
        let proxy = ProxyServer::start(config).await.expect("proxy starts");
        let client = hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
        (proxy, client)
    });
    let local = proxy.local_addr();
    let get = |path: &'static str| {
        let client = client.clone();
        async move {
            let request = Request::get(format!("http://{local}{path}"))
                .header("accept", "text/html")
                .body(Full::new(Bytes::new()))
                .expect("request");
            let response = client.request(request).await.expect("response");
            response.into_body().collect().await.expect("body").to_bytes()
        }
    };
    let first = runtime.block_on(get("/etag"));
    let plain = runtime.block_on(get("/plain"));
    assert_eq!(first, plain, "both routes rewrite alike");
    assert_eq!(runtime.block_on(get("/etag")), first, "the repeat, with rules skipped, is the same page");

    let mut group = c.benchmark_group("page_with_20_rules_18_never_matching");
    group.sampling_mode(SamplingMode::Flat).sample_size(30);
    group.throughput(Throughput::Bytes(page_len));
    group.bench_function("no_validator_all_rules_run", |b| b.iter(|| runtime.block_on(get("/plain"))));
    group.bench_function("etag_repeat_18_skipped", |b| b.iter(|| runtime.block_on(get("/etag"))));
    group.finish();
    runtime.block_on(proxy.stop());
}

criterion_group!(skip, benches);
criterion_main!(skip);
