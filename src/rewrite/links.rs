//! Browsersync's link rewrite (`rewriteLinks` in browser-sync's proxy-utils.js), reproduced exactly
//! except that the target host is matched literally (Browsersync forgets to escape its dots).
//!
//! Browsersync's regex, with HOST the target's `hostname[:port]`:
//!
//! ```text
//! https?:\\/\\/HOST | ('|")\/\/HOST | https?://HOST(?!:)(/)? | ('|")(https?://|/|\.)?HOST(?!:)(/)?(.*?)(?=[ ,'"\s])
//! ```
//!
//! Every match contains HOST at most [`MAX_LEAD`] bytes after its start, so a dedicated matcher finds
//! HOST with `memmem` and checks the few bytes around it by hand (the look-aheads included, which a DFA
//! cannot run). It answers like the generic stage's DFA walk: a final match, no match, or "still alive
//! at the end of the data" so that the stage holds those bytes back.

use memchr::memmem;

use super::hay::{utf8_width, Next};

/// Bytes that may stand before the host in a match: `https:\/\/` is the longest.
const MAX_LEAD: usize = 10;
/// How far back the link rewrite looks for a `value=` before a match.
pub(super) const LINK_LOOK_BEHIND: usize = 32;

/// What a start position gives, given the data seen so far.
#[cfg_attr(test, derive(Debug, PartialEq))]
enum Verdict {
    /// A final match ending (logically: look-ahead characters excluded) here.
    Match(usize),
    NoMatch,
    /// Consistent with a match so far: more data decides.
    Alive,
    /// Longer than the cap: given up on, its bytes stay as they are.
    Abandoned,
}

#[derive(Debug)]
pub(super) struct LinkMatcher {
    host: Vec<u8>,
    finder: memmem::Finder<'static>,
    /// The proxy's scheme, kept in form fields' values (see [`LinkMatcher::write_replacement`]).
    local_scheme: &'static str,
}

impl LinkMatcher {
    pub(super) fn new(target_host: &str, local_scheme: &'static str) -> LinkMatcher {
        LinkMatcher {
            host: target_host.as_bytes().to_vec(),
            finder: memmem::Finder::new(target_host.as_bytes()).into_owned(),
            local_scheme,
        }
    }

    /// The leftmost match at or after `from`, in the leftmost-first order of Browsersync's regex.
    pub(super) fn next_match(
        &self,
        hay: &[u8],
        from: usize,
        last: bool,
        max_match: usize,
        abandoned: &mut u64,
    ) -> Next {
        let len = hay.len();
        let mut checked = from;
        loop {
            let hit = hay.get(checked..).and_then(|rest| self.finder.find(rest)).map(|i| checked + i);
            // Without a whole host ahead, only a match whose host is cut by the end of the data can start.
            let (low, high) = match hit {
                Some(h) => (h.saturating_sub(MAX_LEAD), h),
                None => (len.saturating_sub(self.host.len().saturating_sub(1) + MAX_LEAD), len),
            };
            for start in low.max(checked)..high {
                match self.verdict(hay, start, last, max_match) {
                    Verdict::Match(end) => return Next::Match { start, end },
                    Verdict::Alive => return Next::Pending(start),
                    Verdict::Abandoned => *abandoned += 1,
                    Verdict::NoMatch => {}
                }
            }
            match hit {
                Some(h) => checked = h + 1,
                None => return Next::Exhausted,
            }
        }
    }

