//! decode → rewrite → encode, one chunk at a time, and sniffing the start of a body through it.

use std::time::{Duration, Instant};

use super::plan::looks_like_html;
use super::upstream::UpstreamBody;
use super::BodyError;
use crate::codec::{CodecError, Decoder, Encoder, Encoding, Hint, Reuse, DECODED_PIECE};
use crate::error::ReplaceError;
use crate::rewrite::Rewriter;

/// Why a body could not go through the pipeline.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// Decoding the upstream's body, or encoding ours, failed.
    #[error(transparent)]
    Codec(#[from] CodecError),
    /// A replacement function threw.
    #[error(transparent)]
    Replace(#[from] ReplaceError),
}

/// A decoder that neither consumes nor produces would loop forever: treat it as a corrupt body.
fn stalled_decoder() -> PipelineError {
    PipelineError::Codec(CodecError::Corrupt("compressed", "decoder made no progress".into()))
}

/// decode → rewrite → encode, one chunk at a time.
pub struct Pipeline {
    /// An uncompressed body skips the decoder: its chunks are rewritten where they lie.
    identity: bool,
    decoder: Decoder,
    rewriter: Rewriter,
    encoder: Encoder,
    decoded: Vec<u8>,
    rewritten: Vec<u8>,
    /// The upstream's repeats moved onto the rewritten bytes, when gzip comes in and our DEFLATE goes
    /// out: the encoder follows the upstream's parse instead of searching (`codec::Reuse`).
    reuse: Option<Box<Reuse>>,
    hints: Vec<Hint>,
    /// The decoder's last piece came out full: it may hold more (see [`Pipeline::output_pending`]).
    decoder_full: bool,
    /// Time spent in the rules and in the encoder, for the exchange record: two clock reads per
    /// chunk, no allocation.
    rewrite_time: Duration,
    encode_time: Duration,
    /// The first bytes before and after the rules, kept only while the inspector wants them.
    preview: Option<Box<super::PreviewBuffer>>,
}

impl Pipeline {
    /// Decodes from `decode`, rewrites with `rewriter`, encodes to `encode`.
    pub fn new(decode: Encoding, encode: Encoding, rewriter: Rewriter) -> Pipeline {
        let mut decoder = Decoder::new(decode);
        let encoder = Encoder::for_upstream(encode, decode);
        let reuse = (matches!(decode, Encoding::Gzip | Encoding::Deflate) && encoder.takes_hints()).then(|| {
            decoder.keep_repeats(true);
            Box::new(Reuse::new())
        });
        Pipeline {
            identity: decode == Encoding::Identity,
            decoder,
            rewriter,
            encoder,
            decoded: crate::buffers::take(),
            rewritten: crate::buffers::take(),
            reuse,
            hints: Vec::new(),
            decoder_full: false,
            rewrite_time: Duration::ZERO,
            encode_time: Duration::ZERO,
            preview: None,
        }
    }

    /// Keeps the first [`PREVIEW_BYTES`] before and after the rules (for the inspector).
    pub fn keep_preview(mut self) -> Pipeline {
        self.preview = Some(Box::default());
        self
    }

    /// Leaves the upstream's repeats unused: the encoder searches on its own (benches compare the two).
    pub fn without_reuse(mut self) -> Pipeline {
        self.reuse = None;
        self.decoder.keep_repeats(false);
        self
    }

    /// What the rules and the encoder cost so far.
    pub fn times(&self) -> (Duration, Duration) {
        (self.rewrite_time, self.encode_time)
    }

    /// The kept preview, if any (see [`Pipeline::keep_preview`]).
    pub fn take_preview(&mut self) -> Option<super::Preview> {
        self.preview.take().map(|preview| preview.into_preview())
    }

    /// Rewrites `decoded` into `self.rewritten` (cleared first), then encodes it into `out`, timing both.
    fn rewrite_then_encode(&mut self, decoded: &[u8], last: bool, out: &mut Vec<u8>) -> Result<(), PipelineError> {
        self.rewritten.clear();
        // About what the rewriter writes for `decoded`: no chain of reallocations copying it again.
        self.rewritten.reserve(decoded.len() + decoded.len() / 8);
        let started = Instant::now();
        if last {
            self.rewriter.finish(&mut self.rewritten)?;
        } else {
            self.rewriter.push(decoded, &mut self.rewritten)?;
        }
        let rewritten = Instant::now();
        self.rewrite_time += rewritten - started;
        if let Some(preview) = &mut self.preview {
            preview.keep(decoded, &self.rewritten);
        }
        let result = match self.reuse.as_deref_mut().filter(|reuse| reuse.is_on()) {
            Some(reuse) => {
                reuse.guide(decoded, &self.rewritten, &mut self.hints);
                self.encoder.encode_guided(&self.rewritten, &self.hints, out)
            }
            None => self.encoder.encode(&self.rewritten, out),
        };
        self.encode_time += rewritten.elapsed();
        Ok(result?)
    }

    /// Decodes `raw` into `decoded` until `decoded` holds `limit` bytes or more (sniffing reads ahead
    /// with this before deciding to rewrite); returns how much of `raw` went in. The decoder may hold
    /// more of it after that (see [`Pipeline::output_pending`]).
    pub fn decode_some(&mut self, raw: &[u8], decoded: &mut Vec<u8>, limit: usize) -> Result<usize, PipelineError> {
        let mut rest = raw;
        loop {
            let before = decoded.len();
            let consumed = self.decoder.decode(rest, decoded)?;
            if let Some(reuse) = &mut self.reuse {
                reuse.add_repeats(self.decoder.take_repeats());
            }
            rest = &rest[consumed..];
            let produced = decoded.len() - before;
            if consumed == 0 && produced == 0 && !rest.is_empty() {
                return Err(stalled_decoder());
            }
            // An uncompressed body's pieces are its own bytes: nothing is held behind a full one.
            self.decoder_full = !self.identity && produced == DECODED_PIECE;
            if (rest.is_empty() && !self.decoder_full) || decoded.len() >= limit {
                return Ok(raw.len() - rest.len());
            }
        }
    }

    /// Whether the decoder may still hold output of bytes it took: its last piece came out full. A brotli
    /// or zstd decoder takes a block's bytes at once and gives out up to megabytes from them.
    pub fn output_pending(&self) -> bool {
        self.decoder_full
    }

    /// See [`Rewriter::leave_out_meta_policy`]; before the first byte.
    pub fn leave_out_meta_policy(&mut self) {
        self.rewriter.leave_out_meta_policy();
    }

    /// Rewrites and encodes already-decoded bytes (see [`Pipeline::push_in_pieces`]).
    pub fn push_decoded(&mut self, decoded: &[u8], out: &mut Vec<u8>) -> Result<(), PipelineError> {
        self.push_in_pieces(decoded, out, usize::MAX).map(drop)
    }

    /// Runs compressed bytes through the whole pipeline, in bounded pieces.
    pub fn push(&mut self, raw: &[u8], out: &mut Vec<u8>) -> Result<(), PipelineError> {
        self.push_some(raw, out, usize::MAX).map(drop)
    }

    /// Runs compressed bytes through the whole pipeline, in bounded pieces, until `out` holds `limit`
    /// bytes or more; returns how much of `raw` went in, the rest being the caller's to push again, after
    /// what [`Pipeline::output_pending`] says the decoder holds. A small compressed chunk may decode to a
    /// GiB: taken this way, it costs no more memory than any other.
    pub fn push_some(&mut self, raw: &[u8], out: &mut Vec<u8>, limit: usize) -> Result<usize, PipelineError> {
        if self.identity {
            return self.push_in_pieces(raw, out, limit);
        }
        let (whole, mut raw) = (raw.len(), raw);
        let mut decoded = std::mem::take(&mut self.decoded);
        let result = loop {
            decoded.clear();
            // One piece at a time (a limit of one byte stops at the first piece that has any).
            let consumed = match self.decode_some(raw, &mut decoded, 1) {
                Ok(n) => n,
                Err(e) => break Err(e),
            };
            raw = &raw[consumed..];
            if let Err(e) = self.push_decoded(&decoded, out) {
                break Err(e);
            }
            if (raw.is_empty() && !self.decoder_full) || out.len() >= limit {
                break Ok(whole - raw.len());
            }
        };
        self.decoded = decoded;
        result
    }

    /// Rewrites and encodes decoded bytes (an uncompressed body's own) in pieces of a decoded piece's size,
    /// until `out` holds `limit` bytes or more; returns how many it took. A loopback upstream's page comes in
    /// chunks of 64 KiB and more (the first, read while sniffing, often the whole page): whole, each stage's
    /// output outgrew its spare buffer and was reallocated per chunk.
    fn push_in_pieces(&mut self, decoded: &[u8], out: &mut Vec<u8>, limit: usize) -> Result<usize, PipelineError> {
        let mut taken = 0;
        for piece in decoded.chunks(DECODED_PIECE) {
            self.rewrite_then_encode(piece, false, out)?;
            taken += piece.len();
            if out.len() >= limit {
                break;
            }
        }
        Ok(taken)
    }

    /// Sends what the encoder holds, for a stream that pauses.
    pub fn flush(&mut self, out: &mut Vec<u8>) -> Result<(), PipelineError> {
        let started = Instant::now();
        let result = self.encoder.flush(out);
        self.encode_time += started.elapsed();
        Ok(result?)
    }

    /// Ends the body: checks the compressed stream was complete, releases what the rewriter held back and
    /// closes the encoding.
    pub fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), PipelineError> {
        self.push(&[], out)?;
        self.decoder.finish()?;
        self.rewrite_then_encode(&[], true, out)?;
        let started = Instant::now();
        let result = self.encoder.finish(out);
        self.encode_time += started.elapsed();
        Ok(result?)
    }

    /// Match candidates left unreplaced because they grew past `max_match_bytes` (counted in the stats).
    pub fn abandoned_matches(&self) -> u64 {
        self.rewriter.abandoned_matches()
    }

    /// Whether a step may call a JS function (and so wait on Node's thread).
    pub fn calls_functions(&self) -> bool {
        self.rewriter.calls_functions()
    }

    /// For each rule, in order: whether it replaced something so far.
    pub fn matched_rules(&self) -> Vec<bool> {
        self.rewriter.matched_rules()
    }

    /// Each rule's label with the matches it replaced so far.
    pub fn match_counts(&self) -> impl Iterator<Item = (&str, u64)> + '_ {
        self.rewriter.match_counts()
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        crate::buffers::give(std::mem::take(&mut self.decoded));
        crate::buffers::give(std::mem::take(&mut self.rewritten));
    }
}

