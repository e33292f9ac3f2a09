//! Applying rules to a body that arrives in chunks.
//!
//! Each rule is one [`Stage`]; a stage's output is the next stage's input. A stage emits every byte
//! that can no longer belong to a match and holds back the rest: the bytes from the earliest start
//! whose anchored DFA run is still alive at the end of the data seen so far. A match is replaced only
//! once the DFA has died (or the body has ended), which is when leftmost-first semantics make it final;
//! so the output is byte-identical to whole-body replacement, whatever the chunking.

use regex_automata::dfa::Automaton;
use regex_automata::util::captures::Captures;
use regex_automata::util::start;
use regex_automata::{Anchored, Input, PatternID};

use super::hay::{
    char_start, low_half, push_surrogate, resolve_surrogates, surrogates_of, unit_text, utf8_width, Hay, Next,
};
use std::sync::Arc;

use super::lines;
use super::literals::MemberStates;
use super::replacement::{Exchange, ReplaceCall, Replacement, Utf16Counter};
use super::rule::{Dfa, Engine, GroupFinder, Rule};
use super::search::{Attempt, RegexSearch};
use super::sweep::Sweep;
use crate::csp::PagePolicy;
use crate::error::ReplaceError;

/// Default cap on the bytes one pending match may hold back (`maxMatchBytes`).
pub const DEFAULT_MAX_MATCH_BYTES: usize = 64 * 1024;

/// A set of rules applied to one body, chunk by chunk.
pub struct Rewriter {
    stages: Vec<Stage>,
    /// Each stage's output for the current chunk, reused across chunks; the last stage writes straight
    /// to the caller's buffer.
    outputs: Vec<Vec<u8>>,
}

impl Rewriter {
    /// `local_host` is the request's Host header, used by the link rewrite rule;
    /// `max_match_bytes` caps what one pending match may hold back.
    pub fn new(rules: &[Rule], local_host: &str, max_match_bytes: usize) -> Rewriter {
        let mut stages: Vec<Stage> =
            rules.iter().map(|rule| Stage::new(rule.clone(), local_host, max_match_bytes.max(1))).collect();
        let count = stages.len();
        for stage in stages.iter_mut().take(count.saturating_sub(1)) {
            stage.pass_on_unchanged = true;
        }
        let outputs = vec![Vec::new(); stages.len().saturating_sub(1)];
        Rewriter { stages, outputs }
    }

    /// Shows `exchange` (the request and response of the body) to the rules' replacement functions.
    pub fn with_exchange(mut self, exchange: Arc<Exchange>) -> Rewriter {
        for stage in &mut self.stages {
            stage.exchange = Some(exchange.clone());
        }
        self
    }

    /// Gives the page's Content-Security-Policy amendment to the snippet and meta rules.
    pub fn with_page_policy(mut self, page_policy: Arc<PagePolicy>) -> Rewriter {
        for stage in &mut self.stages {
            stage.page_policy = Some(page_policy.clone());
        }
        self
    }

    /// Feeds the next chunk; appends what is final to `out`.
    pub fn push(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(), ReplaceError> {
        feed(&mut self.stages, &mut self.outputs, input, false, out)
    }

    /// Ends the body; appends everything still held back, rewritten, to `out`.
    pub fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), ReplaceError> {
        feed(&mut self.stages, &mut self.outputs, &[], true, out)
    }

    /// Whether some rule replaces through a function: then a step may wait on another thread.
    pub fn calls_functions(&self) -> bool {
        self.stages.iter().any(|stage| stage.rule.calls_function())
    }

    /// Bytes held back over all stages (for tests of the memory bound).
    pub fn held_bytes(&self) -> usize {
        self.stages.iter().map(|s| s.held.len()).sum()
    }

    /// Match candidates abandoned because they outgrew `max_match_bytes`.
    pub fn abandoned_matches(&self) -> u64 {
        self.stages.iter().map(|s| s.abandoned).sum()
    }

    /// For each rule, in order: whether it has replaced at least one match so far.
    pub fn matched_rules(&self) -> Vec<bool> {
        self.stages.iter().map(|s| s.matched).collect()
    }

