//! WebSocket upgrades: the handshake goes to the target with Origin rewritten (Browsersync users
//! ask for it, #1185), then bytes are copied both ways until either side closes.

use std::sync::Arc;

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::uri::PathAndQuery;
use http::{Request, Response, StatusCode};
use http_body_util::Empty;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;

use crate::body::{ProxyBody, UpstreamBody};
use crate::forward;
use crate::headers;
use crate::pages::ProxyError;
use crate::routes::Upstream;
use crate::state::{Phase, Shared};

pub(crate) fn is_upgrade<B>(req: &Request<B>) -> bool {
    let has_token = |name: header::HeaderName, token: &str| {
        req.headers()
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
    };
    has_token(header::CONNECTION, "upgrade") && has_token(header::UPGRADE, "websocket")
}

/// Phase "send" for an upgrade: the handshake to the request's target (`proxy`'s or a route's) on a
/// connection of its own, then the tunnel. A failure before the target answers is an error page, like any other request's.
pub(crate) async fn tunnel(
    shared: Arc<Shared>,
    target: Upstream<'_>,
    mut req: Request<Incoming>,
    local_host: &str,
) -> Result<Response<ProxyBody>, ProxyError> {
    let config = target.config;
    let url = format!("{}{}", config.target.origin(), req.uri().path_and_query().map_or("/", |p| p.as_str()));
    let client_upgrade = hyper::upgrade::on(&mut req);
    let (mut parts, _) = req.into_parts();
    headers::to_upstream(&mut parts.headers, config, local_host, true);
    let mut origin_form = http::uri::Parts::default();
    origin_form.path_and_query =
        Some(parts.uri.path_and_query().cloned().unwrap_or_else(|| PathAndQuery::from_static("/")));
    parts.uri = match http::Uri::from_parts(origin_form) {
        Ok(uri) => uri,
        Err(e) => return Err(ProxyError::Upstream { url, reason: format!("invalid upstream URL: {e}") }),
    };
    let failed = |reason: String| ProxyError::Upstream { url: url.clone(), reason };
    let io = forward::dial(&config.target, target.websocket_tls).await.map_err(failed)?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake::<_, Empty<Bytes>>(TokioIo::new(io))
        .await
        .map_err(|e| failed(forward::describe(&e)))?;
    tokio::spawn(conn.with_upgrades());
    let mut response = sender
        .send_request(Request::from_parts(parts, Empty::new()))
        .await
        .map_err(|e| failed(forward::describe(&e)))?;
    if response.status() != StatusCode::SWITCHING_PROTOCOLS {
        // The upstream refused the upgrade: pass its answer on as is.
        let (mut head, body) = response.into_parts();
        headers::to_client(&mut head.headers, head.status, config, local_host);
        let upstream = UpstreamBody::new(body, config.upstream_timeout, shared.stats.clone(), url);
        return Ok(Response::from_parts(head, ProxyBody::Passthrough { prefix: None, upstream }));
    }
    let upstream_upgrade = hyper::upgrade::on(&mut response);
    let (mut head, _) = response.into_parts();
    headers::to_client(&mut head.headers, head.status, config, local_host);
    head.headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    shared.stats.add_websocket();
    let mut phase = shared.phase.clone();
    let stats = shared.stats.clone();
    tokio::spawn(async move {
        let (client, upstream) = match tokio::try_join!(client_upgrade, upstream_upgrade) {
            Ok(pair) => pair,
            Err(e) => return stats.log_error(&format!("websocket upgrade of {url} failed: {e}")),
        };
        let (mut client, mut upstream) = (TokioIo::new(client), TokioIo::new(upstream));
        tokio::select! {
            _ = tokio::io::copy_bidirectional(&mut client, &mut upstream) => {}
            _ = phase.wait_for(|&p| p == Phase::Cut) => {}
        }
    });
    Ok(Response::from_parts(head, ProxyBody::Full(None)))
}