pub(crate) enum Sniffed {
    /// Decoded bytes read so far, to be rewritten first.
    Html(Vec<u8>),
    /// Raw bytes read so far, to be sent first, untouched.
    NotHtml(Vec<u8>),
}

pub(crate) enum SniffError {
    Upstream(BodyError),
    Decode(PipelineError),
}

/// Reads just enough of the body to tell whether it starts like HTML.
pub(crate) async fn sniff_html(
    upstream: &mut UpstreamBody,
    pipeline: &mut Pipeline,
    limit: usize,
) -> Result<Sniffed, SniffError> {
    let identity = pipeline.identity;
    let mut raw = Vec::new();
    // An identity body is its own decoding: `raw` stands for it, no second copy (a page's ~100 KB,
    // grown piece by piece).
    let mut decoded = Vec::new();
    loop {
        let data = upstream.next_data().await.transpose().map_err(SniffError::Upstream)?;
        if let Some(data) = &data {
            let mut taken = data.len();
            if !identity {
                // Nothing has been sent yet, so a body we cannot decode becomes a 502 that says why.
                taken = pipeline.decode_some(data, &mut decoded, limit + 1).map_err(SniffError::Decode)?;
                upstream.put_back(data.slice(taken..));
            }
            raw.extend_from_slice(&data[..taken]);
        }
        let seen = if identity { &raw } else { &decoded };
        let html = match looks_like_html(seen) {
            Some(html) => html,
            // The body ended, or too much of it looks like nothing yet.
            None if data.is_none() || seen.len() > limit => false,
            None => continue,
        };
        return Ok(if !html {
            Sniffed::NotHtml(raw)
        } else if identity {
            Sniffed::Html(raw)
        } else {
            Sniffed::Html(decoded)
        });
    }
}

