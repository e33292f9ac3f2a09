//! Phase "request body": the proxy's own origins, which the link rewrite wrote into pages, go back to
//! the target's origin in what the browser sends (`rewriteRequestBodies`), so that saving a page (a
//! CMS editor posting its content) does not store the proxy's URLs in the site. Form, JSON and text
//! bodies, and the form fields of multipart ones, compressed or not; anything else goes as it came.
//! Every written form of the origin is undone, the scheme restored (`crate::rewrite::OriginSwap`).
//!
//! Nothing is lost on the way: a body with nothing to rewrite reaches the target byte for byte, in
//! its own framing. A body of at most [`WHOLE_BODY_LIMIT`] with a `Content-Length`, and a compressed or
//! multipart one of at most that sent chunked, is read whole and, when rewritten, sent with its new,
//! exact length: some dev servers refuse chunked request bodies (Django's runserver, PHP's built-in
//! server). Uncompressed text sent chunked or longer is rewritten as it streams and sent chunked (a
//! chunked body may be a stream the client feeds while it reads the answer). A longer compressed body,
//! one that decodes to more than [`DECODED_LIMIT`], and a longer multipart body (an upload) go as they
//! came. File parts (any part with a file name) are never touched. A body the proxy holds (reading it
//! whole) that stalls for [`BODY_IDLE_TIMEOUT`] is given up on, as a head is.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::header::{self, HeaderMap, HeaderValue};
use http_body::{Body, Frame, SizeHint};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use memchr::memmem;

use super::{BodyError, Pipeline};
use crate::codec::Encoding;
use crate::config::target::Target;
use crate::rewrite::{rewrite_bytes, Forms, OriginSwap, Rewriter, Rule, DEFAULT_MAX_MATCH_BYTES};

/// The body that goes upstream.
pub(crate) type OutgoingBody = http_body_util::combinators::BoxBody<Bytes, BodyError>;

/// Request bodies up to this size, as sent, are read whole and sent with their new length.
pub(crate) const WHOLE_BODY_LIMIT: usize = 1 << 20;

/// A body read whole is rewritten only when it decodes to at most this; past it, it goes as it came
/// (a few hundred bytes of brotli can claim gigabytes).
pub(crate) const DECODED_LIMIT: usize = 8 << 20;

/// How long a body the proxy reads may send nothing: the same as for a request's head.
pub(crate) const BODY_IDLE_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a request body could not go on.
#[derive(Debug)]
pub(crate) enum RequestBodyError {
    /// It could not be read or decoded (a 400).
    Unreadable(String),
    /// The client sent nothing for [`BODY_IDLE_TIMEOUT`] (a 408).
    Stalled,
}

/// A body that may carry the proxy's origins.
enum Kind {
    /// Form, JSON or text: rewritten whole.
    Text,
    /// `multipart/form-data` with this boundary: its form fields are rewritten.
    Multipart(String),
}

fn kind(headers: &HeaderMap) -> Option<Kind> {
    let value = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
    let essence = value.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    if essence == "multipart/form-data" {
        let boundary = value.split(';').skip(1).find_map(|param| {
            let (name, value) = param.split_once('=')?;
            name.trim().eq_ignore_ascii_case("boundary").then(|| value.trim().trim_matches('"').to_string())
        })?;
        return (!boundary.is_empty()).then_some(Kind::Multipart(boundary));
    }
    is_text(&essence).then_some(Kind::Text)
}

/// Form, JSON (`+json` too) and `text/*` content types.
fn is_text(essence: &str) -> bool {
    essence == "application/x-www-form-urlencoded"
        || essence == "application/json"
        || essence.ends_with("+json")
        || essence.starts_with("text/")
}

