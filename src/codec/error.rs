//! Errors of the decoders and encoders, shared by both; each names the coding at fault.

#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("malformed {0} body: {1}")]
    Corrupt(&'static str, String),
    #[error("{0} body ended before its compressed stream did")]
    Truncated(&'static str),
    #[error("{0} encoder failed: {1}")]
    Encode(&'static str, std::io::Error),
}
