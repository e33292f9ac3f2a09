//! Content codings: which ones we speak, how they are negotiated, and streaming decoders and encoders
//! whose memory stays bounded whatever the compression ratio (decoded output comes out in pieces).

use std::io::Write;

use flate2::{Decompress, FlushDecompress, Status};

mod deflate;
mod pool;
use deflate::{Adler32, FastDeflate};
use pool::{Pool, Pooled};

/// Largest piece of decoded output produced at once: a decompression bomb costs nothing more.
pub const DECODED_PIECE: usize = 32 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Identity,
    Gzip,
    Deflate,
    Brotli,
    Zstd,
}

impl Encoding {
    /// A `Content-Encoding` value we can decode; `None` for anything else (stacked codings included).
    pub fn from_content_encoding(value: Option<&str>) -> Option<Encoding> {
        let Some(value) = value else { return Some(Encoding::Identity) };
        match value.trim().to_ascii_lowercase().as_str() {
            "" | "identity" => Some(Encoding::Identity),
            "gzip" | "x-gzip" => Some(Encoding::Gzip),
            "deflate" => Some(Encoding::Deflate),
            "br" => Some(Encoding::Brotli),
            "zstd" => Some(Encoding::Zstd),
            _ => None,
        }
    }

    pub fn token(self) -> &'static str {
        match self {
            Encoding::Identity => "identity",
            Encoding::Gzip => "gzip",
            Encoding::Deflate => "deflate",
            Encoding::Brotli => "br",
            Encoding::Zstd => "zstd",
        }
    }

    /// Our preference when we pick the coding: the cheapest first, since on a dev machine CPU costs
    /// more than bytes. On a 100 KB page (`cargo bench --bench codec`, benches/RESULTS.md): gzip
    /// 222 µs for 37.6 KB, zstd 1 351 µs for 29.1 KB, brotli 3 1,307 µs for 28.2 KB; deflate is gzip's
    /// DEFLATE with a scalar Adler-32 in place of a carry-less-multiply CRC.
    const PREFERENCE: [Encoding; 4] = [Encoding::Gzip, Encoding::Deflate, Encoding::Zstd, Encoding::Brotli];
}

/// The codings of a client's `Accept-Encoding` that we also speak, with q > 0, in the client's order.
pub fn accepted(accept_encoding: Option<&str>) -> Vec<Encoding> {
    let Some(header) = accept_encoding else { return Vec::new() };
    let mut accepted = Vec::new();
    for item in header.split(',') {
        let mut params = item.split(';');
        let name = params.next().unwrap_or("").trim().to_ascii_lowercase();
        let q = params
            .filter_map(|p| p.trim().strip_prefix("q=").or_else(|| p.trim().strip_prefix("Q=")))
            .filter_map(|q| q.trim().parse::<f32>().ok())
            .next_back()
            .unwrap_or(1.0);
        if q <= 0.0 {
            continue;
        }
        let encoding = match name.as_str() {
            "gzip" | "x-gzip" => Encoding::Gzip,
            "deflate" => Encoding::Deflate,
            "br" => Encoding::Brotli,
            "zstd" => Encoding::Zstd,
            _ => continue,
        };
        if !accepted.contains(&encoding) {
            accepted.push(encoding);
        }
    }
    accepted
}

/// The `Accept-Encoding` to send upstream: the client's, limited to codings we can decode.
pub fn upstream_accept_encoding(accept_encoding: Option<&str>) -> Option<String> {
    let tokens: Vec<&str> = accepted(accept_encoding).into_iter().map(Encoding::token).collect();
    (!tokens.is_empty()).then(|| tokens.join(", "))
}

/// How to re-encode a rewritten body: the upstream's coding if the client takes it (the client asked
/// for it in the first place), else our preferred one among the client's, else identity. An
/// uncompressed body stays so unless `compress_identity` (we asked for it uncompressed ourselves).
pub fn choose_output(upstream: Encoding, client_accepts: &[Encoding], compress_identity: bool) -> Encoding {
    if upstream == Encoding::Identity && !compress_identity {
        return Encoding::Identity;
    }
    if upstream != Encoding::Identity && client_accepts.contains(&upstream) {
        return upstream;
    }
    Encoding::PREFERENCE.into_iter().find(|e| client_accepts.contains(e)).unwrap_or(Encoding::Identity)
}