    /// Each rule's label with the matches it replaced so far, in rule order (each member of a group of
    /// literal rules on its own).
    pub fn match_counts(&self) -> impl Iterator<Item = (&str, u64)> + '_ {
        self.stages.iter().flat_map(|s| -> Box<dyn Iterator<Item = (&str, u64)> + '_> {
            match &s.rule.inner.engine {
                Engine::Literals(set) => {
                    Box::new(set.members().iter().map(|m| m.label.as_str()).zip(s.members.matches.iter().copied()))
                }
                _ => Box::new(std::iter::once((s.rule.label(), s.matches))),
            }
        })
    }
}

/// Runs `input` through `stages` in order. A stage scans its input where it lies and copies only the
/// bytes it holds back; a stage that finishes inside `input` hands the rest on untouched.
fn feed(
    stages: &mut [Stage],
    outputs: &mut [Vec<u8>],
    input: &[u8],
    last: bool,
    out: &mut Vec<u8>,
) -> Result<(), ReplaceError> {
    let Some((stage, later)) = stages.split_first_mut() else {
        out.extend_from_slice(input);
        return Ok(());
    };
    let Some((output, later_outputs)) = outputs.split_first_mut() else {
        let untouched = stage.process(input, last, out)?;
        out.extend_from_slice(&input[untouched..]);
        return Ok(());
    };
    if stage.passes_through() {
        return feed(later, later_outputs, input, last, out);
    }
    output.clear();
    // Rewriting rarely grows a body much: one allocation instead of repeated doubling.
    output.reserve(input.len() + input.len() / 8);
    let untouched = stage.process(input, last, output)?;
    if let Some(upto) = stage.unchanged.take() {
        return feed(later, later_outputs, &input[..upto], last, out);
    }
    if untouched == input.len() {
        feed(later, later_outputs, output, last, out)
    } else {
        feed(later, later_outputs, output, false, out)?;
        feed(later, later_outputs, &input[untouched..], last, out)
    }
}

/// Applies `rules` to a whole body at once (the `rewrite()` helper and the reference in tests).
pub fn rewrite_bytes(
    input: &[u8],
    rules: &[Rule],
    local_host: &str,
    max_match_bytes: usize,
) -> Result<Vec<u8>, ReplaceError> {
    let mut rewriter = Rewriter::new(rules, local_host, max_match_bytes);
    let mut out = Vec::with_capacity(input.len() + input.len() / 8);
    // One call with the end known: the scan stays linear whatever the rules.
    feed(&mut rewriter.stages, &mut rewriter.outputs, input, true, &mut out)?;
    Ok(out)
}

/// One rule's streaming state.
struct Stage {
    rule: Rule,
    local_host: String,
    max_match: usize,
    /// Bytes held back from earlier chunks: they may still belong to a match.
    held: Vec<u8>,
    /// The byte before `held` (or before the next chunk when nothing is held).
    before: Option<u8>,
    /// During a scan: how much of the hay is already written out.
    emitted: usize,
    /// Bytes at the start of the held data that are already written out: a rule that works on UTF-16 units
    /// holds back whole characters, also when a match took the high half of one.
    carried: usize,
    /// This call wrote a lone surrogate (see `hay::unit_text`): the output needs `resolve_surrogates`.
    surrogates: bool,
    /// A high surrogate the last output ended with, which the next output may pair with.
    pending_high: Option<u16>,
    /// Where the next match search starts (JS `lastIndex`), relative to the hay.
    search_from: usize,
    /// After an empty match JS moves `lastIndex` one character on before searching again.
    skip_char: bool,
    /// A non-global rule that has replaced its one match, or a global one that can match no more.
    done: bool,
    /// For a function replacement only (string rules never count): the UTF-16 units of the stage's
    /// input up to `counted` in the hay, for the offsets the function is given.
    utf16: Option<Utf16Counter>,
    counted: usize,
    captures: Option<(Captures, regex_automata::meta::Cache)>,
    abandoned: u64,
    /// Some match was replaced (what the skip table remembers, see `crate::skip`).
    matched: bool,
    /// Matches replaced so far (the request log and `stats()`'s per-rule counters).
    matches: u64,
    /// The request and response shown to a replacement function.
    exchange: Option<Arc<Exchange>>,
    /// The page's Content-Security-Policy amendment: the snippet and meta rules write with it.
    page_policy: Option<Arc<PagePolicy>>,
    /// A group of literal rules: each member's state, and the member of the match being replaced.
    members: MemberStates,
    /// The stage has a next one, which may read its input in place of an unchanged output.
    pass_on_unchanged: bool,
    /// Set by a call that replaced nothing in a chunk it searched in place: its output is the chunk's
    /// first bytes, up to here (the rest is held), and was not copied.
    unchanged: Option<usize>,
    /// The view of the hay that a rule's automata read (lines rules, `RegexRule::low_view`), reused across
    /// chunks.
    view: Vec<u8>,
}