    /// Whether a match starts at `start`, and where it ends.
    fn verdict(&self, hay: &[u8], start: usize, last: bool, max_match: usize) -> Verdict {
        let undecided = if last { Verdict::NoMatch } else { Verdict::Alive };
        // Compares `literal` at `at`: Some(true) it is there, Some(false) it is not, None: data ends first.
        let expect = |at: usize, literal: &[u8]| -> Option<bool> {
            let available = hay.get(at..).unwrap_or_default();
            let n = available.len().min(literal.len());
            if available[..n] != literal[..n] {
                Some(false)
            } else {
                (n == literal.len()).then_some(true)
            }
        };
        let host = &self.host[..];
        match hay[start] {
            b'h' => {
                // https?:\/\/HOST, then https?://HOST(?!:)(/)?
                let scheme_end = match expect(start, b"https") {
                    Some(true) => start + 5,
                    Some(false) if expect(start, b"http") == Some(true) => start + 4,
                    Some(false) => return Verdict::NoMatch,
                    None => return undecided,
                };
                let (host_at, escaped) = match (expect(scheme_end, br":\/\/"), expect(scheme_end, b"://")) {
                    (Some(true), _) => (scheme_end + 5, true),
                    (_, Some(true)) => (scheme_end + 3, false),
                    (None, _) | (_, None) => return undecided,
                    _ => return Verdict::NoMatch,
                };
                match expect(host_at, host) {
                    Some(true) => {}
                    Some(false) => return Verdict::NoMatch,
                    None => return undecided,
                }
                let end = host_at + host.len();
                if escaped {
                    return Verdict::Match(end);
                }
                match hay.get(end) {
                    None if last => Verdict::Match(end),
                    None => Verdict::Alive,
                    Some(b'/') => Verdict::Match(end + 1),
                    Some(b':') => Verdict::NoMatch,
                    Some(_) => Verdict::Match(end),
                }
            }
            b'\'' | b'"' => {
                // ('|")\/\/HOST first
                match expect(start + 1, b"//") {
                    Some(true) => {
                        return match expect(start + 3, host) {
                            Some(true) => Verdict::Match(start + 3 + host.len()),
                            Some(false) => Verdict::NoMatch,
                            None => undecided,
                        }
                    }
                    None => return undecided,
                    Some(false) => {}
                }
                // ('|")(https?://|/|\.)?HOST: the options exclude each other, tried in the regex's order.
                let mut host_end = None;
                for prefix in [&b"https://"[..], b"http://", b"/", b".", b""] {
                    let found = match expect(start + 1, prefix) {
                        Some(true) => expect(start + 1 + prefix.len(), host),
                        other => other,
                    };
                    match found {
                        Some(true) => {
                            host_end = Some(start + 1 + prefix.len() + host.len());
                            break;
                        }
                        Some(false) => {}
                        None => return undecided,
                    }
                }
                let Some(host_end) = host_end else { return Verdict::NoMatch };
                // (?!:)(/)?(.*?)(?=[ ,'"\s]): up to the first delimiter, which is not part of the match.
                if hay.get(host_end) == Some(&b':') {
                    return Verdict::NoMatch;
                }
                let limit = start.saturating_add(max_match);
                let mut at = host_end;
                while at < hay.len() {
                    // Past the bytes that can only go on (a URL's path, most often): one table look-up each.
                    let upto = hay.len().min(limit);
                    at += hay.get(at..upto).map_or(0, |rest| {
                        rest.iter().position(|&byte| STOPS_A_LINK[usize::from(byte)]).unwrap_or(rest.len())
                    });
                    if at >= hay.len() {
                        break;
                    }
                    let (is_delimiter, width) = match link_character(hay, at, last) {
                        Ok(character) => character,
                        Err(verdict) => return verdict,
                    };
                    if at + width > limit {
                        return Verdict::Abandoned;
                    }
                    if is_delimiter {
                        return Verdict::Match(at);
                    }
                    at += width;
                }
                if hay.len() >= limit {
                    Verdict::Abandoned
                } else {
                    undecided
                }
            }
            _ => Verdict::NoMatch,
        }
    }