#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("malformed {0} body: {1}")]
    Corrupt(&'static str, String),
    #[error("{0} body ended before its compressed stream did")]
    Truncated(&'static str),
    #[error("{0} encoder failed: {1}")]
    Encode(&'static str, std::io::Error),
}

/// A streaming decoder. [`Decoder::decode`] produces at most [`DECODED_PIECE`] bytes per call.
pub struct Decoder {
    state: DecoderState,
    finished: bool,
}

enum DecoderState {
    Identity,
    /// Deflate waits for its first two bytes to tell zlib-wrapped from raw streams (holding the
    /// first one if it comes alone).
    DeflateUnknown(Option<u8>),
    Flate(Box<Decompress>, Vec<u8>, &'static str),
    Brotli(
        Box<brotli::BrotliState<brotli::enc::StandardAlloc, brotli::enc::StandardAlloc, brotli::enc::StandardAlloc>>,
        Box<[u8]>,
    ),
    Zstd(Box<zstd::stream::raw::Decoder<'static>>, Box<[u8]>),
}

impl Decoder {
    pub fn new(encoding: Encoding) -> Decoder {
        let state = match encoding {
            Encoding::Identity => DecoderState::Identity,
            Encoding::Gzip => {
                DecoderState::Flate(Box::new(Decompress::new_gzip(15)), Vec::with_capacity(DECODED_PIECE), "gzip")
            }
            Encoding::Deflate => DecoderState::DeflateUnknown(None),
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
        Decoder { state, finished: matches!(encoding, Encoding::Identity) }
    }

    /// Decodes from `input` into `out` (at most [`DECODED_PIECE`] new bytes); returns the input bytes
    /// consumed. Call again while input remains or while a call filled its piece.
    pub fn decode(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<usize, CodecError> {
        if let DecoderState::DeflateUnknown(held) = self.state {
            let mut first_two = held.into_iter().chain(input.iter().copied());
            let (Some(b0), Some(b1)) = (first_two.next(), first_two.next()) else {
                self.state = DecoderState::DeflateUnknown(held.or(input.first().copied()));
                return Ok(input.len());
            };
            // RFC 9110's "deflate" is zlib-wrapped, but some servers send raw deflate.
            let zlib = b0 & 0x0F == 8 && (u16::from(b0) << 8 | u16::from(b1)) % 31 == 0;
            self.state =
                DecoderState::Flate(Box::new(Decompress::new(zlib)), Vec::with_capacity(DECODED_PIECE), "deflate");
            if let Some(byte) = held {
                // The held byte is the start of a header: it decodes to nothing.
                self.decode(&[byte], out)?;
            }
        }
        match &mut self.state {
            DecoderState::Identity => {
                let n = input.len().min(DECODED_PIECE);
                out.extend_from_slice(&input[..n]);
                Ok(n)
            }
            DecoderState::DeflateUnknown(_) => unreachable!("resolved above"),
            DecoderState::Flate(inflate, piece, name) => {
                if self.finished {
                    return Ok(input.len()); // bytes after the end of the stream are ignored, as browsers do
                }
                piece.clear();
                let before = inflate.total_in();
                let result = inflate.decompress_vec(input, piece, FlushDecompress::None);
                out.extend_from_slice(piece);
                let consumed = (inflate.total_in() - before) as usize;
                match result {
                    Ok(Status::StreamEnd) => {
                        self.finished = true;
                        Ok(consumed)
                    }
                    Ok(_) => Ok(consumed),
                    Err(e) => Err(CodecError::Corrupt(name, e.to_string())),
                }
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

    /// Checks at the end of the body that the compressed stream was complete.
    pub fn finish(&self) -> Result<(), CodecError> {
        match &self.state {
            DecoderState::Identity => Ok(()),
            DecoderState::DeflateUnknown(_) => Err(CodecError::Truncated("deflate")),
            DecoderState::Flate(_, _, name) if !self.finished => Err(CodecError::Truncated(name)),
            DecoderState::Brotli(..) if !self.finished => Err(CodecError::Truncated("br")),
            DecoderState::Zstd(..) if !self.finished => Err(CodecError::Truncated("zstd")),
            _ => Ok(()),
        }
    }
}

/// A streaming encoder tuned for speed: a dev proxy re-encodes every rewritten page. Compressed
/// bytes go straight into the caller's buffer, and compressor states come from [`pool`]s.
pub struct Encoder {
    state: EncoderState,
    /// Input went in since the last flush (a flush without new input would add an empty block).
    unflushed: bool,
}

enum EncoderState {
    Identity,
    /// Our DEFLATE, framed for gzip or for HTTP's `deflate`.
    Flate {
        deflate: Pooled<FastDeflate>,
        framing: Framing,
        header_sent: bool,
    },
    Brotli(Box<brotli::CompressorWriter<Vec<u8>>>),
    Zstd(Pooled<zstd::stream::raw::Encoder<'static>>),
    /// A brotli stream after `finish` (its writer was consumed to end the stream); any further use is
    /// an error, not a panic.
    BrotliFinished,
}

/// Levels chosen for speed: the proxy compresses every rewritten page, and on a dev machine CPU costs
/// more than bytes. gzip and deflate use [`FastDeflate`], about zlib level 1's ratio in half of
/// zlib-rs's time (benches/RESULTS.md).
const ZSTD_LEVEL: i32 = 1;
const BROTLI_QUALITY: u32 = 3;

/// RFC 1952 member header: no name or time; XFL 4 = fastest compression; OS 255 = unknown.
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 0xff];
/// RFC 1950 header: deflate with a 32 KiB window, FLEVEL 0 (fastest), no dictionary; a multiple of 31.
const ZLIB_HEADER: [u8; 2] = [0x78, 0x01];

/// What wraps a DEFLATE stream: gzip (RFC 1952, CRC-32 by crc32fast's carry-less multiplication, a
/// tenth of the cost of zlib-rs's table-driven CRC, which was 3.5% of a proxied page) or zlib
/// (RFC 1950, Adler-32: RFC 9110's `deflate`).
enum Framing {
    Gzip(crc32fast::Hasher),
    Zlib(Adler32),
}

impl Framing {
    fn header(&self) -> &'static [u8] {
        match self {
            Framing::Gzip(_) => &GZIP_HEADER,
            Framing::Zlib(_) => &ZLIB_HEADER,
        }
    }

    fn update(&mut self, input: &[u8]) {
        match self {
            Framing::Gzip(crc) => crc.update(input),
            Framing::Zlib(adler) => adler.update(input),
        }
    }

    fn trailer(&self, total_in: u64, out: &mut Vec<u8>) {
        match self {
            Framing::Gzip(crc) => {
                out.extend_from_slice(&crc.clone().finalize().to_le_bytes());
                // ISIZE is the input length modulo 2^32.
                out.extend_from_slice(&(total_in as u32).to_le_bytes());
            }
            Framing::Zlib(adler) => out.extend_from_slice(&adler.finish().to_be_bytes()),
        }
    }
}

static DEFLATE_STATES: Pool<FastDeflate> = Pool::new();
static ZSTD_STATES: Pool<zstd::stream::raw::Encoder<'static>> = Pool::new();

impl Encoder {
    pub fn new(encoding: Encoding) -> Encoder {
        let state = match encoding {
            Encoding::Identity => EncoderState::Identity,
            Encoding::Gzip | Encoding::Deflate => EncoderState::Flate {
                deflate: DEFLATE_STATES.take(FastDeflate::new),
                framing: match encoding {
                    Encoding::Gzip => Framing::Gzip(crc32fast::Hasher::new()),
                    _ => Framing::Zlib(Adler32::new()),
                },
                header_sent: false,
            },
            Encoding::Brotli => {
                EncoderState::Brotli(Box::new(brotli::CompressorWriter::new(Vec::new(), 16 * 1024, BROTLI_QUALITY, 20)))
            }
            Encoding::Zstd => EncoderState::Zstd(
                // Fails only when zstd cannot allocate its context, where Rust would abort anyway.
                ZSTD_STATES.take(|| zstd::stream::raw::Encoder::new(ZSTD_LEVEL).expect("zstd encoder allocates")),
            ),
        };
        Encoder { state, unflushed: false }
    }

    fn name(&self) -> &'static str {
        match self.state {
            EncoderState::Identity => "identity",
            EncoderState::Flate { framing: Framing::Gzip(_), .. } => "gzip",
            EncoderState::Flate { framing: Framing::Zlib(_), .. } => "deflate",
            EncoderState::Brotli(_) | EncoderState::BrotliFinished => "br",
            EncoderState::Zstd(_) => "zstd",
        }
    }

    /// Compresses `input`, appending whatever compressed bytes are ready to `out`.
    pub fn encode(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(), CodecError> {
        if input.is_empty() {
            return Ok(());
        }
        self.unflushed = true;
        self.run(Step::Input(input), out)
    }

    /// Pushes out everything encoded so far (a sync flush), so that a stream that pauses reaches
    /// the client now rather than at the end.
    pub fn flush(&mut self, out: &mut Vec<u8>) -> Result<(), CodecError> {
        if !std::mem::take(&mut self.unflushed) {
            return Ok(());
        }
        self.run(Step::Flush, out)
    }

    /// Ends the compressed stream.
    pub fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), CodecError> {
        self.unflushed = false;
        self.run(Step::Finish, out)
    }

    fn run(&mut self, step: Step, out: &mut Vec<u8>) -> Result<(), CodecError> {
        let name = self.name();
        if let (Step::Finish, EncoderState::Brotli(_)) = (step, &self.state) {
            if let EncoderState::Brotli(w) = std::mem::replace(&mut self.state, EncoderState::BrotliFinished) {
                out.append(&mut w.into_inner());
            }
            return Ok(());
        }
        let result = match &mut self.state {
            EncoderState::Identity => {
                if let Step::Input(input) = step {
                    out.extend_from_slice(input);
                }
                Ok(())
            }
            EncoderState::Flate { deflate, framing, header_sent } => {
                if !std::mem::replace(header_sent, true) {
                    out.extend_from_slice(framing.header());
                }
                match step {
                    Step::Input(input) => {
                        framing.update(input);
                        deflate.compress(input, out);
                    }
                    Step::Flush => deflate.sync_flush(out),
                    Step::Finish => {
                        deflate.finish(out);
                        framing.trailer(deflate.total_in(), out);
                        deflate.stream_finished();
                    }
                }
                Ok(())
            }
            EncoderState::Brotli(w) => match step {
                Step::Input(input) => w.write_all(input).map(|_| out.append(w.get_mut())),
                Step::Flush | Step::Finish => w.flush().map(|_| out.append(w.get_mut())),
            },
            EncoderState::BrotliFinished => Err(std::io::Error::other("the stream was already finished")),
            EncoderState::Zstd(zstd) => {
                let result = zstd_into(zstd, step, out);
                if result.is_ok() && matches!(step, Step::Finish) {
                    zstd.stream_finished();
                }
                result
            }
        };
        result.map_err(|e| CodecError::Encode(name, e))
    }
}

#[derive(Clone, Copy)]
enum Step<'a> {
    Input(&'a [u8]),
    Flush,
    Finish,
}

/// Room to add to `out` before a zstd call: compressed HTML is about a third of its input, so one
/// call usually does; `Vec::reserve` doubles when it grows, so the loop stays linear.
fn reserve_for(input: &[u8], out: &mut Vec<u8>) {
    out.reserve(input.len() / 2 + 256);
}

/// Runs a zstd compressor straight into `out`'s spare capacity.
fn zstd_into(zstd: &mut zstd::stream::raw::Encoder<'static>, step: Step, out: &mut Vec<u8>) -> std::io::Result<()> {
    use zstd::stream::raw::{InBuffer, Operation, OutBuffer};
    match step {
        Step::Input(input) => {
            let mut src = InBuffer::around(input);
            while src.pos() < input.len() {
                reserve_for(&input[src.pos()..], out);
                let len = out.len();
                zstd.run(&mut src, &mut OutBuffer::around_pos(out, len))?;
            }
        }
        Step::Flush | Step::Finish => loop {
            reserve_for(&[], out);
            let len = out.len();
            let mut dst = OutBuffer::around_pos(out, len);
            let left = match step {
                Step::Flush => zstd.flush(&mut dst)?,
                _ => zstd.finish(&mut dst, true)?,
            };
            if left == 0 {
                break;
            }
        },
    }
    Ok(())
}

/// Compresses a whole buffer (tests and fixtures).
pub fn encode_all(encoding: Encoding, input: &[u8]) -> Vec<u8> {
    let mut encoder = Encoder::new(encoding);
    let mut out = Vec::new();
    encoder.encode(input, &mut out).expect("in-memory encoding");
    encoder.finish(&mut out).expect("in-memory encoding");
    out
}

/// Decodes a whole buffer (tests and fixtures).
pub fn decode_all(encoding: Encoding, mut input: &[u8]) -> Result<Vec<u8>, CodecError> {
    let mut decoder = Decoder::new(encoding);
    let mut out = Vec::new();
    loop {
        let before = out.len();
        let consumed = decoder.decode(input, &mut out)?;
        input = &input[consumed..];
        let produced = out.len() - before;
        if consumed == 0 && produced == 0 && !input.is_empty() {
            return Err(CodecError::Corrupt(encoding.token(), "decoder made no progress".into()));
        }
        if input.is_empty() && produced < DECODED_PIECE && consumed == 0 {
            break;
        }
    }
    decoder.finish()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Encoding; 5] =
        [Encoding::Identity, Encoding::Gzip, Encoding::Deflate, Encoding::Brotli, Encoding::Zstd];

    #[test]
    fn round_trips_in_bounded_pieces() {
        let body: Vec<u8> = (0..300_000u32).flat_map(|i| format!("<a href='/p/{i}'>x</a>").into_bytes()).collect();
        for encoding in ALL {
            let compressed = encode_all(encoding, &body);
            let mut decoder = Decoder::new(encoding);
            let mut decoded = Vec::new();
            for chunk in compressed.chunks(1000) {
                let mut chunk = chunk;
                loop {
                    let mut piece = Vec::new();
                    let consumed = decoder.decode(chunk, &mut piece).unwrap();
                    assert!(piece.len() <= DECODED_PIECE, "{encoding:?} produced {}", piece.len());
                    chunk = &chunk[consumed..];
                    let full = piece.len() == DECODED_PIECE;
                    decoded.extend_from_slice(&piece);
                    if chunk.is_empty() && !full {
                        break;
                    }
                }
            }
            decoder.finish().unwrap();
            assert_eq!(decoded, body, "{encoding:?}");
        }
    }

    #[test]
    fn gzip_trailer_carries_the_crc_and_length_of_the_input() {
        let body = b"<p>gzip framing, checked by hand</p>".repeat(5000);
        let gz = encode_all(Encoding::Gzip, &body);
        assert_eq!(gz[..10], GZIP_HEADER);
        let trailer = &gz[gz.len() - 8..];
        assert_eq!(trailer[..4], crc32fast::hash(&body).to_le_bytes());
        assert_eq!(trailer[4..], (body.len() as u32).to_le_bytes());
        let mut independent = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut independent).unwrap();
        assert_eq!(independent, body);
        // Our decoder checks the trailer: a wrong CRC is an error, not a silently accepted body.
        let mut bad = gz.clone();
        let at = bad.len() - 8;
        bad[at] ^= 1;
        assert!(decode_all(Encoding::Gzip, &bad).is_err());
    }

    #[test]
    fn a_sync_flush_makes_everything_so_far_decodable_and_an_idle_one_adds_nothing() {
        for encoding in [Encoding::Gzip, Encoding::Deflate, Encoding::Brotli, Encoding::Zstd] {
            let first = b"<html><body>first part, ".repeat(300);
            let mut encoder = Encoder::new(encoding);
            let mut out = Vec::new();
            encoder.encode(&first, &mut out).unwrap();
            encoder.flush(&mut out).unwrap();
            let mut decoder = Decoder::new(encoding);
            let mut decoded = Vec::new();
            let mut input = &out[..];
            while !input.is_empty() {
                let consumed = decoder.decode(input, &mut decoded).unwrap();
                input = &input[consumed..];
            }
            assert_eq!(decoded, first, "{encoding:?}: flushed output holds all input so far");
            let flushed = out.len();
            encoder.flush(&mut out).unwrap();
            assert_eq!(out.len(), flushed, "{encoding:?}: a flush with no new input wrote bytes");
            encoder.encode(b"second part</body></html>", &mut out).unwrap();
            encoder.finish(&mut out).unwrap();
            let mut whole = first.clone();
            whole.extend_from_slice(b"second part</body></html>");
            assert_eq!(decode_all(encoding, &out).unwrap(), whole, "{encoding:?}");
        }
    }

    #[test]
    fn encoders_abandoned_mid_stream_leave_clean_states_behind() {
        for encoding in [Encoding::Gzip, Encoding::Deflate, Encoding::Zstd] {
            for round in 0..2 * pool::IDLE_STATES {
                // An aborted response: its encoder is dropped with a half-written stream.
                let mut abandoned = Encoder::new(encoding);
                abandoned.encode(&b"never finished ".repeat(1000 + round), &mut Vec::new()).unwrap();
                drop(abandoned);
                let body = format!("<p>response {round}</p>").repeat(2000).into_bytes();
                assert_eq!(decode_all(encoding, &encode_all(encoding, &body)).unwrap(), body, "{encoding:?}");
            }
        }
    }

    #[test]
    fn pools_take_back_only_finished_states_and_only_a_few() {
        use std::sync::atomic::{AtomicU32, Ordering};
        struct Counted(u32);
        impl pool::Reusable for Counted {
            fn reset(&mut self) -> bool {
                self.0 != 0 // state 0 stands for one that cannot be reset
            }
        }
        static POOL: Pool<Counted> = Pool::new();
        static MADE: AtomicU32 = AtomicU32::new(0);
        let make = || Counted(MADE.fetch_add(1, Ordering::Relaxed) + 1);
        let finished = |mut state: Pooled<Counted>| state.stream_finished();
        finished(POOL.take(make));
        finished(POOL.take(make));
        assert_eq!(MADE.load(Ordering::Relaxed), 1, "the second response reuses the first one's state");
        drop(POOL.take(make));
        assert_eq!(POOL.idle(), 0, "a stream cut off mid-way does not give its state back");
        let busy: Vec<_> = (0..pool::IDLE_STATES + 3).map(|_| POOL.take(make)).collect();
        busy.into_iter().for_each(finished);
        assert_eq!(POOL.idle(), pool::IDLE_STATES, "only a few states wait");
        let busy: Vec<_> = (0..pool::IDLE_STATES).map(|_| POOL.take(make)).collect();
        finished(POOL.take(|| Counted(0)));
        assert_eq!(POOL.idle(), 0, "a state that cannot be reset is not kept");
        busy.into_iter().for_each(finished);
        assert_eq!(POOL.idle(), pool::IDLE_STATES);
    }

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

    #[test]
    fn negotiation_follows_accept_encoding() {
        assert_eq!(accepted(Some("gzip, deflate, br")), vec![Encoding::Gzip, Encoding::Deflate, Encoding::Brotli]);
        assert_eq!(accepted(Some("br;q=0, gzip;q=0.5, compress")), vec![Encoding::Gzip]);
        assert_eq!(upstream_accept_encoding(Some("sdch, identity")), None);
        let (gzip, br) = (Encoding::Gzip, Encoding::Brotli);
        assert_eq!(choose_output(Encoding::Gzip, &[br, gzip], false), Encoding::Gzip);
        assert_eq!(choose_output(Encoding::Zstd, &[br, gzip], false), Encoding::Gzip);
        assert_eq!(choose_output(Encoding::Zstd, &[br], false), Encoding::Brotli);
        assert_eq!(choose_output(Encoding::Brotli, &[], false), Encoding::Identity);
        // Uncompressed from the upstream: compressed here only if the proxy asked for it so.
        assert_eq!(choose_output(Encoding::Identity, &[br, gzip], false), Encoding::Identity);
        assert_eq!(choose_output(Encoding::Identity, &[br, gzip], true), Encoding::Gzip);
        assert_eq!(choose_output(Encoding::Identity, &[Encoding::Zstd, gzip], true), Encoding::Gzip);
        assert_eq!(choose_output(Encoding::Identity, &[br, Encoding::Zstd], true), Encoding::Zstd);
        assert_eq!(choose_output(Encoding::Identity, &[], true), Encoding::Identity);
        assert_eq!(Encoding::from_content_encoding(Some("gzip, br")), None);
    }
}
