//! One request's way through the proxy, in the order it meets the phases (Pingora's lesson, as plain
//! functions): request filter → target (route) → local files → middleware → upstream exchange
//! (upstream request, request hook, send, response hook, response headers) → body plan → respond.
//! Each phase lives in the module its name says; this file only puts them in order. Any failure is a
//! [`ProxyError`], turned into the client's answer in one place, [`fail`].

pub(crate) mod context;
pub(crate) mod exchange;
pub(crate) mod forward;
pub(crate) mod headers;
pub(crate) mod hooks;
pub(crate) mod local_files;
pub(crate) mod middleware;
pub(crate) mod pages;
pub(crate) mod routes;
pub(crate) mod security;
pub(crate) mod state;
pub(crate) mod websocket;

use std::sync::Arc;
use std::time::Instant;

use http::{Request, Response};
use hyper::body::Incoming;

use crate::body::{self, Pipeline, Plan, ProxyBody, RewriteState, RuleSet, SniffError, Sniffed, UpstreamBody};
use crate::cassette::replay::{self, ws::WsReplay};
use crate::codec::Encoding;
#[cfg(feature = "test-hooks")]
use crate::config::PANIC_PROBE_PREFIX;
use crate::csp::PagePolicy;
use crate::header_pairs::header_pairs;
use crate::observe::{self, inspector};
use crate::rewrite::{Rewriter, Rule};
use crate::skip::SkipKey;
use context::{ClientAddr, RequestCtx};
use exchange::Answered;
use local_files::Answer;
use pages::ProxyError;
use routes::Upstream;
use state::Shared;

/// Runs a request through every phase. Its log line is written when its answer ends (observe/).
pub(crate) async fn proxy(shared: Arc<Shared>, req: Request<Incoming>) -> Result<Response<ProxyBody>, ProxyError> {
    phases(&shared, req).await
}

async fn phases(shared: &Arc<Shared>, req: Request<Incoming>) -> Result<Response<ProxyBody>, ProxyError> {
    // A request the middleware host sent on with `next()` has been through local files and
    // middleware already, and was counted.
    let returned = req.extensions().get::<middleware::Returned>().is_some();
    if !returned {
        shared.stats.add_request();
    }
    #[cfg(feature = "test-hooks")]
    if shared.config.panic_probes && req.uri().path() == format!("{PANIC_PROBE_PREFIX}/request") {
        panic!("panic probe: request phase");
    }
    // Request filter (security.rs).
    security::request_filter(&req, shared.local_addr, &shared.hosts)?;
    if let Some(response) = security::asterisk_options(&req) {
        return Ok(response);
    }
    // The inspector (observe/inspector.rs), under its reserved prefix.
    if let Some(response) = inspector_phase(shared, &req) {
        return Ok(response);
    }
    // Which target: a route's or `proxy`'s (routes.rs).
    let target = shared.upstream_for(req.uri().path());
    let mut ctx = shared.request_ctx(target.config, &req);
    let response = target_phases(shared, target, &mut ctx, req, returned).await?;
    // What the phases learnt goes with the answer to the exchange record (observe/), once.
    Ok(ctx.record.attach(response))
}

