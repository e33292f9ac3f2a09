//! User hooks around the upstream exchange (Browsersync's `proxy.proxyReq`, `proxy.proxyReqWs` and
//! `proxy.proxyRes`), as phases `proxy.rs` calls when they are given. The core knows them only as
//! [`Hook`]s taking a plain snapshot of a head and answering the changed head asynchronously; the
//! binding implements them by calling JS through a threadsafe function, so while a hook is pending no
//! proxy thread waits for it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::{StatusCode, Uri};

use crate::config::ProxyConfig;
use crate::proxy::pages::ProxyError;

/// What a hook answers, later.
pub type HookFuture<T> = Pin<Box<dyn Future<Output = Result<T, String>> + Send>>;

/// Headers as Node's `rawHeaders`: names as sent and values in order, repeated names kept.
pub type RawHeaders = Vec<(String, String)>;

/// The client's request as it reached the proxy (Browsersync's `req`: `url`, `method`, `headers`).
#[derive(Debug, Clone)]
pub struct ClientRequest {
    /// `GET`, `POST`...
    pub method: String,
    /// Path and query, as the client asked.
    pub url: String,
    /// The client's headers, before any rewrite.
    pub headers: RawHeaders,
}

/// The head of the request the target is about to get; a request hook may change `path` and `headers`.
#[derive(Debug, Clone)]
pub struct UpstreamRequestHead {
    /// The method; read-only for hooks, as in http-proxy once the request is created.
    pub method: String,
    /// Path and query sent to the target.
    pub path: String,
    /// Headers sent to the target.
    pub headers: RawHeaders,
}

/// The head of the target's response before the proxy's own header rewrites; a response hook may
/// change `status` and `headers`.
#[derive(Debug, Clone)]
pub struct UpstreamResponseHead {
    /// The target's status code.
    pub status: u16,
    /// The target's headers.
    pub headers: RawHeaders,
}

/// A user hook: given a snapshot of a head and the client's request, answers the changed head.
/// Implementations must not block the calling thread: the answer comes through the future.
pub trait Hook<T>: Send + Sync {
    /// Starts the call; an `Err` (the hook threw) becomes a 500 page naming it.
    fn call(&self, head: T, client: Arc<ClientRequest>) -> HookFuture<T>;
}

/// The hooks a server runs; each costs a call per request only when given.
#[derive(Clone, Default)]
pub struct Hooks {
    /// `proxy.proxyReq`: before the upstream request is sent.
    pub proxy_req: Option<Arc<dyn Hook<UpstreamRequestHead>>>,
    /// `proxy.proxyReqWs`: before a WebSocket upgrade is sent.
    pub proxy_req_ws: Option<Arc<dyn Hook<UpstreamRequestHead>>>,
    /// `proxy.proxyRes`: on the upstream response, before the proxy's own header rewrites.
    pub proxy_res: Option<Arc<dyn Hook<UpstreamResponseHead>>>,
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooks")
            .field("proxy_req", &self.proxy_req.is_some())
            .field("proxy_req_ws", &self.proxy_req_ws.is_some())
            .field("proxy_res", &self.proxy_res.is_some())
            .finish()
    }
}

/// The header map as raw pairs; a value that is not UTF-8 is passed lossily.
pub(crate) fn raw_headers(headers: &HeaderMap) -> RawHeaders {
    headers.iter().map(|(n, v)| (n.as_str().to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned())).collect()
}

fn header_map(raw: RawHeaders, hook: &str) -> Result<HeaderMap, String> {
    let mut headers = HeaderMap::with_capacity(raw.len());
    for (name, value) in raw {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("{hook} set an invalid header name '{name}'"))?;
        let value =
            HeaderValue::from_str(&value).map_err(|_| format!("{hook} set an invalid value for header '{name}'"))?;
        headers.append(header, value);
    }
    Ok(headers)
}

/// The client's request, for hooks; taken only when a hook is given.
pub(crate) fn client_request(parts: &http::request::Parts) -> Arc<ClientRequest> {
    Arc::new(ClientRequest {
        method: parts.method.to_string(),
        url: parts.uri.path_and_query().map_or("/", |p| p.as_str()).to_string(),
        headers: raw_headers(&parts.headers),
    })
}

/// Phase "request hook" (`proxy.proxyReq`, or `proxy.proxyReqWs` for upgrades): the upstream request's
/// head goes to the hook, and its path and headers come back. `reqHeaders` are applied again after
/// it, as Browsersync appends them to the user's `proxyReq` functions. The URI keeps its scheme and
/// authority (absolute for a pooled request, origin-form for a WebSocket dial).
pub(crate) async fn request(
    hook: &dyn Hook<UpstreamRequestHead>,
    name: &'static str,
    parts: &mut http::request::Parts,
    client: Arc<ClientRequest>,
    config: &ProxyConfig,
    url: &str,
    cross_site: bool,
) -> Result<(), ProxyError> {
    let failed = |reason: String| ProxyError::Hook { hook: name, url: url.to_string(), reason };
    let head = UpstreamRequestHead {
        method: parts.method.to_string(),
        path: parts.uri.path_and_query().map_or("/", |p| p.as_str()).to_string(),
        headers: raw_headers(&parts.headers),
    };
    let before = head.path.clone();
    let changed = hook.call(head, client).await.map_err(failed)?;
    if changed.path != before {
        if !changed.path.starts_with('/') {
            return Err(failed(format!("path must start with '/', got '{}'", changed.path)));
        }
        let mut uri = parts.uri.clone().into_parts();
        uri.path_and_query = Some(changed.path.parse().map_err(|e| failed(format!("invalid path: {e}")))?);
        parts.uri = Uri::from_parts(uri).map_err(|e| failed(format!("invalid path: {e}")))?;
    }
    parts.headers = header_map(changed.headers, name).map_err(failed)?;
    crate::proxy::headers::add_req_headers(&mut parts.headers, config, cross_site);
    Ok(())
}

/// Phase "response hook" (`proxy.proxyRes`): the target's status and headers go to the hook before the
/// proxy's own rewrites (cookies, `Location`), Browsersync's order.
pub(crate) async fn response(
    hook: &dyn Hook<UpstreamResponseHead>,
    head: &mut http::response::Parts,
    client: Arc<ClientRequest>,
    url: &str,
) -> Result<(), ProxyError> {
    let failed = |reason: String| ProxyError::Hook { hook: "proxy.proxyRes", url: url.to_string(), reason };
    let snapshot = UpstreamResponseHead { status: head.status.as_u16(), headers: raw_headers(&head.headers) };
    let changed = hook.call(snapshot, client).await.map_err(failed)?;
    head.status = StatusCode::from_u16(changed.status)
        .map_err(|_| failed(format!("statusCode must be from 100 to 999, got {}", changed.status)))?;
    head.headers = header_map(changed.headers, "proxy.proxyRes").map_err(failed)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_headers_round_trip_keeps_repeats() {
        let raw = vec![("set-cookie".to_string(), "a=1".to_string()), ("Set-Cookie".to_string(), "b=2".to_string())];
        let map = header_map(raw, "proxy.proxyRes").unwrap();
        assert_eq!(map.get_all("set-cookie").iter().count(), 2);
        assert!(header_map(vec![("bad name".into(), "x".into())], "proxy.proxyReq").unwrap_err().contains("bad name"));
    }
}