/// The rule that turns the proxy's origin, as the request reached it (`local_host`), back into
/// `target`'s in every form the response side writes it (see `crate::rewrite::OriginSwap`). A literal
/// matcher: a new `Host` compiles nothing.
pub(crate) fn reverse_rules(local_host: &str, target: &Target) -> Vec<Rule> {
    vec![Rule::origins("rewriteRequestBodies", OriginSwap::new([local_host], &target.origin(), Forms::ALL))]
}

/// A request URL's query with the proxy's origin turned back into the target's by `rules` (those of
/// [`reverse_rules`]), as in bodies; `None` when it names none.
pub(crate) fn reverse_query(query: &str, rules: &[Rule]) -> Option<String> {
    apply(query.as_bytes(), rules).ok().flatten().and_then(|swapped| String::from_utf8(swapped).ok())
}

/// The request's body as it goes upstream, with the proxy's origins turned back into the target's by
/// `rules` where its type allows; `headers` follow (`Content-Length`, digests). `warn` gets the one
/// line said about a body left as it came though its type is rewritten.
pub(crate) async fn reverse(
    headers: &mut HeaderMap,
    body: Incoming,
    rules: &[Rule],
    warn: impl FnOnce(String),
) -> Result<OutgoingBody, RequestBodyError> {
    if body.is_end_stream() {
        return Ok(as_it_came(body));
    }
    let Some((kind, encoding)) = what_to_rewrite(headers) else { return Ok(as_it_came(body)) };
    let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    let long = declared.is_some_and(|length| length > WHOLE_BODY_LIMIT as u64);
    let mut body = Stalling::new(body);
    // Uncompressed text, chunked or long: rewritten as it streams, byte for byte where nothing matches
    // (a chunked body may be a stream the client feeds as the answer comes).
    if matches!(kind, Kind::Text) && encoding == Encoding::Identity && (declared.is_none() || long) {
        changed(headers);
        headers.remove(header::CONTENT_LENGTH);
        let pipeline = Pipeline::new(encoding, encoding, Rewriter::new(rules, "", DEFAULT_MAX_MATCH_BYTES));
        let rest = Some(body.streaming());
        return Ok(Streamed {
            prefix: None,
            rest,
            pipeline: Some(pipeline),
            exact: None,
            trailers: None,
            ended: false,
        }
        .boxed());
    }
    let read = if long {
        Read { bytes: Bytes::new(), trailers: None, ended: false }
    } else {
        read_up_to(&mut body, WHOLE_BODY_LIMIT).await?
    };
    if read.ended {
        return whole(headers, read, encoding, &kind, rules, warn);
    }
    if matches!(kind, Kind::Text) {
        let limit = WHOLE_BODY_LIMIT >> 20;
        warn(format!("a {} request body over {limit} MiB was sent as it came, not rewritten", encoding.token()));
    }
    // An upload goes as it came: its form fields are small, its files never rewritten.
    let (prefix, rest) = (Some(read.bytes), Some(body.streaming()));
    Ok(Streamed { prefix, rest, pipeline: None, exact: declared, trailers: read.trailers, ended: false }.boxed())
}

fn as_it_came(body: Incoming) -> OutgoingBody {
    body.map_err(BodyError::from).boxed()
}

/// The body's kind and coding, when it is one to rewrite (a coding the codecs read).
fn what_to_rewrite(headers: &HeaderMap) -> Option<(Kind, Encoding)> {
    let kind = kind(headers)?;
    let coding = headers.get(header::CONTENT_ENCODING).map(|v| v.to_str().unwrap_or("?"));
    Some((kind, Encoding::from_content_encoding(coding)?))
}

/// Headers that describe the body's bytes no longer hold once it is rewritten. (Its trailers are left
/// out then; `Trailer` may stay: it announces, it does not promise.)
fn changed(headers: &mut HeaderMap) {
    headers.remove("content-md5");
    headers.remove("digest");
    headers.remove("content-digest");
}

/// What was read of a body: its bytes, its trailers, and whether it ended.
struct Read {
    bytes: Bytes,
    trailers: Option<HeaderMap>,
    ended: bool,
}

