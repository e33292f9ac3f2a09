//! `replay.faults`: what a UI's error handling is tested with: a stall before a chunk, a cut after
//! one, or an error status with a body shaped like the real API's.

use crate::error::ConfigError;
use crate::globs::UrlGlobs;

/// One fault; it applies to every replayed request whose URL matches (every one without `match`).
#[derive(Debug, Clone)]
pub struct Fault {
    /// `match`: URL globs (path and query), as `snippetOptions.whitelist` reads them.
    pub paths: Option<UrlGlobs>,
    /// What happens.
    pub action: FaultAction,
}

/// What a fault does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultAction {
    /// Wait `ms` more before chunk `before_chunk` (0-based); later chunks move by as much.
    Stall {
        /// The chunk waited for.
        before_chunk: usize,
        /// How long, at any speed.
        ms: u64,
    },
    /// Cut the body after chunk `after_chunk` (0-based): the connection is reset, as an upstream
    /// that died mid-stream.
    Cut {
        /// The last chunk sent.
        after_chunk: usize,
    },
    /// Answer with this status instead of the recording (matched or not).
    Status {
        /// 429, 500, 529...
        status: u16,
        /// The body; by default one shaped like the API's own error (OpenAI's, or Anthropic's for
        /// `/v1/messages` and 529).
        body: Option<String>,
    },
}

impl Fault {
    /// Checks one `faults[index]` entry: exactly one of `stallMs` (with `beforeChunk`),
    /// `cutAfterChunk` or `status`.
    pub fn new(index: usize, spec: &super::FaultSpec) -> Result<Fault, ConfigError> {
        let bad = |reason: String| ConfigError::InvalidEntry { option: "replay.faults", index, reason };
        let paths = match &spec.matches {
            Some(glob) => Some(UrlGlobs::new(std::slice::from_ref(glob), "replay.faults[].match")?),
            None => None,
        };
        let action = match (spec.stall_ms, spec.before_chunk, spec.cut_after_chunk, spec.status) {
            (Some(ms), before, None, None) => FaultAction::Stall { before_chunk: before.unwrap_or(0) as usize, ms },
            (None, None, Some(after), None) => FaultAction::Cut { after_chunk: after as usize },
            (None, None, None, Some(status)) => {
                if !(400..=599).contains(&status) {
                    return Err(bad(format!("`status` must be an error status (400-599), got {status}")));
                }
                FaultAction::Status { status, body: spec.body.clone() }
            }
            _ => {
                return Err(bad(
                    "give one of `{ stallMs, beforeChunk }`, `{ cutAfterChunk }` or `{ status, body? }`".into()
                ))
            }
        };
        if spec.body.is_some() && !matches!(action, FaultAction::Status { .. }) {
            return Err(bad("`body` goes with `status` only".into()));
        }
        Ok(Fault { paths, action })
    }

    /// Whether this fault applies to a request URL (path and query).
    pub fn applies_to(&self, path_and_query: &str) -> bool {
        self.paths.as_ref().is_none_or(|globs| globs.matches(path_and_query))
    }
}

/// The body of an error-status fault without its own: what OpenAI's API answers, or Anthropic's
/// for `/v1/messages` and for 529 (its `overloaded_error`), so a client's error parsing is exercised.
pub(crate) fn error_body(status: u16, path: &str) -> String {
    let anthropic = status == 529 || path.starts_with("/v1/messages");
    if anthropic {
        let (kind, message) = match status {
            429 => ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
            529 => ("overloaded_error", "Overloaded"),
            500 => ("api_error", "Internal server error"),
            _ => ("api_error", "Replay fault"),
        };
        return serde_json::json!({ "type": "error", "error": { "type": kind, "message": message } }).to_string();
    }
    let (kind, code, message) = match status {
        429 => (
            "requests",
            "rate_limit_exceeded",
            "Rate limit reached for requests. Limit: 3, Used: 3, Requested: 1. Please try again in 20s.",
        ),
        500 => {
            ("server_error", "server_error", "The server had an error while processing your request. Sorry about that!")
        }
        503 => ("server_error", "service_unavailable", "The server is overloaded or not ready yet."),
        _ => ("server_error", "replay_fault", "Replay fault"),
    };
    serde_json::json!({ "error": { "message": message, "type": kind, "param": null, "code": code } }).to_string()
}
