//! Content codings: which ones we speak, how they are negotiated, and streaming decoders and encoders
//! whose memory stays bounded whatever the compression ratio (decoded output comes out in pieces).
//!
//! `negotiate` reads `Accept-Encoding` and picks the output coding; `decode` holds
//! the bounded-output decoders (gzip's is ours, `inflate`, which also reports the matches the upstream's
//! compressor found); `encode` the encoders, their gzip/zlib framing and the pools their states return
//! to (`pool`); `deflate` is our DEFLATE encoder behind gzip and deflate, which `reuse` guides with the
//! upstream's matches moved onto the rewritten bytes.

mod decode;
mod deflate;
mod encode;
mod error;
mod huffman;
mod inflate;
mod negotiate;
mod pool;
mod reuse;
#[cfg(test)]
mod tests;

pub use decode::{decode_all, decode_up_to, Decoder, DECODED_PIECE};
pub use encode::{encode_all, Encoder};
pub use error::CodecError;
pub use inflate::{Inflate, Repeat};
pub use negotiate::Encoding;
pub(crate) use negotiate::{accepted, choose_output, upstream_accept_encoding};
pub use reuse::{Hint, Reuse};
