//! The one table of the forms in which pages, JSON, forms and query strings write an origin, and the
//! matcher that swaps one origin for another in all of them. It runs both ways: `rewriteJson` and the
//! `Location` rewrite turn the target's origin into the proxy's on the way out; `rewriteRequestBodies`
//! and the query swap turn the proxy's back into the target's on the way in.
//!
//! | form | plain | slash-escaped (JSON) | percent-encoded (queries, forms; any case) |
//! |---|---|---|---|
//! | with a scheme | `http://h:1` | `http:\/\/h:1` | `http%3A%2F%2Fh%3A1` |
//! | protocol-relative | `//h:1` | `\/\/h:1` | `%2F%2Fh%3A1` |
//!
//! A match is a whole origin: what follows may not continue its host or port (`h:10`, `h:1.evil`,
//! `h:1@evil`, `h:1-x`, `h%3A1%3A2`, `h%3A1%40evil` are other places). A protocol-relative form is
//! written back with a scheme: Browsersync's link rewrite turns `http://t/x`, `https://t/x` and `//t/x`
//! alike into `//proxy/x`, and what a browser sends back is mostly stored data, where URLs carry a
//! scheme (Django's `URLField`, WordPress's content); so `//proxy/x` comes back as `http(s)://t/x`, the
//! target's scheme. The case that cannot round-trip: the site's own protocol-relative `//t/x`, or an
//! `http` URL on an `https` target, comes back with the target's scheme.

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};

use super::hay::Next;
use super::percent_encode_origin;

/// How an origin's `://` is written.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Form {
    Plain,
    Slashed,
    Encoded,
}

impl Form {
    const ALL: [Form; 3] = [Form::Plain, Form::Slashed, Form::Encoded];

    fn colon(self) -> &'static [u8] {
        match self {
            Form::Plain | Form::Slashed => b":",
            Form::Encoded => b"%3a",
        }
    }

    fn slashes(self) -> &'static [u8] {
        match self {
            Form::Plain => b"//",
            Form::Slashed => br"\/\/",
            Form::Encoded => b"%2f%2f",
        }
    }

    /// `scheme://authority` written in this form.
    fn write(self, scheme: &str, authority: &str, out: &mut Vec<u8>) {
        match self {
            Form::Plain => out.extend_from_slice(format!("{scheme}://{authority}").as_bytes()),
            Form::Slashed => out.extend_from_slice(format!(r"{scheme}:\/\/{authority}").as_bytes()),
            Form::Encoded => {
                out.extend_from_slice(percent_encode_origin(&format!("{scheme}://{authority}")).as_bytes())
            }
        }
    }
}

/// Which forms a swap looks for.
#[derive(Clone, Copy, Debug)]
pub struct Forms {
    written: &'static [Form],
    relative: bool,
}

impl Forms {
    /// Every form, protocol-relative ones included (what the browser sends back).
    pub const ALL: Forms = Forms { written: &Form::ALL, relative: true };
    /// Every form with a scheme (JSON answers: `//t` there is left alone).
    pub const WITH_SCHEME: Forms = Forms { written: &Form::ALL, relative: false };
    /// Only percent-encoded origins with a scheme (a `redirect_to` inside a `Location`).
    pub const ENCODED: Forms = Forms { written: &[Form::Encoded], relative: false };
}

/// An origin looked for: its scheme (`None`: `http` or `https`) and its authority as written plainly
/// and percent-encoded, lower-case (compared ASCII case-insensitively).
#[derive(Debug)]
struct Wanted {
    scheme: Option<String>,
    plain: Vec<u8>,
    encoded: Vec<u8>,
}

/// Bytes that may come before the authority in a match: `https%3a%2f%2f` is the longest.
const MAX_LEAD: usize = 14;

/// Replaces some origins, in some forms, by one origin written in the same form.
#[derive(Debug)]
pub struct OriginSwap {
    wanted: Vec<Wanted>,
    forms: Forms,
    to_scheme: String,
    to_authority: String,
    /// Finds any wanted authority, plain or encoded: every match contains one.
    finder: AhoCorasick,
    longest: usize,
}

enum Verdict {
    Match(usize),
    NoMatch,
    /// Consistent with a match so far: more data decides.
    Alive,
}