enum Scan {
    /// The leftmost match is final and ends at `end`; the scan stopped at `died`.
    Match {
        end: usize,
        died: usize,
    },
    NoMatch,
    /// The data ends while a match may still start or grow.
    Undecided,
}

impl Stage {
    fn new(rule: Rule, local_host: &str, max_match: usize) -> Stage {
        let (captures, utf16) = match &rule.inner.engine {
            Engine::Regex(re) => (
                match &re.captures {
                    Some(GroupFinder::Meta(c)) => Some((c.create_captures(), c.create_cache())),
                    _ => None,
                },
                matches!(re.replacement, Replacement::Function(_)).then(Utf16Counter::default),
            ),
            Engine::Links(_) | Engine::Literals(_) => (None, None),
        };
        let members = match &rule.inner.engine {
            Engine::Literals(set) => MemberStates {
                done: vec![false; set.members().len()],
                matches: vec![0; set.members().len()],
                current: 0,
            },
            _ => MemberStates::default(),
        };
        Stage {
            rule,
            local_host: local_host.to_string(),
            max_match,
            held: Vec::new(),
            before: None,
            emitted: 0,
            carried: 0,
            surrogates: false,
            pending_high: None,
            search_from: 0,
            skip_char: false,
            done: false,
            utf16,
            counted: 0,
            captures,
            abandoned: 0,
            matched: false,
            matches: 0,
            exchange: None,
            page_policy: None,
            members,
            pass_on_unchanged: false,
            unchanged: None,
            view: Vec::new(),
        }
    }

    fn passes_through(&self) -> bool {
        self.done && self.held.is_empty()
    }

    /// Rewrites what is final of `held + input` into `out`. Returns where the untouched rest of `input`
    /// starts when the stage finished inside it (the caller passes that rest on as it is), otherwise
    /// `input.len()`.
    fn process(&mut self, input: &[u8], last: bool, out: &mut Vec<u8>) -> Result<usize, ReplaceError> {
        let mark = out.len();
        if let Some(high) = self.pending_high.take() {
            push_surrogate(out, high);
            self.surrogates = true;
        }
        let result = self.process_halves(input, last, out);
        if std::mem::take(&mut self.surrogates) {
            // Only output that more output follows may end waiting for a low half.
            let more = !last && !self.done && result.as_ref().is_ok_and(|&untouched| untouched == input.len());
            self.pending_high = resolve_surrogates(out, mark, more);
        }
        result
    }

    /// [`Stage::process`] with split halves of astral characters left as lone surrogates.
    fn process_halves(&mut self, input: &[u8], last: bool, out: &mut Vec<u8>) -> Result<usize, ReplaceError> {
        let mut view = std::mem::take(&mut self.view);
        let result = self.process_viewed(input, last, out, &mut view);
        self.view = view;
        result
    }