/// The phases that know the request's target and context: upgrade, local files, middleware, the
/// upstream exchange, the body. `returned`: the middleware host sent the request on with `next()`.
async fn target_phases(
    shared: &Arc<Shared>,
    target: Upstream<'_>,
    ctx: &mut RequestCtx,
    mut req: Request<Incoming>,
    returned: bool,
) -> Result<Response<ProxyBody>, ProxyError> {
    if target.config.ws && websocket::is_upgrade(&req) {
        security::websocket_filter(&req, shared.local_addr, target.config, &shared.hosts)?;
        // Replayed from the cassette when it has the upgrade (cassette/replay/ws.rs), else tunnelled,
        // recorded as an HTTP exchange would be (cassette/record.rs).
        let recorder = match shared.player_for(&target) {
            None => shared.recorder_for(&target),
            Some(player) => match replay::ws::answer(&player, &mut req) {
                WsReplay::Answer(response) => return Ok(*response),
                WsReplay::Record => player.recorder().cloned(),
                WsReplay::Forward => None,
            },
        };
        return websocket::tunnel(shared.clone(), target, req, ctx, recorder).await;
    }
    if !returned {
        // Local files (local_files.rs), then middleware (middleware.rs): Browsersync's order.
        match local_files::answer(&shared.local_files, &req, &shared.stats).await? {
            None => {}
            Some(Answer::Done(response)) => {
                ctx.record.source = Some("local");
                return Ok(response);
            }
            Some(Answer::File { head, body, version }) => {
                return local_file_phase(shared, ctx, head, body, version).await
            }
        }
        // Matched on the normalized path (`/%61dmin`, `//admin` and `/x/../admin` are `/admin`), which
        // is also what the middleware get: none of these skips an `/admin` middleware.
        // `start()` always runs a host (middleware can be set later): without routes, nothing to do.
        if let Some(host) = shared.middleware.as_ref().filter(|host| host.has_routes()) {
            let matched = {
                let path = middleware::normalize_path(req.uri().path());
                host.matches(&path).then(|| path.into_owned())
            };
            if let Some(path) = matched {
                middleware::use_path(&mut req, &path);
                return middleware_phase(shared, host, ctx, req).await;
            }
        }
    }
    let (head, upstream) = upstream_phase(shared, &target, ctx, req).await?;
    // Body plan (body/plan.rs), then respond.
    let plan = body::plan_response(&ctx.plan_facts(), &head, shared.config.beyond_pages());
    body_phase(shared, ctx, head, upstream, plan).await
}

/// The inspector's page, assets and API, when it is on and the path is under its prefix; everything
/// else (and everything when `inspector: false`) goes on to the target.
fn inspector_phase(shared: &Shared, req: &Request<Incoming>) -> Option<Response<ProxyBody>> {
    let inspector = shared.inspector.as_ref().filter(|inspector| inspector.owns(req.uri().path()))?;
    let client = req.extensions().get::<ClientAddr>().map(|addr| addr.0.ip());
    let mut response = if inspector.answers(client) {
        inspector.serve(req, shared.phase.clone(), Arc::downgrade(&shared.observer))
    } else {
        inspector::Inspector::refuse_remote()
    };
    // Logged and counted like any answer; the inspector leaves its own out of its list.
    observe::facts(response.extensions_mut()).source = Some(inspector::SOURCE);
    Some(response)
}

/// Middleware: the request goes to the Node host; what a middleware answers goes through the body
/// plan like a proxied response (Browsersync's response modifier wraps its middleware), and what
/// came back from the proxy through `next()` is passed on as it is.
async fn middleware_phase(
    shared: &Arc<Shared>,
    host: &middleware::MiddlewareHost,
    ctx: &mut RequestCtx,
    req: Request<Incoming>,
) -> Result<Response<ProxyBody>, ProxyError> {
    let timeout = shared.config.upstream_timeout;
    let answer = middleware::hand_off(&shared.client, host, req, &ctx.url, timeout).await?;
    let (passed, (head, body)) = match answer {
        middleware::Answer::Passed(response) => (true, response.into_parts()),
        middleware::Answer::Own(response) => (false, response.into_parts()),
    };
    ctx.record.passed_on = passed;
    ctx.record.source = Some("middleware");
    ctx.record.coding_in = head.headers.get(http::header::CONTENT_ENCODING).cloned();
    let upstream = UpstreamBody::new(body, timeout, shared.stats.clone(), ctx.url.clone());
    if passed {
        return Ok(Response::from_parts(head, ProxyBody::Passthrough { prefix: None, upstream }));
    }
    let plan = body::plan(&ctx.plan_facts(), head.status, &head.headers, shared.config.beyond_pages());
    body_phase(shared, ctx, head, upstream, plan).await
}