/// Reads `body` until it ends or more than `limit` bytes came.
async fn read_up_to(body: &mut Stalling, limit: usize) -> Result<Read, RequestBodyError> {
    let mut read = BytesMut::new();
    let mut trailers = None;
    while read.len() <= limit {
        match body.frame().await {
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => read.extend_from_slice(&data),
                Err(frame) => trailers = frame.into_trailers().ok(),
            },
            Some(Err(e)) if e.is::<Stalled>() => return Err(RequestBodyError::Stalled),
            Some(Err(e)) => {
                return Err(RequestBodyError::Unreadable(format!("the request body could not be read: {e}")))
            }
            None => return Ok(Read { bytes: read.freeze(), trailers, ended: true }),
        }
    }
    Ok(Read { bytes: read.freeze(), trailers, ended: false })
}

/// A body read whole: rewritten and sent with its new length, or, when nothing in it changes or it
/// decodes to more than [`DECODED_LIMIT`], sent as it came in its own framing.
fn whole(
    headers: &mut HeaderMap,
    Read { bytes: raw, trailers, .. }: Read,
    encoding: Encoding,
    kind: &Kind,
    rules: &[Rule],
    warn: impl FnOnce(String),
) -> Result<OutgoingBody, RequestBodyError> {
    let chunked = !headers.contains_key(header::CONTENT_LENGTH);
    let exactly = |raw: Bytes| -> OutgoingBody {
        if chunked {
            Streamed { prefix: Some(raw), rest: None, pipeline: None, exact: None, trailers, ended: false }.boxed()
        } else {
            Full::new(raw).map_err(|never| match never {}).boxed()
        }
    };
    let Some(decoded) = decode(&raw, encoding, DECODED_LIMIT)? else {
        let limit = DECODED_LIMIT >> 20;
        warn(format!(
            "a {} request body that decodes to over {limit} MiB was sent as it came, not rewritten",
            encoding.token()
        ));
        return Ok(exactly(raw));
    };
    let rewritten = match kind {
        Kind::Text => apply(&decoded, rules)?,
        Kind::Multipart(boundary) => multipart(&decoded, boundary, rules)?,
    };
    let Some(rewritten) = rewritten else { return Ok(exactly(raw)) };
    let bytes = if encoding == Encoding::Identity { rewritten } else { crate::codec::encode_all(encoding, &rewritten) };
    changed(headers);
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(bytes.len()));
    Ok(Full::new(Bytes::from(bytes)).map_err(|never| match never {}).boxed())
}

/// `text` with `rules` applied; `None` when nothing changed.
fn apply(text: &[u8], rules: &[Rule]) -> Result<Option<Vec<u8>>, RequestBodyError> {
    let out = rewrite_bytes(text, rules, "", DEFAULT_MAX_MATCH_BYTES)
        .map_err(|e| RequestBodyError::Unreadable(e.to_string()))?;
    Ok((out != text).then_some(out))
}

/// `raw` decoded whole, every gzip member; `None` when it decodes to more than `limit`.
fn decode(raw: &[u8], encoding: Encoding, limit: usize) -> Result<Option<Vec<u8>>, RequestBodyError> {
    crate::codec::decode_up_to(encoding, raw, limit)
        .map_err(|e| RequestBodyError::Unreadable(format!("the request body could not be decoded: {e}")))
}