impl OriginSwap {
    /// A swap of the origins `from` (`scheme://authority`, or a bare authority for `http` or `https`)
    /// to the origin `to` (`scheme://authority`), in `forms`.
    pub fn new<'a>(from: impl IntoIterator<Item = &'a str>, to: &str, forms: Forms) -> OriginSwap {
        let wanted: Vec<Wanted> = from
            .into_iter()
            .map(|origin| {
                let (scheme, authority) = match origin.split_once("://") {
                    Some((scheme, authority)) => (Some(scheme.to_ascii_lowercase()), authority),
                    None => (None, origin),
                };
                let authority = authority.to_ascii_lowercase();
                let encoded = percent_encode_origin(&authority).to_ascii_lowercase().into_bytes();
                Wanted { scheme, plain: authority.into_bytes(), encoded }
            })
            .collect();
        let (to_scheme, to_authority) = to.split_once("://").unwrap_or(("http", to));
        let needles: Vec<&[u8]> = wanted.iter().flat_map(|w| [&w.plain[..], &w.encoded[..]]).collect();
        let finder = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::LeftmostFirst)
            .kind(Some(AhoCorasickKind::DFA))
            .build(&needles)
            .expect("a few short authorities always build");
        let longest = needles.iter().map(|n| n.len()).max().unwrap_or(0);
        OriginSwap {
            wanted,
            forms,
            to_scheme: to_scheme.to_string(),
            to_authority: to_authority.to_string(),
            finder,
            longest,
        }
    }

    /// `text` with every match swapped; `None` when there is none.
    pub fn swap_all(&self, text: &[u8]) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        let (mut copied, mut from) = (0, 0);
        while let Next::Match { start, end } = self.next_match(text, None, from, true) {
            out.extend_from_slice(&text[copied..start]);
            self.write_replacement(&text[start..end], &mut out);
            (copied, from) = (end, end);
        }
        (copied > 0).then(|| {
            out.extend_from_slice(&text[copied..]);
            out
        })
    }

    /// The leftmost match at or after `from`; `before`: the byte before `hay` (for the look-behind
    /// that keeps `ftp://h` from being read as `//h`).
    pub(super) fn next_match(&self, hay: &[u8], before: Option<u8>, from: usize, last: bool) -> Next {
        let mut checked = from;
        loop {
            let hit = hay.get(checked..).and_then(|rest| self.finder.find(rest)).map(|m| checked + m.start());
            // Without a whole authority ahead, only a match whose authority is cut by the end can start.
            let (low, high) = match hit {
                Some(h) => (h.saturating_sub(MAX_LEAD), h),
                None => (hay.len().saturating_sub(self.longest.saturating_sub(1) + MAX_LEAD), hay.len()),
            };
            for start in low.max(checked)..high {
                match self.verdict(hay, before, start, last) {
                    Verdict::Match(end) => return Next::Match { start, end },
                    Verdict::Alive => return Next::Pending(start),
                    Verdict::NoMatch => {}
                }
            }
            match hit {
                Some(h) => checked = h + 1,
                None => return Next::Exhausted,
            }
        }
    }

    fn verdict(&self, hay: &[u8], before: Option<u8>, start: usize, last: bool) -> Verdict {
        let outcomes = self.forms.written.iter().map(|&form| match hay[start].to_ascii_lowercase() {
            b'h' => self.with_scheme(hay, start, form, last),
            _ if self.forms.relative && !after_a_scheme(hay, before, start, form) => {
                match expect(hay, start, form.slashes()) {
                    Some(true) => self.authority(hay, start + form.slashes().len(), None, form, last),
                    Some(false) => Verdict::NoMatch,
                    None => Verdict::Alive,
                }
            }
            _ => Verdict::NoMatch,
        });
        settle(outcomes, last)
    }

    /// `http(s)` then the form's `://` and a wanted authority, at `start`.
    fn with_scheme(&self, hay: &[u8], start: usize, form: Form, last: bool) -> Verdict {
        let outcomes = ["https", "http"].into_iter().map(|scheme| {
            let at = start + scheme.len();
            let separator = match expect(hay, start, scheme.as_bytes()) {
                Some(true) => match expect(hay, at, form.colon()) {
                    Some(true) => expect(hay, at + form.colon().len(), form.slashes()),
                    other => other,
                },
                other => other,
            };
            match separator {
                Some(true) => {
                    let authority_at = at + form.colon().len() + form.slashes().len();
                    self.authority(hay, authority_at, Some(scheme), form, last)
                }
                Some(false) => Verdict::NoMatch,
                None => Verdict::Alive,
            }
        });
        settle(outcomes, last)
    }

    /// A wanted authority (of `scheme`, when written with one) at `at`, ending an origin.
    fn authority(&self, hay: &[u8], at: usize, scheme: Option<&str>, form: Form, last: bool) -> Verdict {
        let fitting = self.wanted.iter().filter(|wanted| match (&wanted.scheme, scheme) {
            (Some(needed), Some(scheme)) => needed == scheme,
            (Some(_), None) => false,
            (None, _) => true,
        });
        let outcomes = fitting.map(|wanted| {
            let written = if form == Form::Encoded { &wanted.encoded } else { &wanted.plain };
            match expect(hay, at, written) {
                Some(true) => origin_ends(hay, at + written.len(), last),
                Some(false) => Verdict::NoMatch,
                None => Verdict::Alive,
            }
        });
        settle(outcomes, last)
    }

    /// Writes the swapped origin in the form of `matched` (a match of [`OriginSwap::next_match`]).
    pub(super) fn write_replacement(&self, matched: &[u8], out: &mut Vec<u8>) {
        let lower = matched.to_ascii_lowercase();
        let form = if memchr::memmem::find(&lower, b"%2f%2f").is_some() {
            Form::Encoded
        } else if memchr::memmem::find(&lower, br"\/\/").is_some() {
            Form::Slashed
        } else {
            Form::Plain
        };
        form.write(&self.to_scheme, &self.to_authority, out);
    }
}

