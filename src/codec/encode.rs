//! Streaming encoders tuned for speed, with the framing of our DEFLATE for gzip (CRC-32) and HTTP's
//! `deflate` (zlib, Adler-32), and the static pools their compressor states come back to between
//! responses. Separate from the decoders: the encoders carry the speed trade-offs and the pooled state.

use std::io::Write;

use super::deflate::FastDeflate;
use super::inflate::framing::Check;
use super::pool::{Pool, Pooled};
use super::reuse::Hint;
use super::{CodecError, Encoding};

/// A streaming encoder tuned for speed: a dev proxy re-encodes every rewritten page. Compressed
/// bytes go straight into the caller's buffer, and compressor states come from `pool`s.
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
/// Brotli quality when the upstream itself sent br (CDNs do, at quality 11 for static files): the
/// client then gets about the upstream's weight (within 1.15x of it; 5 is not), at several times
/// quality 3's cost per page (benches/RESULTS.md, "Module notes").
const BROTLI_QUALITY_FOR_BR_UPSTREAM: u32 = 6;
/// lgwin 22 (4 MiB window, brotli's default) as upstreams use; quality 3 keeps its 1 MiB.
const BROTLI_WINDOW_FOR_BR_UPSTREAM: u32 = 22;

/// RFC 1952 member header: no name or time; XFL 4 = fastest compression; OS 255 = unknown.
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 0xff];
/// RFC 1950 header: deflate with a 32 KiB window, FLEVEL 0 (fastest), no dictionary; a multiple of 31.
const ZLIB_HEADER: [u8; 2] = [0x78, 0x01];

/// What wraps a DEFLATE stream: gzip (RFC 1952, CRC-32 by crc32fast's carry-less multiplication,
/// much cheaper than zlib-rs's table-driven CRC: benches/RESULTS.md, "Encoders") or zlib (RFC 1950,
/// Adler-32 by zlib-rs's vector code: RFC 9110's `deflate`); the trailer's check is the one our decoder
/// verifies.
struct Framing {
    header: &'static [u8],
    check: Check,
}

static DEFLATE_STATES: Pool<FastDeflate> = Pool::new();
static ZSTD_STATES: Pool<zstd::stream::raw::Encoder<'static>> = Pool::new();

impl Encoder {
    /// Sets up, once per process, the compressor state most responses use (gzip's), so that the first
    /// response costs what later ones do. Blocks for a fraction of a millisecond: call it off the async
    /// workers.
    pub fn prepare_process() {
        DEFLATE_STATES.prepare(FastDeflate::new);
    }

    /// An encoder for one body in `encoding`; its compressor state comes from a pool when one is idle.
    pub fn new(encoding: Encoding) -> Encoder {
        Encoder::for_upstream(encoding, Encoding::Identity)
    }

    /// An encoder for a body the upstream sent in `upstream`: br re-encoded as br gets a quality
    /// whose size stays near the upstream's (see [`BROTLI_QUALITY_FOR_BR_UPSTREAM`]).
    pub fn for_upstream(encoding: Encoding, upstream: Encoding) -> Encoder {
        let state = match encoding {
            Encoding::Identity => EncoderState::Identity,
            Encoding::Gzip | Encoding::Deflate => EncoderState::Flate {
                deflate: DEFLATE_STATES.take(FastDeflate::new),
                framing: match encoding {
                    Encoding::Gzip => Framing { header: &GZIP_HEADER, check: Check::gzip() },
                    _ => Framing { header: &ZLIB_HEADER, check: Check::zlib() },
                },
                header_sent: false,
            },
            Encoding::Brotli => {
                let (quality, lgwin) = match upstream {
                    Encoding::Brotli => (BROTLI_QUALITY_FOR_BR_UPSTREAM, BROTLI_WINDOW_FOR_BR_UPSTREAM),
                    _ => (BROTLI_QUALITY, 20),
                };
                EncoderState::Brotli(Box::new(brotli::CompressorWriter::new(Vec::new(), 16 * 1024, quality, lgwin)))
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
            EncoderState::Flate { framing: Framing { check: Check::Crc32 { .. }, .. }, .. } => "gzip",
            EncoderState::Flate { .. } => "deflate",
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

    /// Whether [`Encoder::encode_guided`] uses its hints: our DEFLATE does; brotli and zstd ignore them.
    pub fn takes_hints(&self) -> bool {
        matches!(self.state, EncoderState::Flate { .. })
    }

    /// Like [`Encoder::encode`], following `hints` (the upstream's parse moved onto `input`:
    /// `codec::Reuse`) where they hold.
    pub fn encode_guided(&mut self, input: &[u8], hints: &[Hint], out: &mut Vec<u8>) -> Result<(), CodecError> {
        let EncoderState::Flate { deflate, framing, header_sent } = &mut self.state else {
            return self.encode(input, out);
        };
        if input.is_empty() {
            return Ok(());
        }
        self.unflushed = true;
        if !std::mem::replace(header_sent, true) {
            out.extend_from_slice(framing.header);
        }
        framing.check.update(input);
        deflate.compress_guided(input, hints, out);
        Ok(())
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
                    out.extend_from_slice(framing.header);
                }
                match step {
                    Step::Input(input) => {
                        framing.check.update(input);
                        deflate.compress(input, out);
                    }
                    Step::Flush => deflate.sync_flush(out),
                    Step::Finish => {
                        deflate.finish(out);
                        out.extend_from_slice(&framing.check.trailer());
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{decode_all, pool, Decoder};

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

    /// The zlib framing's trailer is the Adler-32 of the input, big-endian: "Wikipedia" sums to 0x11E60398
    /// (RFC 1950's algorithm, as Wikipedia's article works it out), and 1 MiB of 0xFF (the sums' fastest growth)
    /// to what the definition gives.
    #[test]
    fn the_zlib_trailer_is_the_inputs_adler32() {
        let trailer = |body: &[u8]| {
            let framed = encode_all(Encoding::Deflate, body);
            u32::from_be_bytes(framed[framed.len() - 4..].try_into().unwrap())
        };
        assert_eq!(trailer(b"Wikipedia"), 0x11E6_0398);
        let ones = vec![0xFF; 1 << 20];
        let (mut a, mut b) = (1u64, 0u64);
        for &byte in &ones {
            a = (a + u64::from(byte)) % 65521;
            b = (b + a) % 65521;
        }
        assert_eq!(trailer(&ones), (b << 16 | a) as u32);
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
}