    /// Writes Browsersync's replacement for a (logical) match, with the request's Host as `local_host`.
    /// `in_value`: the match is the text of a `value` attribute (a form field). There a URL that had a
    /// scheme keeps one, the proxy's, where Browsersync writes `//local/x`: an `<input type="url">`
    /// holding `//local/x` is invalid and its form is not sent, and what a form sends back is data.
    pub(super) fn write_replacement(&self, matched: &[u8], local_host: &str, in_value: bool, out: &mut Vec<u8>) {
        let quote = matches!(matched.first(), Some(b'\'' | b'"'));
        let (captured, url) = matched.split_at(usize::from(quote));
        out.extend_from_slice(captured);
        let written = out.len();
        if !self.write_plain_url(url, local_host, out) {
            self.write_parsed_url(url, local_host, out);
        }
        let had_scheme = url.starts_with(b"http://") || url.starts_with(b"https://");
        if in_value && had_scheme && out[written..].starts_with(b"//") {
            let scheme = [self.local_scheme.as_bytes(), b":"].concat();
            out.splice(written..written, scheme);
        }
    }

    /// The replacement of a URL that url.parse would leave as it is, written without parsing it;
    /// false (nothing written) for any other URL.
    fn write_plain_url(&self, url: &[u8], local_host: &str, out: &mut Vec<u8>) -> bool {
        // A bare `http:\/\/HOST`, `https:\/\/HOST` or `//HOST` (JSON-escaped or protocol-relative): url.parse
        // finds no host in it, so Browsersync swaps the host in place.
        for prefix in [&br"http:\/\/"[..], br"https:\/\/", b"//"] {
            if url.len() == prefix.len() + self.host.len() && url.starts_with(prefix) && url.ends_with(&self.host) {
                out.extend_from_slice(prefix);
                out.extend_from_slice(local_host.as_bytes());
                return true;
            }
        }
        // The common case, `http(s)://HOST` plus a path (query and hash included) that url.parse leaves as
        // it is: no character it escapes or rewrites (it leaves non-ASCII text alone), and not `/#...`,
        // whose lone `/` path Browsersync drops.
        let rest = url
            .strip_prefix(b"https://")
            .or_else(|| url.strip_prefix(b"http://"))
            .and_then(|r| r.strip_prefix(&self.host[..]));
        if let Some(path) = rest {
            let plain = (path.is_empty() || (path[0] == b'/' && path.get(1) != Some(&b'#')))
                && path.iter().all(|&b| !b.is_ascii() || !NEEDS_URL_PARSE[usize::from(b)])
                && (path.is_ascii() || std::str::from_utf8(path).is_ok());
            if plain {
                out.extend_from_slice(b"//");
                out.extend_from_slice(local_host.as_bytes());
                out.extend_from_slice(path);
                return true;
            }
        }
        false
    }

    /// The replacement of any URL, through an emulation of Node's legacy url.parse.
    fn write_parsed_url(&self, url: &[u8], local_host: &str, out: &mut Vec<u8>) {
        let url = String::from_utf8_lossy(url);
        let host = String::from_utf8_lossy(&self.host);
        match parse_legacy_url(&url) {
            // Like Node's url.parse: with a host, rebuild a protocol-relative URL.
            Some(path_and_hash) => {
                out.extend_from_slice(b"//");
                out.extend_from_slice(local_host.as_bytes());
                out.extend_from_slice(path_and_hash.as_bytes());
            }
            // Without one, replace the first occurrence of the host.
            None => out.extend_from_slice(url.replacen(&*host, local_host, 1).as_bytes()),
        }
    }
}

/// Bytes that make a URL path differ after url.parse: it escapes them, or turns `\\` into `/`.
/// Whether the bytes before a match (`tail`, the stage's last bytes before this chunk, then
/// `before`, this chunk's up to the match; `look_behind` of them at most) end with ` value=` (any case,
/// spaces around `=`): the match is a form field's value.
pub(super) fn opens_value_attribute(tail: &[u8], before: &[u8], look_behind: usize) -> bool {
    let joined;
    let before = if before.len() >= look_behind {
        &before[before.len() - look_behind..]
    } else {
        joined = [tail, before].concat();
        &joined[..]
    };
    let trimmed = before.trim_ascii_end();
    let Some(name) = trimmed.strip_suffix(b"=").map(<[u8]>::trim_ascii_end) else { return false };
    let Some(at) = name.len().checked_sub(b"value".len()) else { return false };
    name[at..].eq_ignore_ascii_case(b"value") && name[..at].last().is_some_and(u8::is_ascii_whitespace)
}

