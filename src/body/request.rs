//! Phase "request body": the proxy's own origins, which the link rewrite wrote into pages, go back to
//! the target's origin in what the browser sends (`rewriteRequestBodies`), so that saving a page (a
//! CMS editor posting its content) does not store the proxy's URLs in the site. Form, JSON and text
//! bodies, and the text parts of multipart ones, compressed or not; anything else goes as it came.
//!
//! A body whose `Content-Length` is at most [`WHOLE_BODY_LIMIT`] is read whole and sent with its new,
//! exact length: some dev servers refuse chunked request bodies (Django's runserver, PHP's built-in
//! server). A longer text body is rewritten as it streams and sent chunked; a longer multipart body
//! (an upload) goes as it came.

use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http_body::{Body, Frame};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use memchr::memmem;

use super::{BodyError, Pipeline};
use crate::codec::Encoding;
use crate::config::target::Target;
use crate::rewrite::{rewrite_bytes, Rewriter, Rule, RuleError, RuleReplacement, DEFAULT_MAX_MATCH_BYTES};

/// The body that goes upstream.
pub(crate) type OutgoingBody = http_body_util::combinators::BoxBody<Bytes, BodyError>;

/// Request bodies up to this size are read whole and sent with their new length.
pub(crate) const WHOLE_BODY_LIMIT: u64 = 1 << 20;

/// A body that may carry the proxy's origins.
enum Kind {
    /// Form, JSON or text: rewritten whole.
    Text,
    /// `multipart/form-data` with this boundary: its text parts are rewritten.
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

/// The rules that turn the proxy's origin, as the request reached it (`local_host`), back into
/// `target`'s, in every form the link rewrite writes: `http(s)://local`, slash-escaped
/// `http(s):\/\/local`, percent-encoded `http%3A%2F%2Flocal` (any case), and protocol-relative
/// `//local` and `\/\/local`, the scheme forms first.
pub(crate) fn reverse_rules(local_host: &str, target: &Target) -> Result<Vec<Rule>, RuleError> {
    let encode = crate::rewrite::percent_encode_origin;
    // Only the whole origin: `localhost:30001` is not `localhost:3000`.
    let end = if local_host.ends_with(|c: char| c.is_ascii_alphanumeric()) { r"\b" } else { "" };
    let local = js_escape(local_host);
    let encoded_local = js_escape(&encode(local_host));
    let (origin, authority) = (target.origin(), target.authority());
    let rule = |source: String, replacement: String| {
        Rule::regex(&source, "gi", RuleReplacement::Text(replacement.replace('$', "$$")))
    };
    Ok(vec![
        rule(format!(r"https?:\/\/{local}{end}"), origin.clone())?,
        rule(format!(r"https?:\\\/\\\/{local}{end}"), origin.replace('/', r"\/"))?,
        rule(format!("https?%3A%2F%2F{encoded_local}{end}"), encode(&origin))?,
        rule(format!(r"\/\/{local}{end}"), format!("//{authority}"))?,
        rule(format!(r"\\\/\\\/{local}{end}"), format!(r"\/\/{authority}"))?,
    ])
}

/// `text` as a JS regex matching it literally.
pub(super) fn js_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for c in text.chars() {
        if r"\^$.*+?()[]{}|/".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The request's body as it goes upstream, with the proxy's origins turned back into the target's by
/// `rules` where its type allows; `headers` follow (`Content-Length`, digests). An error is a body
/// that could not be read or decoded.
pub(crate) async fn reverse(
    headers: &mut HeaderMap,
    body: Incoming,
    rules: &[Rule],
    local_host: &str,
) -> Result<OutgoingBody, String> {
    if body.is_end_stream() {
        return Ok(as_it_came(body));
    }
    let Some((kind, encoding, length)) = what_to_rewrite(headers) else { return Ok(as_it_came(body)) };
    match (length, kind) {
        (Some(length), kind) if length <= WHOLE_BODY_LIMIT => {
            let raw = Limited::new(body, WHOLE_BODY_LIMIT as usize)
                .collect()
                .await
                .map_err(|e| format!("the request body could not be read: {e}"))?
                .to_bytes();
            let rewritten = whole(&raw, encoding, &kind, rules, local_host)?;
            let bytes = match rewritten {
                Some(bytes) => {
                    changed(headers);
                    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(bytes.len()));
                    Bytes::from(bytes)
                }
                None => raw,
            };
            Ok(Full::new(bytes).map_err(|never| match never {}).boxed())
        }
        (_, Kind::Text) => {
            changed(headers);
            headers.remove(header::CONTENT_LENGTH);
            let pipeline = Pipeline::new(encoding, encoding, Rewriter::new(rules, local_host, DEFAULT_MAX_MATCH_BYTES));
            Ok(Streamed { body, pipeline, ended: false }.boxed())
        }
        (_, Kind::Multipart(_)) => Ok(as_it_came(body)),
    }
}

fn as_it_came(body: Incoming) -> OutgoingBody {
    body.map_err(BodyError::from).boxed()
}

/// The body's kind, coding and length, when it is one to rewrite (a coding the codecs read).
fn what_to_rewrite(headers: &HeaderMap) -> Option<(Kind, Encoding, Option<u64>)> {
    let kind = kind(headers)?;
    let coding = headers.get(header::CONTENT_ENCODING).map(|v| v.to_str().unwrap_or("?"));
    let encoding = Encoding::from_content_encoding(coding)?;
    let length = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    Some((kind, encoding, length))
}

/// Headers that describe the body's bytes no longer hold once it is rewritten.
fn changed(headers: &mut HeaderMap) {
    headers.remove("content-md5");
    headers.remove("digest");
    headers.remove("content-digest");
}

/// `raw` rewritten, or `None` when nothing in it changes (it then goes as it came, byte for byte).
fn whole(
    raw: &[u8],
    encoding: Encoding,
    kind: &Kind,
    rules: &[Rule],
    local_host: &str,
) -> Result<Option<Vec<u8>>, String> {
    let decoded = recode(raw, encoding, Encoding::Identity)?;
    let rewritten = match kind {
        Kind::Text => apply(&decoded, rules, local_host)?,
        Kind::Multipart(boundary) => multipart(&decoded, boundary, rules, local_host)?,
    };
    if rewritten == decoded {
        return Ok(None);
    }
    recode(&rewritten, Encoding::Identity, encoding).map(Some)
}

fn apply(text: &[u8], rules: &[Rule], local_host: &str) -> Result<Vec<u8>, String> {
    rewrite_bytes(text, rules, local_host, DEFAULT_MAX_MATCH_BYTES).map_err(|e| e.to_string())
}

/// `bytes` from one coding to another, through the response pipeline's codecs without rules.
fn recode(bytes: &[u8], from: Encoding, to: Encoding) -> Result<Vec<u8>, String> {
    if from == to {
        return Ok(bytes.to_vec());
    }
    let mut pipeline = Pipeline::new(from, to, Rewriter::new(&[], "", DEFAULT_MAX_MATCH_BYTES));
    let mut out = Vec::with_capacity(bytes.len());
    pipeline.push(bytes, &mut out).map_err(|e| format!("the request body could not be decoded: {e}"))?;
    pipeline.finish(&mut out).map_err(|e| format!("the request body could not be decoded: {e}"))?;
    Ok(out)
}

/// A `multipart/form-data` body with its text parts rewritten: form fields (no file name) and parts
/// whose type is text, form or JSON. File parts and everything between parts stay byte for byte.
fn multipart(body: &[u8], boundary: &str, rules: &[Rule], local_host: &str) -> Result<Vec<u8>, String> {
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
        if text_part(&body[head_start..content_start]) {
            out.extend_from_slice(&body[copied..content_start]);
            out.extend_from_slice(&apply(&body[content_start..content_end], rules, local_host)?);
            copied = content_end;
        }
    }
    out.extend_from_slice(&body[copied..]);
    Ok(out)
}

