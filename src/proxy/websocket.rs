//! WebSocket upgrades: the handshake goes to the target with Origin rewritten (Browsersync users
//! ask for it, #1185), then bytes are copied both ways until either side closes. A recorded one
//! (cassette/record.rs) goes without `Sec-WebSocket-Extensions` (so that its frames are plain), and
//! each read is handed to the recording before it is passed on.

use std::sync::Arc;

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Request, Response, StatusCode};
use http_body_util::Empty;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::body::{ProxyBody, UpstreamBody};
use crate::cassette::record::{Recorder, WsTap};
use crate::lifecycle::Phase;
use crate::proxy::context::RequestCtx;
use crate::proxy::forward;
use crate::proxy::headers;
use crate::proxy::hooks;
use crate::proxy::pages::ProxyError;
use crate::proxy::routes::Upstream;
use crate::proxy::state::Shared;

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
/// connection of its own, then the tunnel. A failure before the target answers is an error page,
/// like any other request's. The request's context says whether a browser says it comes from another
/// site's page (`security::from_another_site`; such upgrades pass the Origin check only from another
/// port of localhost): then no `reqHeaders` credentials. `recorder`: the recording it goes to, if
/// its path is recorded.
pub(crate) async fn tunnel(
    shared: Arc<Shared>,
    target: Upstream<'_>,
    mut req: Request<Incoming>,
    ctx: &RequestCtx,
    recorder: Option<Arc<Recorder>>,
) -> Result<Response<ProxyBody>, ProxyError> {
    // Recorded offsets count from here.
    let arrived = std::time::Instant::now();
    let config = target.config;
    let (url, local_host, cross_site) = (ctx.url.clone(), ctx.local_host.as_str(), ctx.cross_site);
    let client_upgrade = hyper::upgrade::on(&mut req);
    let (parts, _) = req.into_parts();
    let client = shared.hooks.proxy_req_ws.is_some().then(|| hooks::client_request(&parts));
    let mut parts = forward::upgrade_request(parts, ctx, config)?;
    if let (Some(hook), Some(client)) = (&shared.hooks.proxy_req_ws, client) {
        hooks::request(hook.as_ref(), "proxy.proxyReqWs", &mut parts, client, config, &url, cross_site).await?;
    }
    let recording = match recorder.filter(|r| r.wants(parts.uri.path())) {
        Some(recorder) => {
            // Frames compressed by an extension could not be read: the target is offered none.
            parts.headers.remove(header::SEC_WEBSOCKET_EXTENSIONS);
            Some(recorder.request(arrived, &parts.method, &parts.uri, &parts.headers).await)
        }
        None => None,
    };
    let mut response = match handshake(&config.target, target.websocket_tls, parts).await {
        Ok(response) => response,
        Err(reason) => {
            if let Some(exchange) = recording {
                exchange.failed(reason.clone()).await;
            }
            return Err(ProxyError::Upstream { url, reason });
        }
    };
    if response.status() != StatusCode::SWITCHING_PROTOCOLS {
        // The upstream refused the upgrade: pass its answer on as is (recorded as any answer).
        let (mut head, body) = response.into_parts();
        let tee = match recording {
            Some(exchange) => Some(exchange.response(&head).await),
            None => None,
        };
        headers::to_client(&mut head.headers, head.status, config, local_host);
        let upstream = UpstreamBody::new(body, config.upstream_timeout, shared.stats.clone(), url).with_tee(tee);
        return Ok(Response::from_parts(head, ProxyBody::Passthrough { prefix: None, upstream }));
    }
    let upstream_upgrade = hyper::upgrade::on(&mut response);
    let (mut head, _) = response.into_parts();
    let tap = match recording {
        Some(exchange) => Some(exchange.upgraded(&head).await),
        None => None,
    };
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
            _ = relay(&mut client, &mut upstream, tap.as_ref()) => {}
            _ = phase.wait_for(|&p| p == Phase::Cut) => {}
        }
        // Dropping the tap ends the recorded exchange.
        drop(tap);
    });
    Ok(Response::from_parts(head, ProxyBody::Full(None)))
}

/// The handshake with the target on a connection of its own.
async fn handshake(
    target: &crate::config::Target,
    tls: &Arc<rustls::ClientConfig>,
    parts: http::request::Parts,
) -> Result<Response<Incoming>, String> {
    let io = forward::dial(target, tls).await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake::<_, Empty<Bytes>>(TokioIo::new(io))
        .await
        .map_err(|e| forward::describe(&e))?;
    tokio::spawn(conn.with_upgrades());
    sender.send_request(Request::from_parts(parts, Empty::new())).await.map_err(|e| forward::describe(&e))
}

/// Copies both ways until both sides have ended (or either fails), as `copy_bidirectional` does;
/// with a tap, each read is handed to it first (a copy, queued: the relay never waits for it).
pub(crate) async fn relay<C, U>(client: &mut C, upstream: &mut U, tap: Option<&WsTap>) -> std::io::Result<()>
where
    C: AsyncRead + AsyncWrite + Unpin,
    U: AsyncRead + AsyncWrite + Unpin,
{
    let Some(tap) = tap else { return tokio::io::copy_bidirectional(client, upstream).await.map(|_| ()) };
    let (mut client_read, mut client_write) = tokio::io::split(client);
    let (mut upstream_read, mut upstream_write) = tokio::io::split(upstream);
    tokio::try_join!(
        pump(&mut client_read, &mut upstream_write, tap, true),
        pump(&mut upstream_read, &mut client_write, tap, false)
    )
    .map(|_| ())
}

async fn pump<R, W>(from: &mut R, to: &mut W, tap: &WsTap, from_client: bool) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = from.read(&mut buf).await?;
        if n == 0 {
            return to.shutdown().await;
        }
        // Handed over before the write, so that the two directions' reads are queued in the
        // order (and with the times) they happened.
        tap.observe(from_client, &buf[..n]);
        to.write_all(&buf[..n]).await?;
        to.flush().await?;
    }
}
