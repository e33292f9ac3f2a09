//! Every way a request can fail before its answer starts, as one error type, and the one place that
//! turns it into what the client sees (a short text or an HTML page that names the problem).

use http::header::{self, HeaderValue};
use http::{Response, StatusCode};

use crate::body::ProxyBody;

/// Why the proxy answers a request itself instead of with the target's answer.
#[derive(Debug)]
pub(crate) enum ProxyError {
    /// A framing two HTTP parsers may read differently (request smuggling); the reason is the page.
    AmbiguousFraming(&'static str),
    /// `CONNECT`: this is no forward proxy.
    Connect,
    /// An absolute-form request for another host than the proxy.
    ForeignAuthority,
    /// An HTTP/1.1 request without `Host` (RFC 9112 §3.2).
    MissingHost,
    /// A `Host` (or authority) longer than any name and port can be: its length.
    HostTooLong(usize),
    /// A `Host` (or authority) not in `allowedHosts` (DNS rebinding), and the name to add there.
    HostNotAllowed { host: String, name: String },
    /// A WebSocket upgrade from a page of another origin.
    OriginNotAllowed(String),
    /// The target could not be reached or did not answer; counted as an upstream error.
    Upstream { url: String, reason: String },
    /// The target's body failed while it was being read, a failure already counted and logged.
    UpstreamBody { url: String, reason: String },
    /// A rewrite rule failed (a `replace` function threw) before anything was sent.
    Rewrite { url: String, reason: String },
    /// A user hook (`proxy.proxyReq`, `proxy.proxyReqWs`, `proxy.proxyRes`) threw or gave a bad head.
    Hook { hook: &'static str, url: String, reason: String },
    /// A connect-style middleware threw or called `next(err)`, or its host failed.
    Middleware { url: String, reason: String },
    /// A bug in the proxy (a panic) cost this request.
    Internal { path: String, reason: String },
    /// The client's request body could not be read or decoded for `rewriteRequestBodies`.
    RequestBody { url: String, reason: String },
    /// The client stopped sending a body the proxy reads (`rewriteRequestBodies`) for longer than a
    /// head may take.
    RequestStalled { url: String },
}

impl ProxyError {
    /// Whether `stats().upstreamErrors` counts it.
    pub(crate) fn is_upstream_error(&self) -> bool {
        matches!(self, ProxyError::Upstream { .. })
    }

    /// The target URL the failure is about, when there is one.
    pub(crate) fn url(&self) -> Option<&str> {
        match self {
            ProxyError::Upstream { url, .. }
            | ProxyError::UpstreamBody { url, .. }
            | ProxyError::Rewrite { url, .. } => Some(url),
            _ => None,
        }
    }

    /// The log line, for the failures worth one.
    pub(crate) fn log_line(&self) -> Option<String> {
        match self {
            ProxyError::HostNotAllowed { host, .. } => {
                Some(format!("refused a request for Host '{host}': not in allowedHosts"))
            }
            ProxyError::OriginNotAllowed(origin) => {
                Some(format!("refused a WebSocket from Origin '{origin}': not in allowedOrigins"))
            }
            ProxyError::Upstream { url, reason } if certificate_refused(reason) => {
                Some(format!("{url}: {reason} (trust its CA through the system store or NODE_EXTRA_CA_CERTS, or set proxy.secure: false)"))
            }
            ProxyError::Upstream { url, reason } | ProxyError::Rewrite { url, reason } => {
                Some(format!("{url}: {reason}"))
            }
            ProxyError::Internal { path, reason } => Some(format!("{path}: {reason}")),
            ProxyError::Hook { hook, url, reason } => Some(format!("{url}: {hook} failed: {reason}")),
            ProxyError::Middleware { url, reason } => Some(format!("{url}: middleware failed: {reason}")),
            ProxyError::RequestBody { url, reason } => Some(format!("{url}: {reason}")),
            ProxyError::RequestStalled { url } => Some(format!("{url}: {}", request_stalled_reason())),
            _ => None,
        }
    }

    /// The answer the client gets; `target` is the target's origin, named on 502 pages.
    pub(crate) fn page(&self, target: &str) -> Response<ProxyBody> {
        match self {
            ProxyError::AmbiguousFraming(reason) => {
                let mut response = plain(StatusCode::BAD_REQUEST, reason);
                // The body's framing is in doubt: nothing more can be read from this connection safely.
                response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
                response
            }
            ProxyError::Connect => plain(
                StatusCode::METHOD_NOT_ALLOWED,
                "devproxy-native is a reverse proxy for one site; CONNECT is refused\n",
            ),
            ProxyError::ForeignAuthority => plain(
                StatusCode::BAD_REQUEST,
                "devproxy-native only serves its own target; requests for other hosts are refused\n",
            ),
            ProxyError::MissingHost => plain(StatusCode::BAD_REQUEST, "an HTTP/1.1 request needs a Host header\n"),
            ProxyError::HostTooLong(length) => {
                let text = format!(
                    "the Host header is {length} bytes long; devproxy-native answers names of at most {} bytes, port included\n",
                    crate::proxy::security::MAX_HOST_LEN
                );
                plain_text(StatusCode::BAD_REQUEST, text)
            }
            ProxyError::HostNotAllowed { host, name } => host_not_allowed(host, name),
            ProxyError::OriginNotAllowed(origin) => origin_not_allowed(origin),
            ProxyError::Upstream { url, reason } | ProxyError::UpstreamBody { url, reason } => {
                bad_gateway(url, target, reason)
            }
            ProxyError::Rewrite { url, reason } => rewrite_failed(url, reason),
            ProxyError::Internal { path, reason } => internal_error(path, reason),
            ProxyError::Hook { hook, url, reason } => user_code_failed(hook, url, reason),
            ProxyError::Middleware { url, reason } => user_code_failed("middleware", url, reason),
            ProxyError::RequestBody { url, reason } => request_body_failed(url, reason),
            ProxyError::RequestStalled { .. } => {
                let mut response = plain_text(StatusCode::REQUEST_TIMEOUT, format!("{}\n", request_stalled_reason()));
                // The rest of the body may still come: nothing more can be read from this connection.
                response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
                response
            }
        }
    }
}

fn request_stalled_reason() -> String {
    let seconds = crate::body::BODY_IDLE_TIMEOUT.as_secs();
    format!("the client sent nothing of its request body for {seconds} s; gave up on it")
}

fn plain(status: StatusCode, text: &'static str) -> Response<ProxyBody> {
    plain_text(status, text.to_string())
}

fn plain_text(status: StatusCode, text: String) -> Response<ProxyBody> {
    let mut response = Response::new(ProxyBody::full(text));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}

fn html_page(status: StatusCode, html: String, no_store: bool) -> Response<ProxyBody> {
    let mut response = Response::new(ProxyBody::full(html));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    if no_store {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

/// The 400 for a request body the proxy could not read or decode to turn its origins back.
fn request_body_failed(url: &str, reason: &str) -> Response<ProxyBody> {
    let html = format!(
        "<!doctype html><meta charset=\"utf-8\"><title>400 Bad request body</title>\n\
         <h1>400 Bad request body</h1>\n<p>devproxy-native could not send the body of <code>{}</code> on: \
         {}.</p>\n<p>It reads form, JSON and text bodies to turn its own address back into the target's \
         (<code>rewriteRequestBodies</code>; <code>false</code> sends bodies as they come).</p>\n",
        escape_html(url),
        escape_html(reason)
    );
    html_page(StatusCode::BAD_REQUEST, html, true)
}

/// The 403 for a `Host` not in `allowedHosts`: says which option to set.
fn host_not_allowed(host: &str, name: &str) -> Response<ProxyBody> {
    let html = format!(
        "<!doctype html><meta charset=\"utf-8\"><title>403 Host not allowed</title>\n\
         <h1>403 Host not allowed</h1>\n<p>devproxy-native does not answer to the host <code>{}</code>.</p>\n\
         <p>This protects the proxied site against DNS rebinding: another site's page whose name now points at \
         this machine must not read it. If you reach the proxy by this name, add it to the <code>allowedHosts</code> \
         option: <code>allowedHosts: ['{}']</code> (a leading dot, <code>'.example.com'</code>, allows a domain \
         and its subdomains).</p>\n",
        escape_html(host),
        escape_html(name)
    );
    html_page(StatusCode::FORBIDDEN, html, true)
}

/// The 403 for a WebSocket upgrade from a page of another origin.
fn origin_not_allowed(origin: &str) -> Response<ProxyBody> {
    let html = format!(
        "<!doctype html><meta charset=\"utf-8\"><title>403 Origin not allowed</title>\n\
         <h1>403 Origin not allowed</h1>\n<p>devproxy-native refused a WebSocket from a page of <code>{}</code>: \
         only pages of the proxy itself and of the target may open one (cross-site WebSocket hijacking). \
         To allow this origin, add it to the <code>allowedOrigins</code> option: \
         <code>allowedOrigins: ['{}']</code>.</p>\n",
        escape_html(origin),
        escape_html(origin)
    );
    html_page(StatusCode::FORBIDDEN, html, true)
}

/// A rewrite rule failed before anything was sent: a 500 that names the rule.
fn rewrite_failed(url: &str, reason: &str) -> Response<ProxyBody> {
    let html = format!(
        "<!doctype html><meta charset=\"utf-8\"><title>500 Rewrite failed</title>\n\
         <h1>500 Rewrite failed</h1>\n<p>devproxy-native could not rewrite <code>{}</code>.</p>\n<pre>{}</pre>\n",
        escape_html(url),
        escape_html(reason)
    );
    html_page(StatusCode::INTERNAL_SERVER_ERROR, html, false)
}

/// User code (a hook or a middleware) failed before anything was sent: a 500 naming it and its error.
fn user_code_failed(what: &str, url: &str, reason: &str) -> Response<ProxyBody> {
    let html = format!(
        "<!doctype html><meta charset=\"utf-8\"><title>500 {what} failed</title>\n\
         <h1>500 {what} failed</h1>\n<p>devproxy-native's <code>{what}</code> failed on <code>{}</code>.</p>\n<pre>{}</pre>\n",
        escape_html(url),
        escape_html(reason)
    );
    html_page(StatusCode::INTERNAL_SERVER_ERROR, html, true)
}

/// A bug in the proxy (a panic) cost this request: a 500 that says so.
fn internal_error(path: &str, reason: &str) -> Response<ProxyBody> {
    let html = format!(
        "<!doctype html><meta charset=\"utf-8\"><title>500 Internal proxy error</title>\n\
         <h1>500 Internal proxy error</h1>\n<p>devproxy-native failed while handling <code>{}</code>; \
         other requests are not affected. Please report this with the log line.</p>\n<pre>{}</pre>\n",
        escape_html(path),
        escape_html(reason)
    );
    html_page(StatusCode::INTERNAL_SERVER_ERROR, html, false)
}

/// Whether an upstream failure is the target's certificate being refused: rustls's
/// `Error::InvalidCertificate` ("invalid peer certificate: UnknownIssuer", "...: NotValidForName"),
/// whichever layer (connector, handshake) carried it here as text.
pub(crate) fn certificate_refused(reason: &str) -> bool {
    reason.contains("invalid peer certificate")
}

/// What to do about a refused certificate: a local CA (mkcert, Valet/Herd, Local) is trusted once it
/// is in the OS store or NODE_EXTRA_CA_CERTS; `proxy.secure: false` skips the check.
const CERTIFICATE_ADVICE: &str = "The target's TLS certificate was not accepted. If it is signed by a local CA \
     (mkcert, Valet/Herd, Local), trust that CA in the system store (`mkcert -install`) or point \
     NODE_EXTRA_CA_CERTS at its PEM file before starting Node; or set `proxy.secure: false` \
     (`proxy: { target, secure: false }`) to skip verification for this target (Browsersync never verifies).";

/// The 502 page: names the target and what went wrong (and, for a refused certificate, what to do).
fn bad_gateway(url: &str, target: &str, reason: &str) -> Response<ProxyBody> {
    let advice = if certificate_refused(reason) {
        format!("<p>{}</p>\n", escape_html(CERTIFICATE_ADVICE).replace('`', ""))
    } else {
        String::new()
    };
    let html = format!(
        "<!doctype html><meta charset=\"utf-8\"><title>502 Bad Gateway</title>\n\
         <h1>502 Bad Gateway</h1>\n<p>devproxy-native could not get <code>{}</code> from the target <b>{}</b>.</p>\n<pre>{}</pre>\n{}",
        escape_html(url),
        escape_html(target),
        escape_html(reason),
        advice
    );
    html_page(StatusCode::BAD_GATEWAY, html, true)
}

/// `text` as it may be quoted in a page: HTML-escaped, and with secrets masked as everywhere else (the
/// URLs and reasons a page names may carry a query's `token=` or a key; `crate::observe::mask`).
pub(crate) fn escape_html(text: &str) -> String {
    let text = crate::observe::mask::mask_text(text);
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_escape_what_they_quote() {
        let error = ProxyError::Upstream { url: "http://t/<x>".into(), reason: "a & b".into() };
        let response = error.page("http://t");
        assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
        let ProxyBody::Full(Some(body)) = response.into_body() else { panic!("a full page") };
        let body = String::from_utf8(body.to_vec()).unwrap();
        assert!(body.contains("http://t/&lt;x&gt;") && body.contains("a &amp; b"), "{body}");
    }

    #[test]
    fn a_refused_certificate_page_says_what_to_do() {
        let page = |reason: &str| {
            let error = ProxyError::Upstream { url: "https://t/".into(), reason: reason.into() };
            let ProxyBody::Full(Some(body)) = error.page("https://t").into_body() else { panic!("a full page") };
            String::from_utf8(body.to_vec()).unwrap()
        };
        let body = page("client error (Connect): invalid peer certificate: UnknownIssuer");
        assert!(
            body.contains("proxy.secure: false")
                && body.contains("proxy: { target, secure: false }")
                && body.contains("NODE_EXTRA_CA_CERTS"),
            "{body}"
        );
        assert!(!page("connection refused").contains("secure: false"));
    }

    #[test]
    fn only_upstream_failures_count_as_upstream_errors() {
        assert!(ProxyError::Upstream { url: String::new(), reason: String::new() }.is_upstream_error());
        assert!(!ProxyError::UpstreamBody { url: String::new(), reason: String::new() }.is_upstream_error());
        assert!(ProxyError::UpstreamBody { url: String::new(), reason: String::new() }.log_line().is_none());
    }
}
