//! One request's way through the proxy, in the order it meets the phases (Pingora's lesson, as plain
//! functions): request filter → middleware → upstream request → request hook → send → response hook →
//! response headers → body plan → respond.
//! Each phase lives in the module its name says; this file only puts them in order. Any failure is a
//! [`ProxyError`], turned into the client's answer in one place, [`fail`].

use std::sync::Arc;

use http::{Request, Response};
use hyper::body::Incoming;

use crate::body::{self, Pipeline, Plan, ProxyBody, RewriteState, SniffError, Sniffed, UpstreamBody};
use crate::codec::Encoding;
use crate::config::PANIC_PROBE_PREFIX;
use crate::forward;
use crate::headers;
use crate::hooks;
use crate::middleware;
use crate::pages::ProxyError;
use crate::rewrite::Rewriter;
use crate::security;
use crate::server::ClientAddr;
use crate::skip::SkipKey;
use crate::state::{header_pairs, RequestCtx, Shared};
use crate::websocket;

/// Runs a request through every phase.
pub(crate) async fn proxy(shared: Arc<Shared>, mut req: Request<Incoming>) -> Result<Response<ProxyBody>, ProxyError> {
    // A request the middleware host sent on with `next()` skips the middleware, and was counted already.
    let returned = shared.config.middleware.as_ref().is_some_and(|host| host.take_returned(req.headers_mut()));
    if !returned {
        shared.stats.add_request();
    }
    if shared.config.panic_probes && req.uri().path() == format!("{PANIC_PROBE_PREFIX}/request") {
        panic!("panic probe: request phase");
    }
    // Request filter (security.rs).
    security::request_filter(&req, shared.local_addr, &shared.hosts)?;
    let ctx = RequestCtx::new(&shared, &req);
    let config = &shared.config;
    if config.ws && websocket::is_upgrade(&req) {
        security::websocket_filter(&req, shared.local_addr, config, &shared.hosts)?;
        return websocket::tunnel(shared.clone(), req, &ctx.local_host).await;
    }
    // Middleware (middleware.rs): Browsersync runs user middleware before its proxy, never on upgrades.
    if let Some(host) = config.middleware.as_ref().filter(|host| !returned && host.matches(req.uri().path())) {
        return match middleware::hand_off(&shared.client, host, req, &ctx.url, config.upstream_timeout).await? {
            middleware::Answer::Passed(response) => {
                let (head, body) = response.into_parts();
                let upstream = UpstreamBody::new(body, config.upstream_timeout, shared.stats.clone(), ctx.url.clone());
                Ok(Response::from_parts(head, ProxyBody::Passthrough { prefix: None, upstream }))
            }
            middleware::Answer::Own(response) => {
                let (head, body) = response.into_parts();
                let upstream = UpstreamBody::new(body, config.upstream_timeout, shared.stats.clone(), ctx.url.clone());
                body_phase(&shared, ctx, head, upstream).await
            }
        };
    }
    let client_addr = req.extensions().get::<ClientAddr>().map(|addr| addr.0.ip());
    // Upstream request (forward.rs), then the user's request hook (hooks.rs).
    let (parts, body) = req.into_parts();
    let hooked = config.hooks.proxy_req.is_some() || config.hooks.proxy_res.is_some();
    let client = hooked.then(|| hooks::client_request(&parts));
    let mut parts = forward::upstream_request(parts, &ctx.url, &ctx.local_host, ctx.upstream_identity, config)?;
    if config.xfwd {
        hooks::forwarded_headers(&mut parts.headers, client_addr, &ctx.local_host);
    }
    if let (Some(hook), Some(client)) = (&config.hooks.proxy_req, &client) {
        hooks::request(hook.as_ref(), "proxy.proxyReq", &mut parts, client.clone(), config, &ctx.url).await?;
    }
    // Send, with its timeout and retry (forward.rs).
    let response = forward::send(&shared.client, parts, body, config.upstream_timeout)
        .await
        .map_err(|reason| ProxyError::Upstream { url: ctx.url.clone(), reason })?;
    // Response hook (hooks.rs), then the response headers (headers.rs).
    let (mut head, body) = response.into_parts();
    if let (Some(hook), Some(client)) = (&config.hooks.proxy_res, client) {
        hooks::response(hook.as_ref(), &mut head, client, &ctx.url).await?;
    }
    headers::to_client(&mut head.headers, head.status, config, &ctx.local_host);
    let upstream = UpstreamBody::new(body, config.upstream_timeout, shared.stats.clone(), ctx.url.clone());
    // Body plan (body.rs), then respond.
    let debug = shared.stats.debug_enabled().then(|| format!("{} {}", ctx.method, ctx.url));
    let response = body_phase(&shared, ctx, head, upstream).await;
    if let Some(request) = debug {
        shared.stats.log_debug(|| match &response {
            Ok(response) => format!("{request} -> {}", response.status().as_u16()),
            Err(e) => format!("{request} -> failed: {e:?}"),
        });
    }
    response
}

