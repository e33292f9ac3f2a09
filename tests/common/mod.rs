//! What the integration tests share: an upstream on 127.0.0.1, the proxy's configuration in front of
//! it, the client side (a client, a request for a page, a whole body), rules and codings, and the
//! benches' generated page.
//!
//! Each test file declares `mod common;` and so compiles its own copy of this module, of which it uses
//! a part: what one test binary leaves unused is not dead code.
#![allow(dead_code)]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use devproxy_native::codec::{encode_all, Encoding};
use devproxy_native::{ProxyConfig, Rule, RuleReplacement, Target};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};

/// The benches' generated HTML page (`generate_html`), the one their numbers are measured on.
#[path = "../../benches/common/mod.rs"]
pub mod bench_page;

/// Every coding the proxy reads and writes, identity first.
pub const CODINGS: [Encoding; 5] =
    [Encoding::Identity, Encoding::Gzip, Encoding::Deflate, Encoding::Brotli, Encoding::Zstd];

/// Starts an HTTP/1 upstream on 127.0.0.1 that answers each request with `answer(request, its own
/// address)`; returns that address.
pub async fn upstream<F>(answer: F) -> SocketAddr
where
    F: Fn(Request<Incoming>, SocketAddr) -> Response<Full<Bytes>> + Send + Sync + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let answer = Arc::new(answer);
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let answer = answer.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req: Request<Incoming>| {
                    let response = answer(req, addr);
                    async move { Ok::<_, Infallible>(response) }
                });
                let _ =
                    hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });
    addr
}

/// `body` as a `text/html` response.
pub fn html(body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body.into()));
    response.headers_mut().insert("content-type", "text/html".parse().unwrap());
    response
}

/// `page` as a `text/html` response in the coding the request's query `?enc=` names (identity without
/// one), with its `content-encoding`.
pub fn html_encoded_as_asked(req: &Request<Incoming>, page: &[u8]) -> Response<Full<Bytes>> {
    let token = req.uri().query().and_then(|q| q.strip_prefix("enc=")).unwrap_or("identity").to_string();
    let encoding = Encoding::from_content_encoding(Some(&token)).unwrap();
    let mut response = html(encode_all(encoding, page));
    if encoding != Encoding::Identity {
        response.headers_mut().insert("content-encoding", token.parse().unwrap());
    }
    response
}

/// A quiet proxy for `upstream`, on a free port.
pub fn proxy_config(upstream: SocketAddr) -> ProxyConfig {
    let mut config = ProxyConfig::new(Target::parse(&format!("http://{upstream}")).unwrap());
    config.port = 0;
    config.quiet = true;
    config
}

/// The rule `/source/g` with the replacement template `replacement`.
pub fn global_rule(source: &str, replacement: &str) -> Rule {
    Rule::regex(source, "g", RuleReplacement::Text(replacement.into())).unwrap()
}

pub type Client = hyper_util::client::legacy::Client<HttpConnector, Full<Bytes>>;

/// A plain-HTTP client.
pub fn client() -> Client {
    hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build_http()
}

/// A GET of `url` that accepts HTML, offering `accept_encoding` if given.
pub fn get_page(url: &str, accept_encoding: Option<&str>) -> Request<Full<Bytes>> {
    let mut request = Request::get(url).header("accept", "text/html");
    if let Some(codings) = accept_encoding {
        request = request.header("accept-encoding", codings);
    }
    request.body(Full::new(Bytes::new())).unwrap()
}

/// The whole body of `response`.
pub async fn body(response: Response<Incoming>) -> Bytes {
    response.into_body().collect().await.unwrap().to_bytes()
}