    /// [`Stage::process_halves`] with `view` as the buffer of the rule's view of the hay, if it has one.
    fn process_viewed(
        &mut self,
        input: &[u8],
        last: bool,
        out: &mut Vec<u8>,
        view: &mut Vec<u8>,
    ) -> Result<usize, ReplaceError> {
        if self.done {
            out.extend_from_slice(&self.held);
            self.held.clear();
            return Ok(0);
        }
        let wrote_before = !out.is_empty();
        let mut held = std::mem::take(&mut self.held);
        // With nothing held the chunk is searched where it lies; otherwise it joins the held bytes.
        let in_place = held.is_empty();
        if !in_place {
            held.extend_from_slice(input);
        }
        let data = if in_place { input } else { &held[..] };
        let low_view = match &self.rule.inner.engine {
            Engine::Regex(re) => re.low_view.as_ref(),
            Engine::Links(_) | Engine::Literals(_) => None,
        };
        let hay = if self.lines() {
            // The end of a U+2028 may still be on its way: until then its first bytes are held.
            let data = if last { data } else { &data[..lines::settled_len(data)] };
            lines::line_view(data, view);
            if let Some(low_view) = low_view {
                low_view.apply(data, view);
            }
            Hay { bytes: data, view, before: self.before }
        } else if let Some(low_view) = low_view {
            view.clear();
            view.extend_from_slice(data);
            low_view.apply(data, view);
            Hay { bytes: data, view, before: self.before }
        } else {
            Hay { bytes: data, view: data, before: self.before }
        };
        let units = self.units();
        self.emitted = std::mem::take(&mut self.carried);
        let held_from = match self.scan(hay, last, out) {
            Ok(at) => at,
            Err(err) => {
                self.done = true;
                return Err(err);
            }
        };
        if self.done {
            if in_place {
                self.held = held;
                // A low half whose high half went with the match is written alone; the rest goes as it is.
                if units && low_half(input, self.emitted) {
                    push_surrogate(out, surrogates_of(input, self.emitted - 3).1);
                    self.surrogates = true;
                    return Ok(self.emitted + 1);
                }
                return Ok(self.emitted);
            }
            self.surrogates |= emit_plain(out, &held, self.emitted, held.len(), units);
            held.clear();
            self.held = held;
            return Ok(input.len());
        }
        // A rule whose matches may start on a low half holds a character cut by the end of the data (or by
        // where holding starts) whole: whether a match splits it is only known with the bytes after it.
        let whole_chars = matches!(&self.rule.inner.engine, Engine::Regex(re) if re.low_half_starts);
        let held_from = if whole_chars { char_start(hay.bytes, held_from) } else { held_from };
        // Nothing replaced in a chunk searched where it lies: the next stage reads the chunk itself, not
        // a copy (most rules find nothing in most chunks).
        let untouched_chunk = self.pass_on_unchanged
            && in_place
            && !wrote_before
            && out.is_empty()
            && self.emitted == 0
            && matches!(match_text(hay.bytes, 0, held_from, units), std::borrow::Cow::Borrowed(_));
        if untouched_chunk {
            self.unchanged = Some(held_from);
        } else if self.emitted < held_from {
            self.surrogates |= emit_plain(out, hay.bytes, self.emitted, held_from, units);
        }
        self.carried = self.emitted.saturating_sub(held_from);
        self.before = hay.look_behind(held_from);
        if let Some(counter) = &mut self.utf16 {
            if self.counted < held_from {
                counter.feed(&hay.bytes[self.counted..held_from]);
            }
        }
        self.counted = self.counted.saturating_sub(held_from);
        self.search_from -= held_from;
        if in_place {
            held.extend_from_slice(&input[held_from..]);
        } else {
            held.drain(..held_from);
        }
        self.held = held;
        Ok(input.len())
    }

    /// Whether the rule's automata read the line view (see `super::lines`).
    fn lines(&self) -> bool {
        matches!(&self.rule.inner.engine, Engine::Regex(re) if re.lines)
    }

    /// Whether the rule works on UTF-16 code units (a JS regex without `u`).
    fn units(&self) -> bool {
        matches!(&self.rule.inner.engine, Engine::Regex(re) if re.units)
    }

    /// Replaces every match that is final; returns the first byte that must stay held back.
    fn scan(&mut self, hay: Hay, last: bool, out: &mut Vec<u8>) -> Result<usize, ReplaceError> {
        let len = hay.bytes.len();
        let units = self.units();
        loop {
            if self.skip_char {
                if self.search_from >= len {
                    // JS: `lastIndex` past the end stops the search.
                    self.done |= last;
                    return Ok(len);
                }
                // One character on, or one UTF-16 unit: from an astral character's start to its low half.
                let width = match hay.bytes[self.search_from] {
                    0xF0..=0xF4 if units => 3,
                    byte => utf8_width(byte),
                };
                if self.search_from + width > len && !last {
                    return Ok(self.search_from);
                }
                self.search_from = (self.search_from + width).min(len);
                self.skip_char = false;
            }
            match self.next_match(hay, last) {
                Next::Match { start, end } => {
                    self.matched = true;
                    self.matches += 1;
                    self.surrogates |= emit_plain(out, hay.bytes, self.emitted, start, units);
                    self.replace(hay, start, end, out)?;
                    self.emitted = end;
                    self.search_from = end;
                    self.skip_char = end == start;
                    let finished = match &self.rule.inner.engine {
                        Engine::Literals(set) => self.members.replaced(set),
                        _ => !self.rule.inner.global,
                    };
                    if finished {
                        self.done = true;
                        return Ok(len);
                    }
                }
                Next::Pending(at) => {
                    self.search_from = at;
                    return Ok(at);
                }
                Next::Exhausted => {
                    self.search_from = len;
                    self.done |= last;
                    return Ok(len);
                }
            }
        }
    }

