//! Streaming decoders for every coding we speak, whose memory stays bounded whatever the compression
//! ratio: each call produces at most [`DECODED_PIECE`] bytes, so a decompression bomb costs nothing
//! more than an ordinary body.

use super::pool::{Pool, Pooled};
use super::{CodecError, Encoding, Inflate, Repeat};

/// Inflater states between bodies: a new one is ~93 KiB of memory zeroed for every gzip or deflate body.
static INFLATE_STATES: Pool<Inflate> = Pool::new();

/// Largest piece of decoded output produced at once: a decompression bomb costs nothing more.
pub const DECODED_PIECE: usize = 32 * 1024;

/// A streaming decoder. [`Decoder::decode`] produces at most [`DECODED_PIECE`] bytes per call.
pub struct Decoder {
    state: DecoderState,
    finished: bool,
    /// The repeats our inflater reported and nobody took yet (see [`Decoder::keep_repeats`]).
    repeats: Vec<Repeat>,
    keep_repeats: bool,
}

enum DecoderState {
    Identity,
    /// gzip and deflate (zlib-wrapped or raw) by our own inflater, which reports the stream's repeats
    /// (`codec::reuse`); its state from a pool.
    Inflate(Box<Pooled<Inflate>>),
    Brotli(
        Box<brotli::BrotliState<brotli::enc::StandardAlloc, brotli::enc::StandardAlloc, brotli::enc::StandardAlloc>>,
        Box<[u8]>,
    ),
    Zstd(Box<zstd::stream::raw::Decoder<'static>>, Box<[u8]>),
}

impl Decoder {
    /// A decoder for one body in `encoding`.
    pub fn new(encoding: Encoding) -> Decoder {
        let state = match encoding {
            Encoding::Identity => DecoderState::Identity,
            Encoding::Gzip | Encoding::Deflate => {
                let mut inflate = INFLATE_STATES.take(Inflate::gzip);
                // Whether new or idle (the pool's reset leaves it to here), in this body's coding.
                inflate.restart_as(encoding);
                DecoderState::Inflate(Box::new(inflate))
            }
            Encoding::Brotli => DecoderState::Brotli(
                Box::new(brotli::BrotliState::new(Default::default(), Default::default(), Default::default())),
                vec![0; DECODED_PIECE].into_boxed_slice(),
            ),
            Encoding::Zstd => DecoderState::Zstd(
                // Fails only when zstd cannot allocate its context, where Rust would abort anyway.
                Box::new(zstd::stream::raw::Decoder::new().expect("zstd decoder allocates")),
                vec![0; DECODED_PIECE].into_boxed_slice(),
            ),
        };
        Decoder { state, finished: matches!(encoding, Encoding::Identity), repeats: Vec::new(), keep_repeats: false }
    }

    /// Whether to keep the repeats of a gzip or deflate stream for [`Decoder::take_repeats`] (they are dropped
    /// otherwise, as they are by default).
    pub fn keep_repeats(&mut self, keep: bool) {
        self.keep_repeats = keep;
        self.repeats.clear();
    }

    /// The repeats decoded and not taken yet, in stream order (positions count decoded bytes): the caller
    /// takes them by emptying the vector.
    pub fn take_repeats(&mut self) -> &mut Vec<Repeat> {
        &mut self.repeats
    }

