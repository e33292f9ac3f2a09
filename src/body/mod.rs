//! The body pipeline: which responses are rewritten, and the streaming body that decodes, rewrites
//! and re-encodes them without ever holding a whole body.

mod json;
mod pipeline;
mod plan;
mod request;
mod stream;

pub(crate) use json::origin_rules;
pub use pipeline::*;
pub(crate) use plan::*;
pub(crate) use request::{reverse, reverse_rules};
pub(crate) use stream::*;

/// Errors that end a response body early; hyper then aborts the connection, so the client never
/// mistakes a cut body for a complete one.
pub(crate) type BodyError = Box<dyn std::error::Error + Send + Sync>;