const NEEDS_URL_PARSE: [bool; 128] = {
    let mut table = [false; 128];
    let special = b"\\'{}|^`<>\" \r\n\t";
    let mut i = 0;
    while i < special.len() {
        table[special[i] as usize] = true;
        i += 1;
    }
    let mut c = 0;
    while c < 0x20 {
        table[c] = true;
        c += 1;
    }
    table[0x7F] = true;
    table
};

/// The character at `at` as the lazy `(.*?)(?=[ ,'"\s])` of a link reads it: whether it is a delimiter, and
/// its width; the verdict where the data ends inside it (`last`: for good) or it is not UTF-8.
fn link_character(hay: &[u8], at: usize, last: bool) -> Result<(bool, usize), Verdict> {
    let byte = hay[at];
    if byte < 0x80 {
        return Ok((matches!(byte, b' ' | b',' | b'\'' | b'"' | b'\t' | b'\n' | 0x0B | 0x0C | b'\r'), 1));
    }
    let width = utf8_width(byte);
    let Some(bytes) = hay.get(at..at + width) else {
        return Err(if last { Verdict::NoMatch } else { Verdict::Alive });
    };
    match std::str::from_utf8(bytes).ok().and_then(|s| s.chars().next()) {
        Some(c) => Ok((is_unicode_space(c), width)),
        None => Err(Verdict::NoMatch),
    }
}

/// The bytes the lazy `(.*?)` of a link stops at or must look at: its ASCII delimiters (`[ ,'"\s]`) and
/// every byte of a character beyond ASCII (some are spaces).
const STOPS_A_LINK: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0x80;
    while byte < 256 {
        table[byte] = true;
        byte += 1;
    }
    let delimiters = *b" ,'\"\t\n\x0B\x0C\r";
    let mut i = 0;
    while i < delimiters.len() {
        table[delimiters[i] as usize] = true;
        i += 1;
    }
    table
};

/// JS `\s` beyond ASCII.
fn is_unicode_space(c: char) -> bool {
    matches!(
        c,
        '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}' | '\u{2028}' | '\u{2029}' | '\u{202F}' | '\u{205F}' | '\u{3000}' | '\u{FEFF}'
    )
}

/// What Browsersync keeps of Node's legacy `url.parse(url)`: `path` (with Browsersync's trailing-slash
/// rule) plus `hash`; `None` when the URL has no host.
fn parse_legacy_url(url: &str) -> Option<String> {
    // url.parse turns `\` into `/` before the query or hash.
    let first_special = url.find(['?', '#']).unwrap_or(url.len());
    let url = format!("{}{}", url[..first_special].replace('\\', "/"), &url[first_special..]);
    // Any `scheme:` counts, so `host:port/x` parses as scheme `host`, host `port`.
    let colon = url.find(':')?;
    let scheme = url[..colon].to_ascii_lowercase();
    if scheme.is_empty()
        || !scheme.bytes().all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
        || scheme == "javascript"
    {
        return None;
    }
    let slashed_scheme = matches!(scheme.as_str(), "http" | "https" | "ftp" | "gopher" | "file");
    let mut rest = &url[colon + 1..];
    let slashes = rest.starts_with("//");
    if slashes {
        rest = &rest[2..];
    } else if slashed_scheme {
        return None;
    }
    let host_end = rest.find(|c: char| HOST_ENDS.contains(&c)).unwrap_or(rest.len());
    if host_end == 0 {
        return None;
    }
    let after_host = &rest[host_end..];
    let (before_hash, hash) = match after_host.find('#') {
        Some(i) => after_host.split_at(i),
        None => (after_host, ""),
    };
    let mut path = auto_escape(before_hash);
    if slashed_scheme && !path.starts_with('/') {
        path.insert(0, '/');
    }
    if path == "/" && !url.ends_with('/') {
        path.clear();
    }
    path.push_str(&auto_escape(hash));
    Some(path)
}

/// Characters that end the host in Node's legacy url.parse.
const HOST_ENDS: &[char] = &['/', '?', '#', '\\', '<', '>', '"', '\'', '`', ' ', '\r', '\n', '\t', '{', '}', '|', '^'];