/// The answer to a failed request: counted, logged once, rendered (pages.rs).
pub(crate) fn fail(shared: &Shared, error: ProxyError) -> Response<ProxyBody> {
    if error.is_upstream_error() {
        shared.stats.add_upstream_error();
    }
    if let Some(line) = error.log_line() {
        shared.stats.log_error(&line);
    }
    error.page(&shared.config.target.origin())
}

/// Body plan and respond: passthrough, or sniff, rewrite the start of the page before the headers go
/// out (so that a `replace` function throwing on it is still a 500), and stream the rest.
async fn body_phase(
    shared: &Shared,
    mut ctx: RequestCtx,
    mut head: http::response::Parts,
    mut upstream: UpstreamBody,
) -> Result<Response<ProxyBody>, ProxyError> {
    let config = &shared.config;
    let (sniff, decode, encode) = match body::plan(&ctx.facts(), head.status, &head.headers, config.rewrite_text_types)
    {
        Plan::Passthrough => {
            shared.stats.add_passed_through();
            return Ok(Response::from_parts(head, ProxyBody::Passthrough { prefix: None, upstream }));
        }
        Plan::Rewrite { sniff, decode, encode } => (sniff, decode, encode),
    };
    let key = SkipKey::of(&ctx.method, &ctx.path_and_query, &head.headers);
    let (rules, mut skip_memo) = body::rules_to_run(&ctx.rules, ctx.user_rules, key, &shared.skips);
    let mut rewriter = Rewriter::new(&rules, &ctx.local_host, config.max_match_bytes);
    if let Some(mut exchange) = ctx.exchange.take() {
        // Replacement functions see the response headers as they go out.
        exchange.status = head.status.as_u16();
        let mut out_headers = head.headers.clone();
        headers::for_rewritten_body(&mut out_headers, encode);
        exchange.response_headers = header_pairs(&out_headers);
        rewriter = rewriter.with_exchange(Arc::new(exchange));
    }
    let mut pipeline = Pipeline::new(decode, encode, rewriter);
    let mut decoded_prefix = None;
    let mut rewritten = true;
    if sniff {
        let url = || ctx.url.clone();
        match body::sniff_html(&mut upstream, &mut pipeline, config.max_match_bytes).await {
            Ok(Sniffed::Html(decoded)) => decoded_prefix = Some(decoded),
            // Asked for uncompressed on the client's behalf: text still goes out compressed, unchanged.
            Ok(Sniffed::NotHtml(raw))
                if ctx.upstream_identity && decode == Encoding::Identity && body::is_compressible(&head.headers) =>
            {
                shared.stats.add_passed_through();
                rewritten = false;
                skip_memo = None;
                pipeline = Pipeline::new(decode, encode, Rewriter::new(&[], &ctx.local_host, config.max_match_bytes));
                decoded_prefix = Some(raw);
            }
            Ok(Sniffed::NotHtml(raw)) => {
                shared.stats.add_passed_through();
                let prefix = Some(raw.into());
                return Ok(Response::from_parts(head, ProxyBody::Passthrough { prefix, upstream }));
            }
            // The upstream body's own failure is logged where it happens.
            Err(SniffError::Upstream(e)) => return Err(ProxyError::UpstreamBody { url: url(), reason: e.to_string() }),
            Err(SniffError::Decode(e)) => return Err(ProxyError::Upstream { url: url(), reason: e.to_string() }),
        }
    }
    let mut out = Vec::new();
    if let Some(prefix) = decoded_prefix.take() {
        let step = body::rewrite_prefix(pipeline, prefix)
            .await
            .map_err(|reason| ProxyError::Rewrite { url: ctx.url.clone(), reason })?;
        pipeline = step.pipeline;
        out = step.out;
        match step.result {
            Ok(()) => {}
            Err(body::PipelineError::Replace(e)) => {
                return Err(ProxyError::Rewrite { url: ctx.url, reason: e.to_string() })
            }
            Err(body::PipelineError::Codec(e)) => {
                return Err(ProxyError::Upstream { url: ctx.url, reason: e.to_string() })
            }
        }
    }
    headers::for_rewritten_body(&mut head.headers, encode);
    if rewritten {
        shared.stats.add_rewritten();
    }
    let panic_probe = config.panic_probes && ctx.path_and_query.starts_with(&format!("{PANIC_PROBE_PREFIX}/body"));
    let state = RewriteState::new(upstream, pipeline, out, shared.stats.clone(), ctx.url, panic_probe)
        .with_skip_memo(skip_memo);
    Ok(Response::from_parts(head, ProxyBody::Rewrite(Box::new(state))))
}
