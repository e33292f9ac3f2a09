//! Phase "middleware": requests whose path matches a connect-style middleware's route are handed to
//! the middleware host, a Node `http` server on a loopback port that runs them on Node's own `req`
//! and `res` (lib/middleware.js). Only those requests pay for the hop. A middleware's final `next()`
//! sends the request back to this server with a return ticket, which skips this phase; the host
//! pipes that answer back, marked so that it is not rewritten twice.
//!
//! The hop to the host carries the per-server token (`x-devproxy-middleware`): the host serves nobody
//! else, and only the host can ask for an error page. The way back carries a ticket instead: random,
//! issued for one hand-off, good once, only from a loopback peer, and stripped before anything
//! (inspector, `onRequest`, logs, cassettes) sees the request. A value that leaks anyway opens nothing.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use http::header::{HeaderMap, HeaderValue};
use http::{Request, Response, Uri};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use crate::proxy::forward::{self, UpstreamClient};
use crate::proxy::headers;
use crate::proxy::pages::ProxyError;

/// The token header, both ways: native → host (the host's token: a request to run middleware on) and
/// host → native (the hand-off's return ticket: a request sent on by `next()`, which skips the
/// middleware).
pub(crate) const TOKEN_HEADER: &str = "x-devproxy-middleware";
/// Native → host: the ticket the request sent on by `next()` carries back in [`TOKEN_HEADER`].
const RETURN_HEADER: &str = "x-devproxy-return";
/// On the host's answer: the request reached the proxy through `next()`, the body is final.
const PASSED_HEADER: &str = "x-devproxy-passed";
/// On the host's answer: a middleware failed; the body is the error, shown on the 500 page.
const ERROR_HEADER: &str = "x-devproxy-error";
/// Most bytes of an error message read from the host.
const MAX_ERROR_BYTES: usize = 16 * 1024;

/// Where the middleware host listens and which paths it wants.
#[derive(Clone)]
pub struct MiddlewareHost {
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// The secret both sides send; random per server.
    pub token: String,
    /// Route prefixes as connect matches them (`""` matches every path); replaced whole when the
    /// middleware change at run time (`server.setMiddleware()`).
    pub routes: Routes,
    /// The return tickets of the hand-offs in flight.
    pub returns: Arc<ReturnTickets>,
}

/// Return tickets issued and not used yet.
#[derive(Default)]
pub struct ReturnTickets(Mutex<HashSet<String>>);

/// A hand-off's ticket; unused, it is withdrawn when the hand-off ends.
struct Ticket {
    tickets: Arc<ReturnTickets>,
    value: String,
}

impl ReturnTickets {
    fn issue(self: &Arc<Self>) -> Result<Ticket, String> {
        use ring::rand::SecureRandom;
        let mut bytes = [0u8; 16];
        ring::rand::SystemRandom::new().fill(&mut bytes).map_err(|_| "no random bytes for a ticket".to_string())?;
        let value: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        self.0.lock().unwrap_or_else(PoisonError::into_inner).insert(value.clone());
        Ok(Ticket { tickets: self.clone(), value })
    }

    /// Whether `value` is a ticket in flight; it is used up either way.
    fn redeem(&self, value: &[u8]) -> bool {
        let Ok(value) = std::str::from_utf8(value) else { return false };
        self.0.lock().unwrap_or_else(PoisonError::into_inner).remove(value)
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.tickets.0.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.value);
    }
}

/// The middleware's routes, shared by every clone of the host's description and replaceable while
/// the server runs.
#[derive(Clone, Default)]
pub struct Routes(Arc<RwLock<Arc<[String]>>>);

impl Routes {
    pub fn new(routes: Vec<String>) -> Routes {
        Routes(Arc::new(RwLock::new(routes.into())))
    }

    /// The routes for requests that start from now on.
    pub fn replace(&self, routes: Vec<String>) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = routes.into();
    }

    fn is_empty(&self) -> bool {
        self.0.read().unwrap_or_else(PoisonError::into_inner).is_empty()
    }

    fn current(&self) -> Arc<[String]> {
        self.0.read().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl std::fmt::Debug for Routes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.current().iter()).finish()
    }
}

/// Marks a request the host sent on with `next()` (see [`MiddlewareHost::take_returned`]).
#[derive(Clone, Copy)]
pub(crate) struct Returned;

impl std::fmt::Debug for MiddlewareHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token stays out of debug output.
        f.debug_struct("MiddlewareHost").field("port", &self.port).field("routes", &self.routes).finish()
    }
}

impl MiddlewareHost {
    /// Whether any middleware is set (a request's path need not be normalized otherwise).
    pub fn has_routes(&self) -> bool {
        !self.routes.is_empty()
    }