/// The exchange with the target: upstream request (forward.rs), request hook (hooks.rs), send with
/// its timeout and retry (forward.rs) or the cassette's answer (cassette/replay), response hook
/// (hooks.rs), response headers (headers.rs).
async fn upstream_phase(
    shared: &Shared,
    target: &Upstream<'_>,
    ctx: &mut RequestCtx,
    req: Request<Incoming>,
) -> Result<(http::response::Parts, UpstreamBody), ProxyError> {
    // Recorded offsets count from here.
    let arrived = tokio::time::Instant::now();
    let config = target.config;
    let (parts, body) = req.into_parts();
    let hooked = shared.hooks.proxy_req.is_some() || shared.hooks.proxy_res.is_some();
    let client = hooked.then(|| hooks::client_request(&parts));
    // `rewriteRequestBodies`' rules, built once per `Host` (state.rs), for the query and the body.
    let reverse = config.rewrite_request_bodies.then(|| {
        let build = || crate::body::reverse_rules(&ctx.local_host, &config.target);
        shared.reverse_rules.get(&ctx.local_host, &config.target.origin(), build)
    });
    let mut parts = forward::upstream_request(parts, ctx, config, reverse.as_deref())?;
    let body = request_body_phase(shared, ctx, reverse.as_deref(), &mut parts.headers, body).await?;
    if let (Some(hook), Some(client)) = (&shared.hooks.proxy_req, &client) {
        let cross_site = ctx.cross_site;
        hooks::request(hook.as_ref(), "proxy.proxyReq", &mut parts, client.clone(), config, &ctx.url, cross_site)
            .await?;
    }
    let timeout = config.upstream_timeout;
    let (stats, url) = (shared.stats.clone(), ctx.url.clone());
    let sent = Instant::now();
    // The cassette's answer, or the target's (recorded or not): exchange.rs.
    let answer = exchange::send(shared, target, parts, body, arrived, timeout);
    let (head, upstream) = match noting_long_wait(shared, answer, ctx).await {
        Ok(Answered::Replayed(head, stream)) => {
            ctx.record.source = Some("replay");
            (head, UpstreamBody::replay(stream, stats, url))
        }
        Ok(Answered::Target(response, tee)) => {
            let (head, body) = response.into_parts();
            ctx.record.recorded |= tee.is_some();
            let status = head.status;
            (head, UpstreamBody::new(body, timeout, stats, url).with_tee(tee).reading_on_for(status))
        }
        Err(reason) => return Err(ProxyError::Upstream { url: ctx.url.clone(), reason }),
    };
    // Only a WebSocket upgrade (websocket.rs) may switch protocols; here nothing asked for it.
    if head.status == http::StatusCode::SWITCHING_PROTOCOLS {
        let reason = "the target answered 101 Switching Protocols to a request that asked for no upgrade".into();
        return Err(ProxyError::Upstream { url: ctx.url.clone(), reason });
    }
    ctx.record.upstream = Some(sent.elapsed());
    ctx.record.coding_in = head.headers.get(http::header::CONTENT_ENCODING).cloned();
    respond(head, upstream, target, ctx, &shared.hooks, client).await
}

/// Request body: the proxy's own origins back to the target's (`rewriteRequestBodies`, body/request.rs).
async fn request_body_phase(
    shared: &Shared,
    ctx: &RequestCtx,
    reverse: Option<&[Rule]>,
    headers: &mut http::HeaderMap,
    body: Incoming,
) -> Result<crate::proxy::forward::RequestBody, ProxyError> {
    use http_body_util::BodyExt;
    let Some(rules) = reverse else { return Ok(body.map_err(crate::body::BodyError::from).boxed()) };
    let warn = |line: String| shared.stats.log_error(&format!("{}: {line}", ctx.url));
    match crate::body::reverse(headers, body, rules, warn).await {
        Ok(body) => Ok(body),
        Err(crate::body::RequestBodyError::Unreadable(reason)) => {
            Err(ProxyError::RequestBody { url: ctx.url.clone(), reason })
        }
        Err(crate::body::RequestBodyError::Stalled) => Err(ProxyError::RequestStalled { url: ctx.url.clone() }),
    }
}

