//! The body pipeline: which responses are rewritten, and the streaming body that decodes, rewrites
//! and re-encodes them without ever holding a whole body.

mod json;
mod observed;
mod pipeline;
mod plan;
mod report;
mod request;
mod stream;
mod upstream;

pub(crate) use json::origin_rules;
pub(crate) use observed::{BodyWatcher, ObservedBody};
pub use pipeline::*;
pub(crate) use plan::*;
pub(crate) use report::BodyReport;
pub use report::{Preview, PreviewBuffer, RuleMatches, PREVIEW_BYTES};
pub(crate) use request::{reverse, reverse_query, reverse_rules, RequestBodyError, BODY_IDLE_TIMEOUT};
pub(crate) use stream::*;
pub(crate) use upstream::{RecordedChunks, UpstreamBody, UpstreamTee};

/// Errors that end a response body early; hyper then aborts the connection, so the client never
/// mistakes a cut body for a complete one.
pub(crate) type BodyError = Box<dyn std::error::Error + Send + Sync>;

/// What we send upstream: the client's body (streamed, maybe rewritten), or nothing when a request is
/// retried.
pub(crate) type RequestBody = http_body_util::combinators::BoxBody<bytes::Bytes, BodyError>;