    /// Whether a middleware's route matches `path`, as connect matches it: a case-insensitive prefix
    /// followed by `/`, `.` or the end.
    pub fn matches(&self, path: &str) -> bool {
        self.routes.current().iter().any(|route| {
            let route = route.trim_end_matches('/');
            path.len() >= route.len()
                && path.as_bytes()[..route.len()].eq_ignore_ascii_case(route.as_bytes())
                && matches!(path.as_bytes().get(route.len()), None | Some(b'/') | Some(b'.'))
        })
    }

    fn has_token(&self, headers: &HeaderMap, name: &str) -> bool {
        headers.get(name).is_some_and(|v| constant_time_eq(v.as_bytes(), self.token.as_bytes()))
    }

    /// Whether the request was sent on by the host's `next()`: it comes from a loopback peer with a
    /// ticket in flight (used up here). The headers are removed either way, before anything records
    /// the request.
    pub(crate) fn take_returned(&self, headers: &mut HeaderMap, peer: SocketAddr) -> bool {
        let ticket = headers.remove(TOKEN_HEADER);
        headers.remove(RETURN_HEADER);
        peer.ip().is_loopback() && ticket.is_some_and(|ticket| self.returns.redeem(ticket.as_bytes()))
    }
}

/// `path` as a server resolves it, for matching routes: `%XX` of unreserved characters decoded
/// (`/%61dmin` is `/admin`), runs of `/` made one, `.` and `..` segments removed (RFC 3986 §5.2.4).
/// Connect itself matches the raw path; a middleware guarding `/admin` must not be skipped by a
/// spelling the target reads as `/admin`.
pub(crate) fn normalize_path(path: &str) -> std::borrow::Cow<'_, str> {
    // Most paths have nothing to normalize: no allocation for them.
    if !path.contains('%') && !path.contains("//") && !path.contains("/.") {
        return std::borrow::Cow::Borrowed(path);
    }
    let decoded = decode_unreserved(path);
    let mut segments: Vec<&str> = Vec::new();
    for segment in decoded.split('/').skip(1) {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            other => segments.push(other),
        }
    }
    let trailing = decoded.ends_with('/') || decoded.ends_with("/.") || decoded.ends_with("/..");
    let mut normal = format!("/{}", segments.join("/"));
    if trailing && !segments.is_empty() {
        normal.push('/');
    }
    if normal == path {
        std::borrow::Cow::Borrowed(path)
    } else {
        std::borrow::Cow::Owned(normal)
    }
}

/// `%XX` escapes of ALPHA, DIGIT, `-`, `.`, `_` and `~` decoded; every other escape kept.
fn decode_unreserved(path: &str) -> std::borrow::Cow<'_, str> {
    if !path.contains('%') {
        return std::borrow::Cow::Borrowed(path);
    }
    let bytes = path.as_bytes();
    let mut out = String::with_capacity(path.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok());
            if let Some(byte) = hex.filter(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')) {
                out.push(char::from(byte));
                i += 3;
                continue;
            }
        }
        out.push(char::from(bytes[i]));
        i += 1;
    }
    std::borrow::Cow::Owned(out)
}