/// How long the target may keep a request waiting before it is logged and shown as waiting.
pub(crate) const STILL_WAITING: std::time::Duration = std::time::Duration::from_secs(30);

/// `answer`, with one log line and an inspector entry once it has taken [`STILL_WAITING`]: with no
/// `upstreamTimeoutMs` (the default) nothing else would make a hung target visible.
async fn noting_long_wait<F: std::future::Future>(shared: &Shared, answer: F, ctx: &RequestCtx) -> F::Output {
    let mut answer = std::pin::pin!(answer);
    tokio::select! {
        done = &mut answer => return done,
        () = tokio::time::sleep(STILL_WAITING) => {}
    }
    let (method, path) = (ctx.method.as_str(), ctx.path_and_query.as_str());
    let waited = STILL_WAITING.as_secs();
    shared.stats.log_error(&format!("still waiting for the target after {waited} s: {method} {path} ({})", ctx.url));
    let _shown = shared.inspector.as_ref().map(|inspector| inspector.waiting(method, path));
    answer.await
}

/// The end of the upstream exchange: response hook (hooks.rs), response headers (headers.rs).
async fn respond(
    mut head: http::response::Parts,
    body: UpstreamBody,
    target: &Upstream<'_>,
    ctx: &RequestCtx,
    hooks: &hooks::Hooks,
    client: Option<Arc<hooks::ClientRequest>>,
) -> Result<(http::response::Parts, UpstreamBody), ProxyError> {
    let config = target.config;
    if let (Some(hook), Some(client)) = (&hooks.proxy_res, client) {
        hooks::response(hook.as_ref(), &mut head, client, &ctx.url).await?;
    }
    headers::to_client(&mut head.headers, head.status, config, &ctx.local_host);
    // The client gets HTTP/1.1 (keep-alive, chunked) whatever the target speaks: an HTTP/1.0 origin
    // (`python3 -m http.server`) would otherwise close every connection after one answer.
    head.version = http::Version::HTTP_11;
    Ok((head, body))
}

/// Body plan of a whole local file: as a proxied body's, except that compressed text that no rule
/// touches is compressed once per file version and then served from memory (local_files.rs).
async fn local_file_phase(
    shared: &Arc<Shared>,
    ctx: &mut RequestCtx,
    head: http::response::Parts,
    body: UpstreamBody,
    version: local_files::FileVersion,
) -> Result<Response<ProxyBody>, ProxyError> {
    ctx.record.source = Some("local");
    // Read uncompressed on the client's behalf, like a page from a loopback target.
    ctx.upstream_identity = true;
    let plan = local_files::plan(&ctx.plan_facts(), &head, shared.config.beyond_pages());
    let Plan::Compress { encode } = plan else { return body_phase(shared, ctx, head, body, plan).await };
    if let Some(bytes) = shared.compressed_files.get(&version, encode) {
        shared.stats.add_passed_through();
        return Ok(local_files::cached(head, encode, bytes));
    }
    let response = body_phase(shared, ctx, head, body, plan).await?;
    Ok(response.map(|body| shared.compressed_files.keep(version, encode, body)))
}

/// A page's start that could not be read (sniffing, the read-ahead to the snippet): nothing has been
/// sent yet. The upstream body's own failure is logged where it happens.
fn start_failed(url: &str, error: SniffError) -> ProxyError {
    match error {
        SniffError::Upstream(e) => ProxyError::UpstreamBody { url: url.to_string(), reason: e.to_string() },
        SniffError::Decode(e) => ProxyError::Upstream { url: url.to_string(), reason: e.to_string() },
    }
}