/// How far a page is read ahead for the place of its snippet, when a Content-Security-Policy would be
/// amended for it (see [`read_to_snippet`]).
pub(crate) const SNIPPET_LOOKAHEAD: usize = 256 * 1024;

/// How long: a page whose `<body>` never comes still gets its headers.
pub(crate) const SNIPPET_WAIT: Duration = Duration::from_secs(10);

/// Reads on, decoding into `decoded` (the page's start, already decoded), until `snippet` (the snippet
/// rule) has a match in it, `limit` bytes are held, or the body ends; whether it matched. A page's
/// policy is amended when, and only when, its snippet is injected: this tells which, before the headers
/// and the `<meta>` tags before the snippet go out.
pub(crate) async fn read_to_snippet(
    upstream: &mut UpstreamBody,
    pipeline: &mut Pipeline,
    decoded: &mut Vec<u8>,
    snippet: &[crate::rewrite::Rule],
    local_host: &str,
    limit: usize,
) -> Result<bool, SniffError> {
    let mut finder = Rewriter::new(snippet, local_host, limit);
    let mut scratch = Vec::new();
    let mut found = |finder: &mut Rewriter, piece: &[u8]| {
        scratch.clear();
        // A snippet rule's replacement is text (a function-placed snippet is no snippet here).
        let _ = finder.push(piece, &mut scratch);
        finder.match_counts().any(|(_, matches)| matches > 0)
    };
    if found(&mut finder, decoded) {
        return Ok(true);
    }
    let read_on = async {
        while decoded.len() < limit {
            let Some(data) = upstream.next_data().await.transpose().map_err(SniffError::Upstream)? else {
                return Ok(false);
            };
            let start = decoded.len();
            let taken = pipeline.decode_some(&data, decoded, limit).map_err(SniffError::Decode)?;
            upstream.put_back(data.slice(taken..));
            if found(&mut finder, &decoded[start..]) {
                return Ok(true);
            }
        }
        Ok(false)
    };
    // A read cut by the deadline loses nothing: a chunk is only taken when it is ready.
    tokio::time::timeout(SNIPPET_WAIT, read_on).await.unwrap_or(Ok(false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rewrite::{Rule, RuleReplacement};

    fn pipeline() -> Pipeline {
        let rule = Rule::regex("old", "g", RuleReplacement::Text("new".into())).expect("the rule compiles");
        Pipeline::new(Encoding::Identity, Encoding::Identity, Rewriter::new(&[rule], "h", 1024))
    }

    #[test]
    fn an_uncompressed_chunk_goes_through_in_pieces_its_buffers_hold() {
        // 128 KiB in one chunk, as a loopback upstream's page arrives.
        let page = b"<p>old text</p>\n".repeat(8 * 1024);
        let expected = String::from_utf8(page.clone()).expect("ASCII").replace("old", "new").into_bytes();
        let mut whole = pipeline();
        let capacity = whole.rewritten.capacity();
        let mut out = Vec::new();
        assert_eq!(whole.push_some(&page, &mut out, usize::MAX).expect("push"), page.len());
        assert_eq!(whole.rewritten.capacity(), capacity, "the rewritten piece outgrew its buffer");
        whole.finish(&mut out).expect("finish");
        assert!(out == expected, "the page as rewritten whole");
        // Bounded: one piece at a time, the rest left for the next push, nothing lost.
        let (mut bounded, mut out, mut rest) = (pipeline(), Vec::new(), &page[..]);
        while !rest.is_empty() {
            let taken = bounded.push_some(rest, &mut out, 1).expect("push");
            assert_eq!(taken, rest.len().min(DECODED_PIECE));
            rest = &rest[taken..];
        }
        bounded.finish(&mut out).expect("finish");
        assert!(out == expected, "the page as rewritten in bounded pushes");
    }
}