/// Gives `req` the normalized `path` (its query kept), so that the middleware see what was matched.
pub(crate) fn use_path<B>(req: &mut Request<B>, path: &str) {
    if req.uri().path() == path {
        return;
    }
    let target = match req.uri().query() {
        Some(query) => format!("{path}?{query}"),
        None => path.to_string(),
    };
    let mut parts = req.uri().clone().into_parts();
    if let Ok(path_and_query) = target.parse() {
        parts.path_and_query = Some(path_and_query);
        if let Ok(uri) = Uri::from_parts(parts) {
            *req.uri_mut() = uri;
        }
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// What the middleware host answered.
pub(crate) enum Answer {
    /// A middleware answered itself: the body is planned like a target's (HTML gets rewritten, as
    /// Browsersync's response modifier wraps middleware too).
    Own(Response<Incoming>),
    /// The answer of the proxy to the request `next()` sent on: already final.
    Passed(Response<Incoming>),
}

/// Hands the request to the middleware host (streaming its body) and reads its answer's head.
pub(crate) async fn hand_off(
    client: &UpstreamClient,
    host: &MiddlewareHost,
    req: Request<Incoming>,
    url: &str,
    timeout: Option<std::time::Duration>,
) -> Result<Answer, ProxyError> {
    let failed = |reason: String| ProxyError::Middleware { url: url.to_string(), reason };
    let (mut parts, body) = req.into_parts();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    parts.uri = Uri::try_from(format!("http://127.0.0.1:{}{path}", host.port))
        .map_err(|e| failed(format!("invalid middleware URL: {e}")))?;
    parts.version = http::Version::HTTP_11;
    headers::remove_hop_by_hop(&mut parts.headers, false);
    let token = HeaderValue::from_str(&host.token).map_err(|_| failed("invalid middleware token".into()))?;
    parts.headers.insert(TOKEN_HEADER, token);
    // Held until the host's answer: `next()` comes back while it is awaited.
    let ticket = host.returns.issue().map_err(failed)?;
    let value = HeaderValue::from_str(&ticket.value).map_err(|_| failed("invalid return ticket".into()))?;
    parts.headers.insert(RETURN_HEADER, value);
    let body = http_body_util::BodyExt::boxed(http_body_util::BodyExt::map_err(body, crate::body::BodyError::from));
    let response = forward::send(client, parts, body, timeout)
        .await
        .map_err(|reason| failed(format!("the middleware host did not answer: {reason}")))?;
    let (mut head, body) = response.into_parts();
    if host.has_token(&head.headers, ERROR_HEADER) {
        let reason = read_error(body).await;
        return Err(failed(reason));
    }
    let passed = host.has_token(&head.headers, PASSED_HEADER);
    head.headers.remove(PASSED_HEADER);
    head.headers.remove(ERROR_HEADER);
    headers::remove_hop_by_hop(&mut head.headers, false);
    let response = Response::from_parts(head, body);
    Ok(if passed { Answer::Passed(response) } else { Answer::Own(response) })
}

/// The host's error message, at most [`MAX_ERROR_BYTES`].
async fn read_error(mut body: Incoming) -> String {
    let mut bytes = Vec::new();
    while let Some(Ok(frame)) = body.frame().await {
        if let Some(data) = frame.data_ref() {
            bytes.extend_from_slice(&data[..data.len().min(MAX_ERROR_BYTES - bytes.len())]);
            if bytes.len() >= MAX_ERROR_BYTES {
                break;
            }
        }
    }
    let text = String::from_utf8_lossy(&bytes).trim().to_string();
    if text.is_empty() {
        "a middleware failed".into()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(routes: &[&str]) -> MiddlewareHost {
        MiddlewareHost {
            port: 1,
            token: "t0k".into(),
            routes: Routes::new(routes.iter().map(|r| r.to_string()).collect()),
            returns: Arc::default(),
        }
    }

    #[test]
    fn routes_match_as_connect_matches_them() {
        let h = host(&["/api", "/Static/"]);
        for path in ["/api", "/api/x", "/API/x", "/api.json", "/static/a.css", "/static"] {
            assert!(h.matches(path), "{path}");
        }
        for path in ["/apix", "/", "/ap", "/x/api"] {
            assert!(!h.matches(path), "{path}");
        }
        assert!(host(&[""]).matches("/anything"));
    }

    #[test]
    fn only_a_ticket_in_flight_from_loopback_marks_a_returned_request_once() {
        let h = host(&[""]);
        let loopback: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        let lan: SocketAddr = "192.0.2.7:5000".parse().unwrap();
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(TOKEN_HEADER, HeaderValue::from_str(value).unwrap());
            headers.insert(RETURN_HEADER, HeaderValue::from_static("x"));
            headers
        };
        let mut headers = with("t0k");
        assert!(!h.take_returned(&mut headers, loopback), "the host's own token opens nothing");
        assert!(headers.get(TOKEN_HEADER).is_none() && headers.get(RETURN_HEADER).is_none(), "removed either way");
        let ticket = h.returns.issue().unwrap();
        assert!(!h.take_returned(&mut with(&ticket.value), lan), "not from another machine (and used up)");
        let ticket = h.returns.issue().unwrap();
        assert!(h.take_returned(&mut with(&ticket.value), loopback));
        assert!(!h.take_returned(&mut with(&ticket.value), loopback), "a ticket is good once");
        let unused = h.returns.issue().unwrap();
        let value = unused.value.clone();
        drop(unused);
        assert!(!h.take_returned(&mut with(&value), loopback), "withdrawn when its hand-off ended");
    }

    #[test]
    fn paths_are_normalized_as_a_server_resolves_them() {
        for (raw, normal) in [
            ("/admin", "/admin"),
            ("/%61dmin", "/admin"),
            ("/%41dmin/x", "/Admin/x"),
            ("//admin", "/admin"),
            ("/x/../admin", "/admin"),
            ("/./admin/./", "/admin/"),
            ("/../../admin", "/admin"),
            ("/a%2Fb", "/a%2Fb"),
            ("/a%2", "/a%2"),
            ("/", "/"),
        ] {
            assert_eq!(normalize_path(raw), normal, "{raw}");
        }
        let h = host(&["/admin"]);
        for raw in ["/%61dmin", "//admin", "/x/../admin", "/ADMIN/"] {
            assert!(h.matches(&normalize_path(raw)), "{raw}");
        }
    }
}