/// Whether a page's start holds a `<meta http-equiv="Content-Security-Policy">` (any case). Every page
/// with the snippet asks, over all of its first chunk, so the search must cost next to nothing: memchr's
/// packed-pair search finds the name's two dashes nine bytes apart (`-security-`, in any case), which few
/// texts hold, and each is checked in place. Teddy over the case variants of `-sec` took ~2% of a plain
/// page's CPU; a case-insensitive automaton, ~10% (benches/RESULTS.md, "The 0-rule page").
fn names_a_policy(decoded: &[u8]) -> bool {
    const NAME: &[u8] = b"content-security-policy";
    const DASH: usize = 7;
    let named_at = |dash: usize| {
        dash.checked_sub(DASH)
            .and_then(|start| decoded.get(start..start + NAME.len()))
            .is_some_and(|name| name.eq_ignore_ascii_case(NAME))
    };
    let mut from = 0;
    while let Some(found) = dash_pairs::next(decoded, from) {
        if named_at(found) {
            return true;
        }
        from = found + 1;
    }
    false
}

/// The positions of a `-` with another `-` nine bytes on (the dashes of `-security-`).
mod dash_pairs {
    /// The needle whose first and last bytes the search looks for; its other bytes are never compared.
    const NEEDLE: &[u8] = b"-security-";

    #[cfg(target_arch = "aarch64")]
    use memchr::arch::aarch64::neon::packedpair::Finder as Wide;
    #[cfg(target_arch = "x86_64")]
    use memchr::arch::x86_64::{avx2::packedpair::Finder as Wide, sse2::packedpair::Finder as Narrow};

    /// The vector search this CPU has.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    enum Search {
        Wide(Wide),
        #[cfg(target_arch = "x86_64")]
        Narrow(Narrow),
    }

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn search() -> Option<&'static Search> {
        static SEARCH: std::sync::OnceLock<Option<Search>> = std::sync::OnceLock::new();
        SEARCH
            .get_or_init(|| {
                let pair = memchr::arch::all::packedpair::Pair::with_indices(NEEDLE, 0, 9)?;
                #[cfg(target_arch = "x86_64")]
                let narrow = || Narrow::with_pair(NEEDLE, pair).map(Search::Narrow);
                #[cfg(target_arch = "aarch64")]
                let narrow = || None;
                Wide::with_pair(NEEDLE, pair).map(Search::Wide).or_else(narrow)
            })
            .as_ref()
    }

    /// The first such position at `from` or after.
    pub(super) fn next(hay: &[u8], from: usize) -> Option<usize> {
        let rest = hay.get(from..)?;
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        if let Some(search) = search() {
            let found = match search {
                Search::Wide(finder) if rest.len() >= finder.min_haystack_len() => finder.find_prefilter(rest),
                #[cfg(target_arch = "x86_64")]
                Search::Narrow(finder) if rest.len() >= finder.min_haystack_len() => finder.find_prefilter(rest),
                _ => scalar(rest),
            };
            return found.map(|at| from + at);
        }
        scalar(rest).map(|at| from + at)
    }

    /// The same one `-` at a time (no vector search, or a hay too short for it).
    fn scalar(hay: &[u8]) -> Option<usize> {
        memchr::memchr_iter(b'-', hay).find(|&at| hay.get(at + NEEDLE.len() - 1) == Some(&b'-'))
    }
}

/// Whether a page's start holds `<body` (any case). A policy `<meta>` after it is not one: whatever
/// start tag ends `<head>`, a `<meta>` after it lands in `<body>`, where browsers ignore policies.
fn shows_the_body(decoded: &[u8]) -> bool {
    memchr::memchr_iter(b'<', decoded)
        .any(|at| decoded.get(at + 1..at + 5).is_some_and(|tag| tag.eq_ignore_ascii_case(b"body")))
}

/// The answer to a failed request: counted, logged once, rendered (pages.rs).
pub(crate) fn fail(shared: &Shared, error: ProxyError) -> Response<ProxyBody> {
    if error.is_upstream_error() {
        shared.stats.add_upstream_error();
    }
    let line = error.log_line();
    if let Some(line) = &line {
        shared.stats.log_error(line);
    }
    // The target named is the one that failed, a route's or `proxy`'s: the origin its URL starts with.
    let origin = error.url().and_then(|url| url::Url::parse(url).ok()).map(|url| url.origin().ascii_serialization());
    let mut page = error.page(&origin.unwrap_or_else(|| shared.config.target.origin()));
    let facts = observe::facts(page.extensions_mut());
    facts.source = Some("error");
    facts.error = Some(line.unwrap_or_else(|| format!("{error:?}")));
    page
}