    /// Decodes from `input` into `out` (at most [`DECODED_PIECE`] new bytes); returns the input bytes
    /// consumed. Call again while input remains or while a call filled its piece.
    pub fn decode(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<usize, CodecError> {
        match &mut self.state {
            DecoderState::Identity => {
                let n = input.len().min(DECODED_PIECE);
                out.extend_from_slice(&input[..n]);
                Ok(n)
            }
            DecoderState::Inflate(inflate) => {
                if !self.keep_repeats {
                    self.repeats.clear();
                }
                inflate.decode(input, out, DECODED_PIECE, &mut self.repeats)
            }
            DecoderState::Brotli(state, buffer) => {
                if self.finished {
                    return Ok(input.len());
                }
                let (mut available_in, mut input_offset) = (input.len(), 0);
                let (mut available_out, mut output_offset, mut total_out) = (buffer.len(), 0, 0);
                let result = brotli::BrotliDecompressStream(
                    &mut available_in,
                    &mut input_offset,
                    input,
                    &mut available_out,
                    &mut output_offset,
                    buffer,
                    &mut total_out,
                    state,
                );
                out.extend_from_slice(&buffer[..output_offset]);
                match result {
                    brotli::BrotliResult::ResultFailure => {
                        Err(CodecError::Corrupt("br", "invalid brotli stream".into()))
                    }
                    brotli::BrotliResult::ResultSuccess => {
                        self.finished = true;
                        Ok(input_offset)
                    }
                    _ => Ok(input_offset),
                }
            }
            DecoderState::Zstd(decoder, buffer) => {
                use zstd::stream::raw::{InBuffer, Operation, OutBuffer};
                let mut src = InBuffer::around(input);
                let mut dst = OutBuffer::around(&mut buffer[..]);
                let hint = decoder.run(&mut src, &mut dst).map_err(|e| CodecError::Corrupt("zstd", e.to_string()))?;
                let produced = dst.pos();
                out.extend_from_slice(&buffer[..produced]);
                // A hint of 0 means a frame just ended; more frames may follow. A call that moved
                // nothing says nothing (it asks for the next frame's header).
                if src.pos() > 0 || produced > 0 {
                    self.finished = hint == 0;
                }
                Ok(src.pos())
            }
        }
    }

    /// Makes the decoder state the first body of a process would otherwise make (off the async workers).
    pub fn prepare_process() {
        INFLATE_STATES.prepare(Inflate::gzip);
    }

    /// Checks at the end of the body that the compressed stream was complete.
    pub fn finish(&mut self) -> Result<(), CodecError> {
        match &mut self.state {
            DecoderState::Identity => Ok(()),
            DecoderState::Inflate(inflate) => {
                inflate.finish()?;
                // Whole: its state may serve another body.
                inflate.stream_finished();
                Ok(())
            }
            DecoderState::Brotli(..) if !self.finished => Err(CodecError::Truncated("br")),
            DecoderState::Zstd(..) if !self.finished => Err(CodecError::Truncated("zstd")),
            _ => Ok(()),
        }
    }
}

/// Decodes a whole buffer (tests and fixtures).
pub fn decode_all(encoding: Encoding, input: &[u8]) -> Result<Vec<u8>, CodecError> {
    Ok(decode_up_to(encoding, input, usize::MAX)?.unwrap_or_default())
}

/// Decodes a whole buffer, giving up (`None`) once it has decoded more than `limit` bytes: a few
/// hundred bytes of brotli can claim gigabytes.
pub fn decode_up_to(encoding: Encoding, mut input: &[u8], limit: usize) -> Result<Option<Vec<u8>>, CodecError> {
    let mut decoder = Decoder::new(encoding);
    let mut out = Vec::with_capacity(input.len().min(limit));
    loop {
        let before = out.len();
        let consumed = decoder.decode(input, &mut out)?;
        input = &input[consumed..];
        if out.len() > limit {
            return Ok(None);
        }
        let produced = out.len() - before;
        if consumed == 0 && produced == 0 && !input.is_empty() {
            return Err(CodecError::Corrupt(encoding.token(), "decoder made no progress".into()));
        }
        if input.is_empty() && produced < DECODED_PIECE && consumed == 0 {
            break;
        }
    }
    decoder.finish()?;
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::codec::encode_all;

    #[test]
    fn deflate_fed_one_byte_at_a_time() {
        for raw in [false, true] {
            let compressed = if raw {
                let mut w = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
                w.write_all(b"one byte at a time").unwrap();
                w.finish().unwrap()
            } else {
                encode_all(Encoding::Deflate, b"one byte at a time")
            };
            let mut decoder = Decoder::new(Encoding::Deflate);
            let mut out = Vec::new();
            for byte in &compressed {
                assert_eq!(decoder.decode(std::slice::from_ref(byte), &mut out).unwrap(), 1);
            }
            decoder.finish().unwrap();
            assert_eq!(out, b"one byte at a time");
        }
    }

    #[test]
    fn every_gzip_member_is_decoded_in_any_chunking() {
        let two =
            [encode_all(Encoding::Gzip, b"first member, "), encode_all(Encoding::Gzip, b"second member")].concat();
        for piece in [1, 2, 3, 7, two.len()] {
            let mut decoder = Decoder::new(Encoding::Gzip);
            let mut out = Vec::new();
            for chunk in two.chunks(piece) {
                let mut rest = chunk;
                while !rest.is_empty() {
                    rest = &rest[decoder.decode(rest, &mut out).unwrap()..];
                }
            }
            decoder.finish().unwrap();
            assert_eq!(out, b"first member, second member", "pieces of {piece}");
        }
        let cut = &two[..two.len() - 3];
        assert!(decode_all(Encoding::Gzip, cut).is_err(), "a second member cut short is truncated");
        let padded = [&encode_all(Encoding::Gzip, b"padded")[..], &[0, 0, 0, 0]].concat();
        assert_eq!(decode_all(Encoding::Gzip, &padded).unwrap(), b"padded", "padding after the member is ignored");
    }

    #[test]
    fn raw_deflate_is_accepted_too() {
        let mut w = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        w.write_all(b"hello raw deflate").unwrap();
        let raw = w.finish().unwrap();
        assert_eq!(decode_all(Encoding::Deflate, &raw).unwrap(), b"hello raw deflate");
    }

    #[test]
    fn corrupt_and_truncated_streams_are_errors() {
        for encoding in [Encoding::Gzip, Encoding::Brotli, Encoding::Zstd] {
            let good = encode_all(encoding, &[b'x'; 10_000]);
            assert!(decode_all(encoding, &good[..good.len() / 2]).is_err(), "{encoding:?} truncated");
            let garbage: Vec<u8> = (0..200u8).map(|i| i.wrapping_mul(37)).collect();
            assert!(decode_all(encoding, &garbage).is_err(), "{encoding:?} garbage");
        }
    }
}