    fn next_match(&mut self, hay: Hay, last: bool) -> Next {
        let mut abandoned = 0;
        let Stage { rule, search_from, max_match, members, .. } = self;
        let next = match &rule.inner.engine {
            Engine::Literals(set) => {
                let (next, member) =
                    set.next_match(hay.bytes, *search_from, last, *max_match, &members.done, &mut abandoned);
                members.current = member;
                next
            }
            Engine::Links(matcher) => matcher.next_match(hay.bytes, *search_from, last, *max_match, &mut abandoned),
            Engine::Regex(re) => {
                RegexSearch { re, hay, last, max_match: *max_match }.next_match(*search_from, &mut abandoned)
            }
        };
        self.abandoned += abandoned;
        next
    }
    /// Writes the replacement of `hay.bytes[start..end]`.
    fn replace(&mut self, hay: Hay, start: usize, end: usize, out: &mut Vec<u8>) -> Result<(), ReplaceError> {
        let units = self.units();
        let Stage { rule, captures, local_host, max_match, utf16, counted, exchange, surrogates, page_policy, .. } =
            self;
        let whole = &hay.bytes[start..end];
        let re = match &rule.inner.engine {
            Engine::Links(matcher) => {
                matcher.write_replacement(whole, local_host, out);
                return Ok(());
            }
            Engine::Literals(set) => {
                out.extend_from_slice(&set.members()[self.members.current].output);
                return Ok(());
            }
            Engine::Regex(re) => re,
        };
        // Halves of an astral character cut off by the match (rules without `u`) are lone surrogates in `$&`
        // and groups, as in JavaScript.
        let text = |bytes, from, to| match_text(bytes, from, to, units);
        let whole_text = text(hay.bytes, start, end);
        *surrogates |= matches!(whole_text, std::borrow::Cow::Owned(_));
        let whole = &whole_text[..];
        let Some(finder) = re.captures.as_ref() else {
            match &re.replacement {
                Replacement::Template(t) => t.expand(whole, |_| None, |_| None, out),
                Replacement::EncodedLocalOrigin { scheme } => {
                    Replacement::write_encoded_origin(scheme, local_host, out)
                }
                Replacement::Snippet(snippet) => {
                    out.extend_from_slice(whole);
                    match page_policy.as_ref().and_then(|page| page.snippet(snippet)) {
                        Some(nonced) => out.extend_from_slice(nonced.as_bytes()),
                        None => out.extend_from_slice(snippet.as_bytes()),
                    }
                }
                Replacement::MetaPolicy => match page_policy.as_ref().and_then(|page| page.amend_meta(whole)) {
                    Some(amended) => out.extend_from_slice(&amended),
                    None => out.extend_from_slice(whole),
                },
                Replacement::Function(_) => {}
            }
            return Ok(());
        };
        // The captures search reads what the automata read, so a match at its very start needs a copy that
        // begins with the byte before it (for `\b` and `^`). The DFA run from a match's start dies within the
        // cap, so the cap plus one look-ahead byte is all the search can read.
        let joined;
        let (buf, base) = match hay.before {
            Some(byte) if start == 0 => {
                let upto = hay.view.len().min(*max_match + 2);
                joined = [&[byte][..], &hay.view[..upto]].concat();
                (&joined[..], 1)
            }
            _ => (hay.view, 0),
        };
        // Each group's span in `buf` (index 0: the whole match) and name.
        let (spans, names): (Vec<Option<std::ops::Range<usize>>>, Vec<Option<&str>>) = match finder {
            GroupFinder::Meta(regex) => {
                let Some((caps, cache)) = captures.as_mut() else {
                    return Err(ReplaceError {
                        rule: rule.inner.label.clone(),
                        message: "internal error: no captures".into(),
                    });
                };
                let input = Input::new(buf).span(start + base..buf.len()).anchored(Anchored::Yes);
                regex.search_captures_with(cache, &input, caps);
                debug_assert_eq!(caps.get_match().map(|m| m.end()), Some(end + base), "DFA and captures disagree");
                (
                    (0..caps.group_len()).map(|i| caps.get_group(i).map(|s| s.range())).collect(),
                    caps.group_info().pattern_names(PatternID::ZERO).collect(),
                )
            }
            GroupFinder::Js(js) => {
                let groups = js.captures(buf, start + base, end + base);
                debug_assert!(groups.is_some(), "DFA and JS captures disagree");
                let count = js.names().len();
                (
                    groups.map_or_else(|| vec![None; count], |g| g.into_iter().map(|g| g.map(|(a, b)| a..b)).collect()),
                    js.names().iter().map(|n| n.as_deref()).collect(),
                )
            }
        };
        let texts: Vec<Option<std::borrow::Cow<'_, [u8]>>> =
            spans.iter().map(|span| span.clone().map(|r| text(hay.bytes, r.start - base, r.end - base))).collect();
        *surrogates |= texts.iter().any(|t| matches!(t, Some(std::borrow::Cow::Owned(_))));
        let group = |i: usize| texts.get(i).and_then(|t| t.as_deref());
        match &re.replacement {
            Replacement::Template(t) => {
                t.expand(whole, group, |n| names.iter().position(|m| *m == Some(n)).and_then(group), out)
            }
            // Built without captures: handled above.
            Replacement::EncodedLocalOrigin { .. } | Replacement::Snippet(_) | Replacement::MetaPolicy => {
                return Err(ReplaceError { rule: rule.inner.label.clone(), message: "internal error: captures".into() })
            }
            Replacement::Function(f) => {
                // A lone surrogate reaches the function as U+FFFD (a Rust string cannot hold one).
                let text = |g: &[u8]| {
                    let mut g = g.to_vec();
                    resolve_surrogates(&mut g, 0, false);
                    String::from_utf8_lossy(&g).into_owned()
                };
                let groups: Vec<Option<String>> = (1..spans.len()).map(|i| group(i).map(text)).collect();
                let group_refs: Vec<Option<&str>> = groups.iter().map(|g| g.as_deref()).collect();
                let names = &names[1..];
                // Bytes are counted once each, from where the last match (or chunk) left off.
                let label = &rule.inner.label;
                // `Stage::new` gives every function rule a counter; were one missing, the body fails, not the process.
                let Some(counter) = utf16.as_mut() else {
                    return Err(ReplaceError {
                        rule: label.clone(),
                        message: "internal error: no offset counter".into(),
                    });
                };
                counter.feed(&hay.bytes[*counted..start]);
                *counted = start;
                let call = ReplaceCall {
                    exchange: exchange.as_ref(),
                    whole: &text(whole),
                    groups: &group_refs,
                    names: names.iter().any(Option::is_some).then_some(names),
                    offset: counter.units(),
                };
                let replaced = f.replace(&call).map_err(|message| ReplaceError { rule: label.clone(), message })?;
                out.extend_from_slice(replaced.as_bytes());
            }
        }
        Ok(())
    }
}