/// Body plan and respond: passthrough, or sniff, rewrite the start of the page before the headers go
/// out (so that a `replace` function throwing on it is still a 500), and stream the rest.
async fn body_phase(
    shared: &Shared,
    ctx: &mut RequestCtx,
    mut head: http::response::Parts,
    mut upstream: UpstreamBody,
    plan: Plan,
) -> Result<Response<ProxyBody>, ProxyError> {
    let config = &shared.config;
    let exchange = ctx.exchange.take();
    let mut rewritten = true;
    let json_rules;
    let (sniff, decode, encode, rules, user_rules) = match plan {
        Plan::Passthrough => {
            shared.stats.add_passed_through();
            return Ok(Response::from_parts(head, ProxyBody::Passthrough { prefix: None, upstream }));
        }
        Plan::Rewrite { sniff, decode, encode, rules: RuleSet::Page } => {
            (sniff, decode, encode, &ctx.rules[..], ctx.user_rules)
        }
        Plan::Rewrite { sniff, decode, encode, rules: RuleSet::JsonOrigins } => {
            json_rules = shared.json_rules(&ctx.local_host);
            (sniff, decode, encode, &json_rules[..], None)
        }
        Plan::Compress { encode } => {
            shared.stats.add_passed_through();
            rewritten = false;
            (false, Encoding::Identity, encode, &[][..], None)
        }
    };
    // Rules that never matched this URL's body (same validator) are skipped (skip.rs).
    let key = SkipKey::of(&ctx.method, &ctx.path_and_query, &head.headers);
    let body::RulesToRun { rules, members_skipped, memo: mut skip_memo } =
        body::rules_to_run(rules, user_rules, key, &shared.skips);
    let mut rewriter =
        Rewriter::new(&rules, &ctx.local_host, config.max_match_bytes).with_members_skipped(&members_skipped);
    // A page that gets the snippet gets its Content-Security-Policy amended for it (csp.rs).
    let page_policy = rules
        .iter()
        .any(Rule::injects_snippet)
        .then(|| Arc::new(PagePolicy::new(config.local_scheme(), &ctx.local_host)));
    if let Some(page_policy) = &page_policy {
        rewriter = rewriter.with_page_policy(page_policy.clone());
    }
    if let Some(mut exchange) = exchange {
        // Replacement functions see the response headers as they go out.
        exchange.status = head.status.as_u16();
        let mut out_headers = head.headers.clone();
        headers::for_rewritten_body(&mut out_headers, encode);
        exchange.response_headers = header_pairs(&out_headers);
        rewriter = rewriter.with_exchange(Arc::new(exchange));
    }
    let mut pipeline = Pipeline::new(decode, encode, rewriter);
    if shared.observer.wants_preview() {
        pipeline = pipeline.keep_preview();
    }
    let mut decoded_prefix = None;
    if sniff {
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
            Err(e) => return Err(start_failed(&ctx.url, e)),
        }
    }
    // A policy (header or `<meta>`) is amended when, and only when, the snippet is written: where the
    // page has one, it is read ahead (bounded) to the snippet's place before its headers go out.
    if let Some(page_policy) = page_policy.as_ref().filter(|_| rewritten) {
        let has_policy = head.headers.contains_key(http::header::CONTENT_SECURITY_POLICY)
            || head.headers.contains_key(http::header::CONTENT_SECURITY_POLICY_REPORT_ONLY)
            || decoded_prefix.as_deref().is_some_and(names_a_policy);
        if has_policy {
            let snippet: Vec<Rule> = rules.iter().filter(|rule| rule.injects_snippet()).cloned().collect();
            let decoded = decoded_prefix.get_or_insert_with(Vec::new);
            let lookahead = body::SNIPPET_LOOKAHEAD.max(config.max_match_bytes);
            let placed =
                body::read_to_snippet(&mut upstream, &mut pipeline, decoded, &snippet, &ctx.local_host, lookahead)
                    .await
                    .map_err(|e| start_failed(&ctx.url, e))?;
            if !placed {
                page_policy.withhold();
            }
        } else if decoded_prefix.as_deref().is_some_and(shows_the_body) {
            pipeline.leave_out_meta_policy();
        }
        // Before the snippet is written: whether it needs the nonce is known from the headers.
        headers::amend_csp(&mut head.headers, page_policy);
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
                return Err(ProxyError::Rewrite { url: ctx.url.clone(), reason: e.to_string() })
            }
            Err(body::PipelineError::Codec(e)) => {
                return Err(ProxyError::Upstream { url: ctx.url.clone(), reason: e.to_string() })
            }
        }
    }
    headers::for_rewritten_body(&mut head.headers, encode);
    if rewritten {
        shared.stats.add_rewritten();
    }
    ctx.record.rewritten = rewritten;
    let state =
        RewriteState::new(upstream, pipeline, out, shared.stats.clone(), ctx.url.clone()).with_skip_memo(skip_memo);
    #[cfg(feature = "test-hooks")]
    let state = state
        .with_panic_probe(config.panic_probes && ctx.path_and_query.starts_with(&format!("{PANIC_PROBE_PREFIX}/body")));
    Ok(Response::from_parts(head, ProxyBody::Rewrite(Box::new(state))))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{dash_pairs, names_a_policy, shows_the_body};

    #[test]
    fn the_body_is_seen_in_any_case_and_only_as_a_tag() {
        assert!(shows_the_body(b"<head></head><BODY class=x>"));
        assert!(shows_the_body(b"<body"));
        assert!(!shows_the_body(b"<head><meta name=body></head> body <bod"));
    }

    #[test]
    fn a_policy_is_named_in_any_case_anywhere_in_the_page_start() {
        for page in [
            &b"content-security-policy"[..],
            b"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'self'\">",
            b"<META HTTP-EQUIV=CONTENT-SECURITY-POLICY>",
            b"<meta http-equiv='content-SECURITY-policy-report-only'>",
            b"x-sec -sec content-security-polic content-Security-Policy",
        ] {
            assert!(names_a_policy(page), "{}", String::from_utf8_lossy(page));
        }
        for page in [
            &b""[..],
            b"-sec",
            b"ontent-security-policy",
            b"content-security-polic",
            b"content-security_policy content security-policy",
            b"<meta name=\"viewport\"> -security -Sec -SEC",
        ] {
            assert!(!names_a_policy(page), "{}", String::from_utf8_lossy(page));
        }
    }

    proptest! {
        /// The same answer as a case-insensitive automaton over the whole text.
        #[test]
        fn the_check_equals_a_case_insensitive_search(
            pieces in prop::collection::vec(
                prop::sample::select(vec![
                    "content", "Content", "-", "security", "SECURITY", "-sec", "policy", "Policy", "x", " ",
                    "content-security-policy", "CONTENT-security-POLICY", "Content-Security-Polic", "ontent-Security-Policy",
                    // Past a vector's width, so that names fall at every offset of the blocks searched.
                    "<p class=\"a-b\">some text of a page</p>",
                ]),
                0..60,
            ),
        ) {
            let page = pieces.concat();
            let reference = aho_corasick::AhoCorasick::builder()
                .ascii_case_insensitive(true)
                .build(["content-security-policy"])
                .unwrap()
                .is_match(&page);
            prop_assert_eq!(names_a_policy(page.as_bytes()), reference, "{}", page);
        }

        /// The vector search finds what a look at every byte finds, from any position, near the hay's end too.
        #[test]
        fn dash_pairs_are_every_dash_with_a_dash_nine_bytes_on(
            hay in prop::collection::vec(prop::sample::select(vec![b'-', b'a', b'S']), 0..300),
            from in 0..320usize,
        ) {
            let expected = (from..hay.len()).find(|&at| hay[at] == b'-' && hay.get(at + 9) == Some(&b'-'));
            prop_assert_eq!(dash_pairs::next(&hay, from), expected);
        }
    }
}
