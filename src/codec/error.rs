//! Errors of the decoders and encoders, shared by both; each names the coding at fault.

/// A body that cannot be decoded or encoded; the `&'static str` names the coding.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    /// The compressed stream is invalid; the text is the decoder's reason.
    #[error("malformed {0} body: {1}")]
    Corrupt(&'static str, String),
    /// The body ended mid-stream: a cut connection, or a wrong `Content-Encoding`.
    #[error("{0} body ended before its compressed stream did")]
    Truncated(&'static str),
    /// The encoder library reported an error.
    #[error("{0} encoder failed: {1}")]
    Encode(&'static str, std::io::Error),
}