// The stage's own search: an unanchored scan, then the reverse DFA for the start, and for data that ends
// inside a possible match the prefix DFA, single attempts or the sweep.
impl RegexSearch<'_> {
    fn next_match(&self, from: usize, abandoned: &mut u64) -> Next {
        let hay = self.hay;
        let mut from = from;
        loop {
            let (end, died) = match self.scan_forward(from) {
                Scan::Match { end, died } => (end, died),
                Scan::NoMatch => return Next::Exhausted,
                Scan::Undecided => return self.pending_start(from, abandoned),
            };
            let start = self.match_start(from, end);
            if !hay.can_start(start, self.re.units) {
                // A match inside a UTF-8 character: JS never sees that position (but for the low half of an
                // astral character without `u`).
                from = start + 1;
                continue;
            }
            // The anchored run from `start` dies no later than the unanchored scan did: only when that
            // was past the cap may it have outgrown it. Then the starts from here on are settled by the
            // sweep, which stays linear however many of them outgrow the cap.
            if died - start > self.max_match {
                let mut steps = 0;
                return match self.attempt(start, &mut steps) {
                    Attempt::Match(checked) => {
                        debug_assert_eq!(checked, end);
                        Next::Match { start, end }
                    }
                    _ => self.sweep(start, abandoned),
                };
            }
            return Next::Match { start, end };
        }
    }

    /// Leftmost-first unanchored scan from `from`, linear in the data: finds the end of the leftmost
    /// match once it is final. While no match is in progress it skips to the next candidate position.
    fn scan_forward(&self, from: usize) -> Scan {
        let (re, hay, last) = (self.re, self.hay, self.last);
        let dfa = &re.dfa;
        let start_at = |at: usize| re.unanchored_starts.get(hay.look_behind(at));
        let hay = hay.view;
        let len = hay.len();
        let Some(mut at) = self.next_candidate(from) else { return Scan::NoMatch };
        let Some(mut state) = start_at(at) else { return Scan::NoMatch };
        let mut found = None;
        while at < len {
            state = dfa.next_state(state, hay[at]);
            at += 1;
            if dfa.is_special_state(state) {
                if dfa.is_match_state(state) {
                    found = Some(at - 1);
                } else if dfa.is_dead_state(state) || dfa.is_quit_state(state) {
                    return found.map_or(Scan::NoMatch, |end| Scan::Match { end, died: at - 1 });
                } else if dfa.is_start_state(state) && found.is_none() {
                    match self.next_candidate(at) {
                        None => return Scan::NoMatch,
                        Some(next) if next > at => {
                            at = next;
                            let Some(fresh) = start_at(at) else { return Scan::NoMatch };
                            state = fresh;
                        }
                        Some(_) => {}
                    }
                }
            }
        }
        if !last {
            return Scan::Undecided;
        }
        state = dfa.next_eoi_state(state);
        if dfa.is_match_state(state) {
            found = Some(len);
        }
        found.map_or(Scan::NoMatch, |end| Scan::Match { end, died: len })
    }

    /// The start of the leftmost match ending at `end`: the earliest start the reverse DFA accepts.
    fn match_start(&self, from: usize, end: usize) -> usize {
        let look_ahead = self.hay.view.get(end).copied();
        self.earliest_reverse_match(&self.re.reverse, from, end, look_ahead).unwrap_or(from)
    }

    /// Reads `hay[from..end]` backwards with an anchored reverse DFA; returns the earliest position at
    /// or after `from` where it matches. `look_ahead` is the byte after `end` (`None`: the end of the
    /// body, or not known yet).
    fn earliest_reverse_match(&self, rev: &Dfa, from: usize, end: usize, look_ahead: Option<u8>) -> Option<usize> {
        let hay = self.hay.view;
        let config = start::Config::new().anchored(Anchored::Yes).look_behind(look_ahead);
        let Ok(mut state) = rev.start_state(&config) else { return Some(from) };
        let mut earliest = None;
        let mut at = end;
        while at > from {
            at -= 1;
            state = rev.next_state(state, hay[at]);
            if rev.is_special_state(state) {
                if rev.is_match_state(state) {
                    earliest = Some(at + 1);
                } else if rev.is_dead_state(state) || rev.is_quit_state(state) {
                    return earliest;
                }
            }
        }
        // Matches are reported one byte late: one more step says whether one starts at `from`.
        state = match self.hay.look_behind(from) {
            Some(byte) => rev.next_state(state, byte),
            None => rev.next_eoi_state(state),
        };
        if rev.is_match_state(state) {
            earliest = Some(from);
        }
        earliest
    }

    /// The data ends inside a possible match: the earliest candidate whose anchored run is still
    /// alive (everything before it can go out), or a match that became final meanwhile. Trying the
    /// candidates one by one is cheapest when their runs are short; once that has cost more than a
    /// few steps per byte, the sweep settles the rest in one pass.
    fn pending_start(&self, from: usize, abandoned: &mut u64) -> Next {
        let (dfa, bytes) = (&self.re.dfa, self.hay.view);
        let len = bytes.len();
        let mut from = from;
        // Within the cap no start can be abandoned, so the first start that may still match is the
        // answer, and reading back from the end finds it in a few steps.
        if let Some(prefixes) = self.re.prefix_reverse.as_ref().filter(|_| len - from <= self.max_match) {
            // With no such start, only the end of the data is left to try.
            // The byte after the data is not known yet; live runs never end with a look-around.
            from = self.earliest_reverse_match(prefixes, from, len, None).unwrap_or(len);
        }
        let budget = 2 * (len - from) + 64;
        let mut steps = 0;
        while from <= len {
            let Some(at) = self.next_candidate(from) else { return Next::Exhausted };
            if let Some(&byte) = bytes.get(at) {
                // Most starts die on their first byte: that costs one lookup, not an attempt.
                let alive = self.hay.can_start(at, self.re.units)
                    && self
                        .re
                        .anchored_starts
                        .get(self.hay.look_behind(at))
                        .is_some_and(|state| !dfa.is_dead_state(dfa.next_state(state, byte)));
                if !alive {
                    from = at + 1;
                    continue;
                }
            }
            if steps > budget {
                return self.sweep(at, abandoned);
            }
            match self.attempt(at, &mut steps) {
                Attempt::Match(end) => return Next::Match { start: at, end },
                Attempt::Alive => return Next::Pending(at),
                Attempt::Abandoned => *abandoned += 1,
                Attempt::NoMatch => {}
            }
            from = at + 1;
        }
        Next::Exhausted
    }

    /// Its index (up to ~60 bytes per start still in play, at most `max_match + 1` of them) lives only
    /// for this call: sweeps are rare, and a stage should not keep that memory.
    fn sweep(&self, from: usize, abandoned: &mut u64) -> Next {
        Sweep::default().first_viable(self, from, abandoned)
    }
}

