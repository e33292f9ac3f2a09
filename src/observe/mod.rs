//! What the proxy did with each request, as one record: built while the request runs its phases,
//! finished when its body ends (or fails), then handed to every consumer at once: the request log,
//! `stats()`'s histograms and per-rule counters, `onRequest`, and the inspector's ring buffer.
//!
//! Owners: the record and its fan-out (this file), the inspector (`inspector.rs`).

use serde::Serialize;

pub(crate) mod inspector;
pub mod mask;

pub use mask::{mask, mask_headers};

/// One exchange as the proxy saw it. Serialized as is for `logFormat: 'json'`, `onRequest` and the
/// inspector, so field names are camelCase and stable.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExchangeRecord {
    /// Increasing per server, from 1.
    pub id: u64,
    /// When the request arrived, milliseconds since the Unix epoch.
    pub started_at: u64,
    /// Request method.
    pub method: String,
    /// Path and query as the client asked.
    pub url: String,
    /// Status sent to the client (0 if the exchange failed before its headers).
    pub status: u16,
    /// Who answered: `proxy`, `local` (serveStatic), `middleware`, `replay`, `error`.
    pub source: &'static str,
    /// Content-Encoding from the upstream and to the client (`identity` when none).
    pub coding_in: String,
    /// See `coding_in`.
    pub coding_out: String,
    /// Body bytes received from the upstream, as they came (compressed).
    pub bytes_in: u64,
    /// Body bytes sent to the client, as they went (compressed).
    pub bytes_out: u64,
    /// Milliseconds to the upstream's response headers (`None` without an upstream exchange).
    pub upstream_ms: Option<f64>,
    /// Milliseconds from arrival to the body's end.
    pub total_ms: f64,
    /// Milliseconds spent rewriting and encoding the body (`None` when passed through).
    pub rewrite_ms: Option<f64>,
    /// See `rewrite_ms`.
    pub encode_ms: Option<f64>,
    /// Whether the body went through the rewrite rules.
    pub rewritten: bool,
    /// Whether the exchange was recorded to a cassette.
    pub recorded: bool,
    /// Rules that matched, with how many times (rules that matched 0 times are left out).
    pub rules: Vec<RuleMatches>,
    /// Request headers as the client sent them, secrets masked.
    pub request_headers: Vec<(String, String)>,
    /// Response headers as they went to the client, secrets masked.
    pub response_headers: Vec<(String, String)>,
    /// Why the exchange failed, if it did.
    pub error: Option<String>,
    /// The first KiB of the decoded body before and after rewriting, for the inspector's diff view
    /// (filled only while the inspector is on; lossy UTF-8).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<Preview>,
}

/// The start of a rewritten body, before and after the rules ran.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Preview {
    /// Up to 1 KiB of the decoded upstream body.
    pub before: String,
    /// Up to 1 KiB of the rewritten body, before encoding.
    pub after: String,
}

/// How often one rule matched in one body.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuleMatches {
    /// The rule as the user wrote it (its pattern), or `snippet` / `links` for the built-in ones.
    pub rule: String,
    /// Matches replaced in this body.
    pub matches: u64,
}