/// The first match among `outcomes` (tried in order, lazily); else "alive" when one was and more data
/// may come; else no match.
fn settle(outcomes: impl IntoIterator<Item = Verdict>, last: bool) -> Verdict {
    let mut alive = false;
    for outcome in outcomes {
        match outcome {
            Verdict::Match(end) => return Verdict::Match(end),
            Verdict::Alive => alive = true,
            Verdict::NoMatch => {}
        }
    }
    if alive && !last {
        Verdict::Alive
    } else {
        Verdict::NoMatch
    }
}

/// Whether the protocol-relative form at `start` is the rest of another scheme's URL (`ftp://h`,
/// `ws%3A%2F%2Fh`). Before the data only one byte is known: an `A` there may end `%3A`.
fn after_a_scheme(hay: &[u8], before: Option<u8>, start: usize, form: Form) -> bool {
    let previous = if start == 0 { before } else { Some(hay[start - 1]) };
    match form {
        Form::Plain | Form::Slashed => previous == Some(b':'),
        Form::Encoded if start >= 3 => hay[start - 3..start].eq_ignore_ascii_case(b"%3a"),
        Form::Encoded => matches!(previous, Some(b'a' | b'A')) && (start < 3),
    }
}

/// Whether an origin ends at `end`: what follows cannot continue its host or port.
fn origin_ends(hay: &[u8], end: usize, last: bool) -> Verdict {
    match hay.get(end) {
        None => {
            if last {
                Verdict::Match(end)
            } else {
                Verdict::Alive
            }
        }
        Some(&byte) if byte.is_ascii_alphanumeric() || b"_.:@-".contains(&byte) => Verdict::NoMatch,
        // `%3A` starts a port, `%40` ends user information: another origin (in any form).
        Some(b'%') => match hay.get(end + 1..end + 3) {
            Some(code) if code.eq_ignore_ascii_case(b"3a") || code == b"40" => Verdict::NoMatch,
            Some(_) => Verdict::Match(end),
            None if last => Verdict::Match(end),
            None => Verdict::Alive,
        },
        Some(_) => Verdict::Match(end),
    }
}