/// A `multipart/form-data` body with its form fields rewritten; `None` when nothing changed. A part
/// with a file name is a file, never rewritten whatever its type; so is a field typed as something
/// other than text, form or JSON. Everything between parts stays byte for byte.
fn multipart(body: &[u8], boundary: &str, rules: &[Rule]) -> Result<Option<Vec<u8>>, RequestBodyError> {
    let delimiter = format!("--{boundary}");
    let starts: Vec<usize> =
        memmem::find_iter(body, delimiter.as_bytes()).filter(|&at| at == 0 || body[..at].ends_with(b"\r\n")).collect();
    let mut out = Vec::with_capacity(body.len());
    let mut copied = 0;
    for pair in starts.windows(2) {
        let (start, next) = (pair[0] + delimiter.len(), pair[1]);
        let Some(line) = memmem::find(&body[start..next], b"\r\n") else { continue };
        let head_start = start + line + 2;
        let Some(head_len) = memmem::find(&body[head_start..next], b"\r\n\r\n") else { continue };
        let content_start = head_start + head_len + 4;
        // The CRLF before the next delimiter belongs to it.
        let content_end = (next - 2).max(content_start);
        if !form_field(&body[head_start..content_start]) {
            continue;
        }
        if let Some(rewritten) = apply(&body[content_start..content_end], rules)? {
            out.extend_from_slice(&body[copied..content_start]);
            out.extend_from_slice(&rewritten);
            copied = content_end;
        }
    }
    if copied == 0 {
        return Ok(None);
    }
    out.extend_from_slice(&body[copied..]);
    Ok(Some(out))
}

/// Whether a part, by its headers, is a form field: no file name, and untyped or typed as text.
fn form_field(head: &[u8]) -> bool {
    let head = String::from_utf8_lossy(head).to_ascii_lowercase();
    let field = |name: &str| {
        head.lines().find_map(|line| line.strip_prefix(name).and_then(|rest| rest.strip_prefix(':')).map(str::trim))
    };
    if field("content-disposition").is_some_and(|value| value.contains("filename")) {
        return false;
    }
    field("content-type").is_none_or(|value| is_text(value.split(';').next().unwrap_or("").trim()))
}

/// The client's body, failing with [`Stalled`] when nothing arrives for [`BODY_IDLE_TIMEOUT`] while
/// the proxy holds what came of it. A body that streams on holds nothing here: the target's own
/// timeouts apply, and a client may feed a stream slowly on purpose.
struct Stalling {
    body: Incoming,
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
}

/// The error of a body that stalled.
#[derive(Debug)]
struct Stalled;

impl std::fmt::Display for Stalled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the client sent nothing of its body for {} s", BODY_IDLE_TIMEOUT.as_secs())
    }
}

impl std::error::Error for Stalled {}

impl Stalling {
    fn new(body: Incoming) -> Stalling {
        Stalling { body, deadline: Some(Box::pin(tokio::time::sleep(BODY_IDLE_TIMEOUT))) }
    }

    /// The rest of the body, streamed on: no deadline.
    fn streaming(self) -> Stalling {
        Stalling { deadline: None, ..self }
    }
}

impl Body for Stalling {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = &mut *self;
        match Pin::new(&mut this.body).poll_frame(cx) {
            Poll::Ready(frame) => {
                if let Some(deadline) = &mut this.deadline {
                    deadline.as_mut().reset(tokio::time::Instant::now() + BODY_IDLE_TIMEOUT);
                }
                Poll::Ready(frame.map(|frame| frame.map_err(BodyError::from)))
            }
            Poll::Pending => match this.deadline.as_mut().map(|deadline| deadline.as_mut().poll(cx)) {
                Some(Poll::Ready(())) => Poll::Ready(Some(Err(Box::new(Stalled)))),
                _ => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }
}

/// A body that goes on after part of it was read: `prefix`, then the `rest`, through the `pipeline`
/// (a long text body rewritten as it streams) or as it came.
struct Streamed {
    prefix: Option<Bytes>,
    rest: Option<Stalling>,
    pipeline: Option<Pipeline>,
    /// The body's length, when it goes as it came with a `Content-Length`.
    exact: Option<u64>,
    /// Trailers already read (with `prefix`), sent after the body.
    trailers: Option<HeaderMap>,
    ended: bool,
}

impl Streamed {
    /// Whether every byte so far went as it came.
    fn unchanged(&self) -> bool {
        self.pipeline.as_ref().is_none_or(|pipeline| pipeline.match_counts().all(|(_, matches)| matches == 0))
    }