/// Whether a part, by its headers, is text: a typed text/form/JSON part, or an untyped form field.
fn text_part(head: &[u8]) -> bool {
    let head = String::from_utf8_lossy(head).to_ascii_lowercase();
    let field = |name: &str| {
        head.lines().find_map(|line| line.strip_prefix(name).and_then(|rest| rest.strip_prefix(':')).map(str::trim))
    };
    match field("content-type") {
        Some(value) => is_text(value.split(';').next().unwrap_or("").trim()),
        None => !field("content-disposition").is_some_and(|value| value.contains("filename")),
    }
}

/// A long text body rewritten as it streams: decoded, rewritten and re-encoded chunk by chunk.
struct Streamed {
    body: Incoming,
    pipeline: Pipeline,
    ended: bool,
}

impl Body for Streamed {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = &mut *self;
        loop {
            if this.ended {
                return Poll::Ready(None);
            }
            let mut out = Vec::new();
            match ready!(Pin::new(&mut this.body).poll_frame(cx)) {
                Some(Ok(frame)) => {
                    // Trailers of a chunked request carry nothing the target needs here.
                    let Ok(data) = frame.into_data() else { continue };
                    if let Err(e) = this.pipeline.push(&data, &mut out) {
                        return Poll::Ready(Some(Err(Box::new(e))));
                    }
                }
                Some(Err(e)) => return Poll::Ready(Some(Err(Box::new(e)))),
                None => {
                    this.ended = true;
                    if let Err(e) = this.pipeline.finish(&mut out) {
                        return Poll::Ready(Some(Err(Box::new(e))));
                    }
                }
            }
            if !out.is_empty() {
                return Poll::Ready(Some(Ok(Frame::data(Bytes::from(out)))));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> Vec<Rule> {
        reverse_rules("localhost:3102", &Target::parse("https://wp.test:8088").unwrap()).unwrap()
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
            r#" {"u":"https:\/\/wp.test:8088\/z","p":"\/\/wp.test:8088\/q"} src="//wp.test:8088/i""#,
            " http://localhost:31020/ localhost:3102"
        );
        assert_eq!(String::from_utf8(apply(input.as_bytes(), &rules(), "localhost:3102").unwrap()).unwrap(), expected);
    }

    #[test]
    fn multipart_text_parts_are_rewritten_and_file_parts_are_not() {
        let body = [
            &b"--XyZ\r\nContent-Disposition: form-data; name=\"content\"\r\n\r\n<img src=\"http://localhost:3102/a.png\">\r\n"[..],
            b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n",
            b"\x00http://localhost:3102\xff\r\n",
            b"--XyZ\r\nContent-Disposition: form-data; name=\"meta\"\r\nContent-Type: application/json\r\n\r\n{\"u\":\"//localhost:3102/\"}\r\n",
            b"--XyZ--\r\n",
        ]
        .concat();
        let out = multipart(&body, "XyZ", &rules(), "localhost:3102").unwrap();
        let expected = [
            &b"--XyZ\r\nContent-Disposition: form-data; name=\"content\"\r\n\r\n<img src=\"https://wp.test:8088/a.png\">\r\n"[..],
            b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n",
            b"\x00http://localhost:3102\xff\r\n",
            b"--XyZ\r\nContent-Disposition: form-data; name=\"meta\"\r\nContent-Type: application/json\r\n\r\n{\"u\":\"//wp.test:8088/\"}\r\n",
            b"--XyZ--\r\n",
        ]
        .concat();
        assert_eq!(out, expected);
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
