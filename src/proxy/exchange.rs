//! Where an upstream exchange's answer comes from when cassettes are in play, chosen in one place:
//! the player's recording; the target, with the exchange teed to the recorder; or the target alone.
//! A route's recorder or player comes before the server's; what is replayed is never recorded again,
//! except a miss under `onMiss: 'record'`, which goes to the target and into the cassette.

use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use tokio::time::Instant;

use crate::cassette::record::{BodyTee, Recorder};
use crate::cassette::replay::answer::{self, ReplayStream, Replayed};
use crate::cassette::replay::Player;
use crate::proxy::forward;
use crate::proxy::routes::Upstream;
use crate::proxy::state::Shared;

/// An exchange's answer.
pub(crate) enum Answered {
    /// From the cassette: the recorded head (at its recorded offset already) and body.
    Replayed(http::response::Parts, ReplayStream),
    /// From the target, and the tee that records its body when the exchange is recorded.
    Target(http::Response<Incoming>, Option<BodyTee>),
}

/// The recorder of a request for `path` that goes to the target: while `player` answers the
/// target, its own (`onMiss: 'record'`, for the misses it sends on); else the route's, else the
/// server's.
fn recorder_given_player(
    shared: &Shared,
    target: &Upstream<'_>,
    player: Option<&Arc<Player>>,
    path: &str,
) -> Option<Arc<Recorder>> {
    let recorder = match player {
        Some(player) => player.recorder().cloned(),
        None => shared.recorder_for(target),
    };
    recorder.filter(|r| r.wants(path))
}

/// Answers the upstream request `parts` with `body`, from the cassette or the target; `arrived` is
/// when the request reached the proxy (recorded offsets count from it). `Err` says why the target
/// failed.
pub(crate) async fn send(
    shared: &Shared,
    target: &Upstream<'_>,
    parts: http::request::Parts,
    body: forward::RequestBody,
    arrived: Instant,
    timeout: Option<Duration>,
) -> Result<Answered, String> {
    let player = shared.player_for(target);
    let recorder = recorder_given_player(shared, target, player.as_ref(), parts.uri.path());
    let (recording, response) = match player {
        None => match recorder {
            None => (None, forward::send(target.client, parts, body, timeout).await),
            Some(recorder) => {
                let exchange = recorder.request(arrived.into_std(), &parts.method, &parts.uri, &parts.headers).await;
                let tee = http_body_util::BodyExt::boxed(exchange.request_body(body));
                let response = forward::send(target.client, parts, tee, timeout).await;
                (Some(exchange), response)
            }
        },
        Some(player) => match answer::exchange(&player, &parts, body, arrived).await {
            Replayed::Answer(head, stream) => {
                answer::head_time(&stream).await;
                return Ok(Answered::Replayed(head, stream));
            }
            Replayed::Forward(bytes) => {
                // `onMiss: 'record'`: the miss is appended to the cassette, its body as read for matching.
                let mut recording = None;
                if let Some(recorder) = recorder {
                    let exchange =
                        recorder.request(arrived.into_std(), &parts.method, &parts.uri, &parts.headers).await;
                    exchange.request_bytes(bytes.clone()).await;
                    recording = Some(exchange);
                }
                (recording, forward::send_buffered(target.client, parts, bytes, timeout).await)
            }
        },
    };
    match (response, recording) {
        (Ok(response), None) => Ok(Answered::Target(response, None)),
        (Ok(response), Some(exchange)) => {
            let (head, body) = response.into_parts();
            let tee = exchange.response(&head).await;
            Ok(Answered::Target(http::Response::from_parts(head, body), Some(tee)))
        }
        (Err(reason), recording) => {
            if let Some(exchange) = recording {
                exchange.failed(reason.clone()).await;
            }
            Err(reason)
        }
    }
}
