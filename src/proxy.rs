//! One request's way through the proxy, in the order it meets the phases (Pingora's lesson, as plain
//! functions): request filter → target (route) → local files → upstream request → send → response
//! headers → body plan → respond.
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
use crate::local_files::{self, Answer};
use crate::pages::ProxyError;
use crate::rewrite::Rewriter;
use crate::security;
use crate::state::{RequestCtx, Shared};
use crate::websocket;

/// Runs a request through every phase.
pub(crate) async fn proxy(shared: Arc<Shared>, req: Request<Incoming>) -> Result<Response<ProxyBody>, ProxyError> {
    shared.stats.add_request();
    if shared.config.panic_probes && req.uri().path() == format!("{PANIC_PROBE_PREFIX}/request") {
        panic!("panic probe: request phase");
    }
    // Request filter (security.rs).
    security::request_filter(&req, shared.local_addr, &shared.hosts)?;
    // Which target: a route's or `proxy`'s (routes.rs).
    let target = shared.upstream_for(req.uri().path());
    let mut ctx = RequestCtx::new(&shared, target.config, &req);
    if target.config.ws && websocket::is_upgrade(&req) {
        security::websocket_filter(&req, shared.local_addr, target.config, &shared.hosts)?;
        return websocket::tunnel(shared.clone(), target, req, &ctx.local_host).await;
    }
    // Local files (local_files.rs): answered here, before any target.
    match local_files::answer(&shared.local_files, &req, shared.config.upstream_timeout, &shared.stats).await? {
        None => {}
        Some(Answer::Done(response)) => return Ok(response),
        Some(Answer::File { head, body }) => {
            // Read uncompressed on the client's behalf, like a page from a loopback target.
            ctx.upstream_identity = true;
            let plan = local_files::plan(&ctx.facts(), &head, shared.config.rewrite_text_types);
            return body_phase(&shared, ctx, head, body, plan).await;
        }
    }
    // Upstream request, then send, with its timeout and retry (forward.rs).
    let (parts, body) = req.into_parts();
    let parts = forward::upstream_request(parts, &ctx.url, &ctx.local_host, ctx.upstream_identity, target.config)?;
    let response = forward::send(target.client, parts, body, shared.config.upstream_timeout)
        .await
        .map_err(|reason| ProxyError::Upstream { url: ctx.url.clone(), reason })?;
    // Response headers (headers.rs).
    let (mut head, body) = response.into_parts();
    headers::to_client(&mut head.headers, head.status, target.config, &ctx.local_host);
    let upstream = UpstreamBody::new(body, shared.config.upstream_timeout, shared.stats.clone(), ctx.url.clone());
    // Body plan (body.rs), then respond.
    let plan = body::plan(&ctx.facts(), head.status, &head.headers, shared.config.rewrite_text_types);
    body_phase(&shared, ctx, head, upstream, plan).await
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
    ctx: RequestCtx,
    mut head: http::response::Parts,
    mut upstream: UpstreamBody,
    plan: Plan,
) -> Result<Response<ProxyBody>, ProxyError> {
    let config = &shared.config;
    let mut rewritten = true;
    let (sniff, decode, encode, rules) = match plan {
        Plan::Passthrough => {
            shared.stats.add_passed_through();
            return Ok(Response::from_parts(head, ProxyBody::Passthrough { prefix: None, upstream }));
        }
        Plan::Rewrite { sniff, decode, encode } => (sniff, decode, encode, &ctx.rules[..]),
        Plan::Compress { encode } => {
            shared.stats.add_passed_through();
            rewritten = false;
            (false, Encoding::Identity, encode, &[][..])
        }
    };
    let mut pipeline = Pipeline::new(decode, encode, Rewriter::new(rules, &ctx.local_host, config.max_match_bytes));
    let mut decoded_prefix = None;
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
    let state = RewriteState::new(upstream, pipeline, out, shared.stats.clone(), ctx.url, panic_probe);
    Ok(Response::from_parts(head, ProxyBody::Rewrite(Box::new(state))))
}
