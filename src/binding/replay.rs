//! `replay` (in `start()`, a `routes` entry, `server.replay()`): its declaration for binding.d.ts and
//! its parser, through serde so that an unknown key or a wrong type is named.

use napi::bindgen_prelude::*;
use napi::Env;
use napi_derive::napi;

use super::record::parse_redact;
use super::{config_error, invalid};
use crate::cassette::replay::{OnMiss, ReplayOptions, ReplaySpec};
use napi::ValueType;

/// Answer requests from a cassette (JSON Lines, see docs/record-and-replay.md) instead of the target: each
/// response at its recorded offsets, its chunks as recorded.
// Declared for binding.d.ts; parse_replay reads it through serde.
#[allow(dead_code)]
#[napi(object, js_name = "ReplayOptions")]
pub struct ReplayOptionsDecl {
    /// The cassette file (relative to the working directory).
    pub path: String,
    /// 1 (default): recorded timing; 4: four times faster; 0: as fast as possible.
    pub speed: Option<f64>,
    /// A request no recording matches: `'error'` (default) answers 404 with a JSON body naming the
    /// nearest recording and the fields that differ; `'proxy'` forwards it to the target; `'record'`
    /// forwards and records it (update mode).
    #[napi(ts_type = "'error' | 'proxy' | 'record'")]
    pub on_miss: Option<String>,
    /// What matching leaves out (method, path, query and body are compared).
    #[napi(js_name = "match")]
    pub matching: Option<ReplayMatch>,
    /// Faults to inject, for testing a UI's error handling.
    pub faults: Option<Vec<ReplayFault>>,
    /// With `onMiss: 'record'` (only): what the recorded misses have redacted, as `record.redact`.
    pub redact: Option<super::record::RedactOptions>,
}

/// `replay.match`.
// Declared for binding.d.ts; parse_replay reads it through serde.
#[allow(dead_code)]
#[napi(object)]
pub struct ReplayMatch {
    /// Query parameters left out of the match, by name.
    pub ignore_query: Option<Vec<String>>,
    /// JSON body fields left out of the match: `'user'`, or nested ones as `'metadata.trace_id'`.
    pub ignore_fields: Option<Vec<String>>,
}

/// One `replay.faults` entry: `{ stallMs, beforeChunk }`, `{ cutAfterChunk }` or `{ status, body? }`.
// Declared for binding.d.ts; parse_replay reads it through serde.
#[allow(dead_code)]
#[napi(object)]
pub struct ReplayFault {
    /// URL glob (path and query) the fault applies to; default every replayed request.
    #[napi(js_name = "match")]
    pub matches: Option<String>,
    /// Wait this many ms more (at any speed) before chunk `beforeChunk`; later chunks move as much.
    pub stall_ms: Option<u32>,
    /// The chunk (0-based, default 0) a stall comes before.
    pub before_chunk: Option<u32>,
    /// Reset the connection after this chunk (0-based), as an upstream dying mid-stream.
    pub cut_after_chunk: Option<u32>,
    /// Answer this error status instead, with `body` or one shaped like the API's own error
    /// (OpenAI's; Anthropic's for `/v1/messages` and 529).
    #[napi(ts_type = "429 | 500 | 503 | 529 | number")]
    pub status: Option<u32>,
    /// The error answer's body (JSON text).
    pub body: Option<String>,
}

/// Parses a `replay` object; `option` names it in errors.
pub(super) fn parse_replay(env: &Env, value: Unknown, option: &'static str) -> Result<ReplayOptions> {
    // `redact` is read here (its JSON paths); serde only lets it through.
    let redact = match value.get_type()? {
        ValueType::Object => Object::from_unknown(value)?.get::<Unknown>("redact")?,
        _ => None,
    };
    let redact = match redact.filter(|r| !matches!(r.get_type(), Ok(ValueType::Undefined))) {
        Some(redact) => Some(parse_redact(redact, &format!("{option}.redact"))?),
        None => None,
    };
    let spec: ReplaySpec = env.from_js_value(value).map_err(|e| invalid(format!("option `{option}`: {}", e.reason)))?;
    let mut options = ReplayOptions::from_spec(spec, option).map_err(config_error)?;
    if let Some(redact) = redact {
        if options.on_miss != OnMiss::Record {
            // It would do nothing: say so rather than drop it in silence.
            return Err(invalid(format!("option `{option}.redact` applies only with `onMiss: 'record'`")));
        }
        options.redact = redact;
    }
    Ok(options)
}