/// The first viable start from `from`, found three ways: by trying every candidate in turn (the
/// reference), by the sweep (both with the count of abandoned starts), and by a stage's own search
/// (unanchored scan, then the prefix DFA or the sweep at the end of the data).
#[cfg(test)]
pub(super) fn first_viable_three_ways(
    re: &super::rule::RegexRule,
    bytes: &[u8],
    before: Option<u8>,
    from: usize,
    last: bool,
    max_match: usize,
) -> ((Next, u64), (Next, u64), Next) {
    let search = RegexSearch { re, hay: Hay { bytes, view: bytes, before }, last, max_match };
    let len = bytes.len();
    let naive = (|| {
        let mut abandoned = 0;
        let mut at = from;
        while at <= len {
            let Some(candidate) = search.next_candidate(at) else { break };
            if !search.hay.can_start(candidate, re.units) {
                at = candidate + 1;
                continue;
            }
            match search.attempt(candidate, &mut 0) {
                Attempt::Match(end) => return (Next::Match { start: candidate, end }, abandoned),
                Attempt::Alive => return (Next::Pending(candidate), abandoned),
                Attempt::Abandoned => abandoned += 1,
                Attempt::NoMatch => {}
            }
            at = candidate + 1;
        }
        (Next::Exhausted, abandoned)
    })();
    let mut abandoned = 0;
    let swept = search.sweep(from, &mut abandoned);
    (naive, (swept, abandoned), search.next_match(from, &mut 0))
}

/// `bytes[from..to]`, a match or a group; see [`unit_text`] for a rule that works on UTF-16 units.
fn match_text(bytes: &[u8], from: usize, to: usize, units: bool) -> std::borrow::Cow<'_, [u8]> {
    if units {
        unit_text(bytes, from, to)
    } else {
        std::borrow::Cow::Borrowed(&bytes[from..to])
    }
}

/// Writes `bytes[from..to]`, text outside any match; for a rule that works on UTF-16 units, a half of an astral
/// character cut off by a match at either edge is a lone surrogate (see [`unit_text`]). Returns whether one was
/// written.
fn emit_plain(out: &mut Vec<u8>, bytes: &[u8], from: usize, to: usize, units: bool) -> bool {
    let text = match_text(bytes, from, to, units);
    out.extend_from_slice(&text);
    matches!(text, std::borrow::Cow::Owned(_))
}
