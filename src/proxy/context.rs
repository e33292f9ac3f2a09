//! One request's context: what the phases need to know about it, read once when it arrives, and the
//! client's address the listener puts on it.

use std::net::{IpAddr, SocketAddr};

use http::header::{self, HeaderMap};
use http::{Method, Request};

use crate::body::{self, PageMode, RequestFacts, UserRules};
use crate::codec;
use crate::config::ProxyConfig;
use crate::header_pairs::header_pairs;
use crate::observe::Facts;
use crate::rewrite::{Exchange, Rule};

/// The client's address (`X-Forwarded-For`, the inspector's loopback check), put on each request
/// by the listener.
#[derive(Clone, Copy)]
pub(crate) struct ClientAddr(pub SocketAddr);

/// What the phases need to know about one request, read once when it arrives.
pub(crate) struct RequestCtx {
    pub method: Method,
    /// The request's `Host` (or the listen address): where links and redirects point.
    pub local_host: String,
    pub path_and_query: String,
    pub accept: Option<String>,
    pub accept_encoding: Option<String>,
    /// The target's URL for this request, named in errors and logs.
    pub url: String,
    /// A browser says it comes from another site's page: no `reqHeaders` credentials.
    pub cross_site: bool,
    /// The client's address (`X-Forwarded-For`, the inspector's loopback check).
    pub client_ip: Option<IpAddr>,
    /// A page asked of a loopback target uncompressed, compressed here once after rewriting.
    pub upstream_identity: bool,
    /// Rules as they are when the request starts: `addRule` applies to later requests only.
    pub rules: Vec<Rule>,
    /// Which responses the rules run on.
    pub mode: PageMode,
    /// The user rules among `rules`, for the skip table (`None`: nothing may be skipped).
    pub user_rules: Option<UserRules>,
    /// What the exchange record (log, `onRequest`, the inspector, `Server-Timing`) learns along the
    /// phases: who answered, the upstream's time and coding, whether the body was rewritten.
    pub record: Facts,
    /// What a replacement function is shown of the request (its `res` is filled in by the body
    /// phase); only when a rule calls a function.
    pub exchange: Option<Exchange>,
}

impl RequestCtx {
    /// `config`: the one of the request's target; `rules`: the rules for its URL and how its response
    /// is chosen for them; `local_host` and `cross_site`: what the request filter saw (see
    /// `Shared::request_ctx`, which reads all three).
    pub(crate) fn new<B>(
        req: &Request<B>,
        config: &ProxyConfig,
        (rules, mode, user_rules): (Vec<Rule>, PageMode, Option<UserRules>),
        local_host: String,
        cross_site: bool,
    ) -> RequestCtx {
        let headers = req.headers();
        let path_and_query = request_path(req).to_string();
        let accept = header_string(headers, header::ACCEPT);
        let accept_encoding = header_string(headers, header::ACCEPT_ENCODING);
        let page = match mode {
            PageMode::Pages => body::is_page_request(accept.as_deref(), &path_and_query),
            PageMode::Forced => true,
            PageMode::Skipped => false,
        };
        let upstream_identity =
            config.fetches_pages_uncompressed() && page && !codec::accepted(accept_encoding.as_deref()).is_empty();
        let exchange = rules.iter().any(Rule::calls_function).then(|| Exchange {
            method: req.method().to_string(),
            url: request_target(req),
            request_headers: header_pairs(headers),
            ..Exchange::default()
        });
        RequestCtx {
            method: req.method().clone(),
            local_host,
            url: format!("{}{}", config.target.origin(), path_and_query),
            cross_site,
            client_ip: req.extensions().get::<ClientAddr>().map(|addr| addr.0.ip()),
            path_and_query,
            accept,
            accept_encoding,
            upstream_identity,
            rules,
            mode,
            user_rules,
            exchange,
            record: Facts::default(),
        }
    }

    /// What the body plan looks at.
    pub(crate) fn plan_facts(&self) -> RequestFacts<'_> {
        RequestFacts {
            method: &self.method,
            path_and_query: &self.path_and_query,
            accept: self.accept.as_deref(),
            accept_encoding: self.accept_encoding.as_deref(),
            upstream_identity: self.upstream_identity,
            mode: self.mode,
        }
    }
}

/// The request's path and query (`/` for an authority-form or asterisk request).
pub(crate) fn request_path<B>(req: &Request<B>) -> &str {
    req.uri().path_and_query().map_or("/", |p| p.as_str())
}

fn header_string(headers: &HeaderMap, name: header::HeaderName) -> Option<String> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string)
}

/// The request target as the client sent it: origin-form for HTTP/1 (`/path?query`, or the absolute
/// URL of an absolute-form request), path and query for HTTP/2, as Node's `req.url` has it.
fn request_target<B>(req: &Request<B>) -> String {
    match req.version() {
        http::Version::HTTP_2 | http::Version::HTTP_3 => req.uri().path_and_query().map_or("/", |p| p.as_str()).into(),
        _ => req.uri().to_string(),
    }
}