/// Compares `literal` (lower-case) at `at`, ASCII case-insensitively: `Some(true)` it is there,
/// `Some(false)` it is not, `None`: the data ends first.
fn expect(hay: &[u8], at: usize, literal: &[u8]) -> Option<bool> {
    let available = hay.get(at..).unwrap_or_default();
    let n = available.len().min(literal.len());
    if !available[..n].eq_ignore_ascii_case(&literal[..n]) {
        Some(false)
    } else {
        (n == literal.len()).then_some(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to_target(text: &str) -> String {
        let swap = OriginSwap::new(["localhost:3102"], "https://wp.test:8088", Forms::ALL);
        swap.swap_all(text.as_bytes()).map_or_else(|| text.to_string(), |out| String::from_utf8(out).unwrap())
    }

    #[test]
    fn every_form_goes_back_with_the_targets_scheme() {
        for (sent, wanted) in [
            ("http://localhost:3102/x", "https://wp.test:8088/x"),
            ("HTTPS://LOCALHOST:3102", "https://wp.test:8088"),
            ("//localhost:3102/x", "https://wp.test:8088/x"),
            (r"http:\/\/localhost:3102\/x", r"https:\/\/wp.test:8088\/x"),
            (r"\/\/localhost:3102\/x", r"https:\/\/wp.test:8088\/x"),
            ("http%3a%2f%2flocalhost%3A3102%2Fx", "https%3A%2F%2Fwp.test%3A8088%2Fx"),
            ("q=%2F%2Flocalhost%3A3102%2Fx", "q=https%3A%2F%2Fwp.test%3A8088%2Fx"),
        ] {
            assert_eq!(to_target(sent), wanted, "{sent}");
        }
    }

    #[test]
    fn only_whole_origins_of_http_are_swapped() {
        for untouched in [
            "http://localhost:31020/",
            "http://localhost:3102.evil.test/",
            "http://localhost:3102@evil.test/",
            "http://localhost:3102-x/",
            "http%3A%2F%2Flocalhost%3A3102%40evil.test",
            "http%3A%2F%2Flocalhost%3A3102%3A1",
            "ftp://localhost:3102/x",
            r"ftp:\/\/localhost:3102",
            "ws%3A%2F%2Flocalhost%3A3102",
            "localhost:3102/x",
        ] {
            assert_eq!(to_target(untouched), untouched);
        }
    }

    #[test]
    fn a_host_without_a_port_is_swapped_once() {
        let swap = OriginSwap::new(["localhost"], "http://localhost:8080", Forms::ALL);
        let out = swap.swap_all(b"a=http://localhost/about b=//localhost/ c=http://localhost:9/").unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "a=http://localhost:8080/about b=http://localhost:8080/ c=http://localhost:9/"
        );
    }

    #[test]
    fn schemes_are_exact_when_named_and_relative_forms_only_when_asked() {
        let swap =
            OriginSwap::new(["http://wp.test:8088", "https://api.test"], "http://localhost:3102", Forms::WITH_SCHEME);
        let text = r#"["http://wp.test:8088/a","https://wp.test:8088/b","//wp.test:8088/c","https:\/\/api.test\/d"]"#;
        let out = String::from_utf8(swap.swap_all(text.as_bytes()).unwrap()).unwrap();
        assert_eq!(
            out,
            r#"["http://localhost:3102/a","https://wp.test:8088/b","//wp.test:8088/c","http:\/\/localhost:3102\/d"]"#
        );
    }

    #[test]
    fn ipv6_authorities_in_every_form() {
        let swap = OriginSwap::new(["[::1]:3000"], "http://127.0.0.1:8080", Forms::ALL);
        let out = swap.swap_all(b"http://[::1]:3000/x %2F%2F%5B%3A%3A1%5D%3A3000%2F http://[::1]:30000/").unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "http://127.0.0.1:8080/x http%3A%2F%2F127.0.0.1%3A8080%2F http://[::1]:30000/"
        );
    }

    #[test]
    fn streamed_in_any_cut_the_result_is_the_same() {
        let swap = OriginSwap::new(["localhost:3102"], "https://wp.test:8088", Forms::ALL);
        let text = b"a=http%3A%2F%2Flocalhost%3A3102%2Fx&b=//localhost:3102 ftp://localhost:3102 http://localhost:3102";
        let whole = swap.swap_all(text).unwrap();
        for cut in 0..text.len() {
            // The first part as a stage sees it before the rest arrives: what it may emit is settled.
            let settled = match swap.next_match(&text[..cut], None, 0, false) {
                Next::Match { start, .. } | Next::Pending(start) | Next::InTurn(start) => start,
                Next::Exhausted => cut,
            };
            assert_eq!(&whole[..settled], &text[..settled], "cut at {cut}: bytes emitted early must be final");
        }
    }
}