fn auto_escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\'' | '{' | '}' | '|' | '\\' | '^' | '`' | '<' | '>' | '"' | ' ' | '\r' | '\n' | '\t' => {
                escaped.push_str(&format!("%{:02X}", c as u32))
            }
            _ => escaped.push(c),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{link_character, LinkMatcher, Verdict};

    /// The lazy `(.*?)(?=[ ,'"\s])` after a quoted link's host, one character at a time: what the table's
    /// skip in `verdict` must agree with.
    fn end_by_characters(hay: &[u8], host_end: usize, start: usize, last: bool, max_match: usize) -> Verdict {
        let limit = start.saturating_add(max_match);
        let mut at = host_end;
        while at < hay.len() {
            let (is_delimiter, width) = match link_character(hay, at, last) {
                Ok(character) => character,
                Err(verdict) => return verdict,
            };
            if at + width > limit {
                return Verdict::Abandoned;
            }
            if is_delimiter {
                return Verdict::Match(at);
            }
            at += width;
        }
        match (hay.len() >= limit, last) {
            (true, _) => Verdict::Abandoned,
            (false, true) => Verdict::NoMatch,
            (false, false) => Verdict::Alive,
        }
    }

    proptest! {
        #[test]
        fn a_quoted_link_ends_where_a_scan_by_characters_ends_it(
            tail in prop::collection::vec(
                prop::sample::select(vec!["/p", "a", "xyz-0", ",", " ", "'", "\"", "\t", "\r", "\u{a0}", "é", "\u{3000}", "東"]),
                0..40,
            ),
            cut in 0..4usize,
            max_match in 1..120usize,
            last: bool,
        ) {
            let matcher = LinkMatcher::new("h.test", "http");
            let host_end = "\"http://h.test".len();
            let mut hay = format!("\"http://h.test{}", tail.concat()).into_bytes();
            // A cut through the last character too: the rest may come with the next chunk.
            hay.truncate(hay.len().saturating_sub(cut).max(host_end));
            let expected = end_by_characters(&hay, host_end, 0, last, max_match);
            prop_assert_eq!(matcher.verdict(&hay, 0, last, max_match), expected);
        }
    }

    /// The fast path must agree with the url.parse emulation (itself checked against browser-sync's own
    /// function by the Node tests) wherever it answers.
    #[test]
    fn plain_urls_are_written_as_url_parse_would() {
        for host in ["example.com", "127.0.0.1:8080"] {
            let matcher = LinkMatcher::new(host, "http");
            let mut answered = 0;
            for prefix in ["http://", "https://", "http:\\/\\/", "https:\\/\\/", "//", "/", ""] {
                for path in [
                    "",
                    "/",
                    "/a",
                    "/a/",
                    "/#",
                    "/#top",
                    "/#a/",
                    "#x",
                    "?q",
                    "/?q",
                    "/a?b=1&c=2",
                    "/a?b=1#h",
                    "/a#h?x",
                    "/a\\b",
                    "/a?b\\c",
                    "/a b",
                    "/a|b",
                    "/a{b}",
                    "/é",
                    "/a\"b",
                    "/a'b",
                    "/a^`<>",
                    "/a\tb",
                    "/\\/x",
                    "/a\u{7f}",
                    "/café/naïve-東京?q=é#ü",
                    "/\u{a0}x",
                    "/\u{2028}x",
                ] {
                    let url = format!("{prefix}{host}{path}");
                    let mut fast = Vec::new();
                    if matcher.write_plain_url(url.as_bytes(), "me:1", &mut fast) {
                        answered += 1;
                        let mut parsed = Vec::new();
                        matcher.write_parsed_url(url.as_bytes(), "me:1", &mut parsed);
                        assert_eq!(String::from_utf8_lossy(&fast), String::from_utf8_lossy(&parsed), "url {url:?}");
                    }
                }
            }
            assert!(answered >= 15, "the fast path answered only {answered} URLs");
        }
    }
}