    /// `data` through the pipeline, if any.
    fn through(&mut self, data: &[u8], last: bool) -> Result<Bytes, BodyError> {
        let Some(pipeline) = &mut self.pipeline else { return Ok(Bytes::copy_from_slice(data)) };
        let mut out = Vec::new();
        pipeline.push(data, &mut out).map_err(|e| Box::new(e) as BodyError)?;
        if last {
            pipeline.finish(&mut out).map_err(|e| Box::new(e) as BodyError)?;
        }
        Ok(Bytes::from(out))
    }
}

impl Body for Streamed {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = &mut *self;
        loop {
            if this.ended {
                // Trailers go on after a body that went as it came, or that nothing was replaced in;
                // a rewritten body leaves them out.
                let trailers = this.trailers.take().filter(|_| this.unchanged());
                return Poll::Ready(trailers.map(|trailers| Ok(Frame::trailers(trailers))));
            }
            let (data, last) = if let Some(prefix) = this.prefix.take().filter(|p| !p.is_empty()) {
                if this.pipeline.is_none() {
                    return Poll::Ready(Some(Ok(Frame::data(prefix))));
                }
                (prefix, this.rest.is_none())
            } else {
                match this.rest.as_mut() {
                    None => (Bytes::new(), true),
                    Some(rest) => match ready!(Pin::new(rest).poll_frame(cx)) {
                        Some(Ok(frame)) => match frame.into_data() {
                            Ok(data) => (data, false),
                            Err(frame) => {
                                this.trailers = frame.into_trailers().ok();
                                continue;
                            }
                        },
                        Some(Err(e)) => return Poll::Ready(Some(Err(e))),
                        None => (Bytes::new(), true),
                    },
                }
            };
            this.ended = last;
            let out = match this.through(&data, last) {
                Ok(out) => out,
                Err(e) => return Poll::Ready(Some(Err(e))),
            };
            if !out.is_empty() {
                return Poll::Ready(Some(Ok(Frame::data(out))));
            }
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self.exact {
            Some(length) if self.pipeline.is_none() && !self.ended => SizeHint::with_exact(length),
            _ => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> Vec<Rule> {
        reverse_rules("localhost:3102", &Target::parse("https://wp.test:8088").unwrap())
    }

    #[test]
    fn every_form_of_the_proxys_origin_goes_back_to_the_targets() {
        let input = concat!(
            "a=http://localhost:3102/x&b=HTTPS://LOCALHOST:3102&c=http%3a%2f%2flocalhost%3A3102%2Fy",
            r#" {"u":"http:\/\/localhost:3102\/z","p":"\/\/localhost:3102\/q"} src="//localhost:3102/i""#,
            " http://localhost:31020/ localhost:3102"
        );
        let expected = concat!(
            "a=https://wp.test:8088/x&b=https://wp.test:8088&c=https%3A%2F%2Fwp.test%3A8088%2Fy",
            r#" {"u":"https:\/\/wp.test:8088\/z","p":"https:\/\/wp.test:8088\/q"} src="https://wp.test:8088/i""#,
            " http://localhost:31020/ localhost:3102"
        );
        assert_eq!(String::from_utf8(apply(input.as_bytes(), &rules()).unwrap().unwrap()).unwrap(), expected);
    }

    #[test]
    fn multipart_form_fields_are_rewritten_and_file_parts_never_are() {
        let text_file = |name: &str, kind: &str| {
            format!("--XyZ\r\nContent-Disposition: form-data; name=\"f\"; filename=\"{name}\"\r\nContent-Type: {kind}\r\n\r\nhttp://localhost:3102/x\r\n")
        };
        let files: String =
            [("a.txt", "text/plain"), ("a.csv", "text/csv"), ("a.html", "text/html"), ("a.json", "application/json")]
                .iter()
                .map(|(name, kind)| text_file(name, kind))
                .collect();
        let field =
            |value: &str| format!("--XyZ\r\nContent-Disposition: form-data; name=\"content\"\r\n\r\n{value}\r\n");
        let typed = |value: &str| {
            format!("--XyZ\r\nContent-Disposition: form-data; name=\"meta\"\r\nContent-Type: application/json\r\n\r\n{value}\r\n")
        };
        let binary = b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n\x00http://localhost:3102\xff\r\n";
        let body = [
            field(r#"<img src="http://localhost:3102/a.png">"#).as_bytes(),
            binary,
            files.as_bytes(),
            typed(r#"{"u":"//localhost:3102/"}"#).as_bytes(),
            b"--XyZ--\r\n",
        ]
        .concat();
        let out = multipart(&body, "XyZ", &rules()).unwrap().unwrap();
        let expected = [
            field(r#"<img src="https://wp.test:8088/a.png">"#).as_bytes(),
            binary,
            files.as_bytes(),
            typed(r#"{"u":"https://wp.test:8088/"}"#).as_bytes(),
            b"--XyZ--\r\n",
        ]
        .concat();
        assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(&expected));
        let only_files = [binary, files.as_bytes(), b"--XyZ--\r\n"].concat();
        assert!(multipart(&only_files, "XyZ", &rules()).unwrap().is_none(), "files only: nothing to rewrite");
    }

    #[test]
    fn every_gzip_member_is_decoded_and_a_bomb_is_refused() {
        use std::io::Write;
        let gzip = |text: &[u8]| {
            let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            encoder.write_all(text).unwrap();
            encoder.finish().unwrap()
        };
        let two = [gzip(b"first member "), gzip(b"second member")].concat();
        assert_eq!(decode(&two, Encoding::Gzip, DECODED_LIMIT).unwrap().unwrap(), b"first member second member");
        let bomb = gzip(&vec![b'a'; DECODED_LIMIT + 1]);
        assert!(decode(&bomb, Encoding::Gzip, DECODED_LIMIT).unwrap().is_none(), "over the cap");
        assert!(matches!(
            decode(b"{\"plain\":1}", Encoding::Gzip, DECODED_LIMIT),
            Err(RequestBodyError::Unreadable(_))
        ));
    }

    #[test]
    fn the_query_comes_back_to_the_target_in_every_form() {
        let target = Target::parse("http://127.0.0.1:8000").unwrap();
        let query = "q=%2F%2Flocalhost%3A3102%2Fsomewhere&u=http://localhost:3102/x&o=//localhost:31020/";
        assert_eq!(
            reverse_query(query, &reverse_rules("localhost:3102", &target)).as_deref(),
            Some("q=http%3A%2F%2F127.0.0.1%3A8000%2Fsomewhere&u=http://127.0.0.1:8000/x&o=//localhost:31020/")
        );
        assert_eq!(reverse_query("q=nothing", &reverse_rules("localhost:3102", &target)), None);
    }

    mod round_trip {
        use super::*;
        use crate::rewrite::rewrite_bytes;
        use proptest::prelude::*;

        fn authority() -> impl Strategy<Value = String> {
            let host = prop::sample::select(vec!["localhost", "a.localhost", "127.0.0.1", "[::1]", "wp.test"]);
            (host, prop::option::of(1u16..=65535)).prop_map(|(host, port)| match port {
                Some(port) => format!("{host}:{port}"),
                None => host.to_string(),
            })
        }

        /// What the site stored: its own URLs (with its scheme), words, and strings that only look like
        /// the proxy's origin (which nothing may touch).
        fn site_value(target: String, local: String) -> impl Strategy<Value = String> {
            let piece = prop_oneof![
                prop::sample::select(vec!["", "/", "/a/b?c=1&d=%2F#top", "/page-a"])
                    .prop_map(move |path| format!("{target}{path}")),
                prop::sample::select(vec![".evil.test/", "@evil.test/", "-x/", "0/", ":1/"])
                    .prop_map(move |tail| format!("http://{local}{tail}")),
                prop::sample::select(vec!["see", "café", "a+b=c", "x&y"]).prop_map(str::to_string),
            ];
            prop::collection::vec(piece, 1..6).prop_map(|pieces| pieces.join(" "))
        }

        /// The page's text as the response side writes it, in a `<textarea>` and in a `value`.
        fn shown(value: &str, target: &Target, local: &str) -> [String; 2] {
            let rules = [Rule::links(&target.link_host(), "http"), Rule::encoded_origin(&target.link_host(), "http")];
            let page = format!("<textarea>{value}</textarea><input value=\"{value}\">");
            let out =
                String::from_utf8(rewrite_bytes(page.as_bytes(), &rules, local, DEFAULT_MAX_MATCH_BYTES).unwrap())
                    .unwrap();
            let text = out.split("<textarea>").nth(1).unwrap().split("</textarea>").next().unwrap().to_string();
            let attribute = out.split("value=\"").nth(1).unwrap().split('"').next().unwrap().to_string();
            [text, attribute]
        }

        /// `shown` as a browser sends it back, through the request side, decoded as the site reads it.
        fn sent_back(shown: &str, rules: &[Rule]) -> [String; 4] {
            let through = |body: String| {
                apply(body.as_bytes(), rules).unwrap().map_or(body, |out| String::from_utf8(out).unwrap())
            };
            let form: String = url::form_urlencoded::byte_serialize(shown.as_bytes()).collect();
            let form = through(format!("v={form}"));
            let from_form = url::form_urlencoded::parse(form.as_bytes()).next().unwrap().1.into_owned();
            let json = serde_json::to_string(shown).unwrap();
            let from_json: String = serde_json::from_str(&through(json.clone())).unwrap();
            let from_slashed: String = serde_json::from_str(&through(json.replace('/', r"\/"))).unwrap();
            [through(shown.to_string()), from_form, from_json, from_slashed]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(256))]
            #[test]
            fn what_the_site_wrote_comes_back_unchanged(
                (target, local, value) in (prop::sample::select(vec!["http", "https"]), authority(), authority())
                    .prop_filter("two places", |(_, t, l)| t != l)
                    .prop_flat_map(|(scheme, target, local)| {
                        let origin = Target::parse(&format!("{scheme}://{target}")).unwrap().origin();
                        (Just(origin.clone()), Just(local.clone()), site_value(origin, local))
                    })
            ) {
                let target = Target::parse(&target).unwrap();
                let rules = reverse_rules(&local, &target);
                for shown in shown(&value, &target, &local) {
                    for (encoding, back) in ["text or multipart", "urlencoded", "JSON", "JSON with \\/"].iter().zip(sent_back(&shown, &rules)) {
                        prop_assert_eq!(&back, &value, "shown as {:?}, sent back as {}", shown, encoding);
                    }
                }
            }
        }
    }

    #[test]
    fn the_body_kinds_rewritten() {
        let kind_of = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::CONTENT_TYPE, value.parse().unwrap());
            match kind(&headers) {
                Some(Kind::Text) => "text".to_string(),
                Some(Kind::Multipart(boundary)) => format!("multipart {boundary}"),
                None => "none".to_string(),
            }
        };
        assert_eq!(kind_of("application/x-www-form-urlencoded; charset=UTF-8"), "text");
        assert_eq!(kind_of("application/json"), "text");
        assert_eq!(kind_of("application/merge-patch+json"), "text");
        assert_eq!(kind_of("text/plain"), "text");
        assert_eq!(kind_of(r#"multipart/form-data; boundary="----WebKit1""#), "multipart ----WebKit1");
        assert_eq!(kind_of("image/png"), "none");
        assert_eq!(kind_of("application/octet-stream"), "none");
    }
}
