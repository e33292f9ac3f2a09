//! One rule's streaming state ([`Stage`]): the hold-back bookkeeping at chunk edges, the loop that
//! replaces each final match, and what it writes in a match's place.
//!
//! A stage emits every byte that can no longer belong to a match and holds back the rest: the bytes from
//! the earliest start whose anchored DFA run is still alive at the end of the data seen so far. A match
//! is replaced only once the DFA has died (or the body has ended), which is when leftmost-first
//! semantics make it final. Finding the next match is the engine's: a regex rule's in
//! [`super::next_match`], a group of literals' in `literals`, the link rule's in `links`.

use regex_automata::util::captures::Captures;

use super::hay::{
    char_start, emit_plain, keep_tail, low_half, match_text, push_surrogate, resolve_surrogates, surrogates_of,
    utf8_width, Hay, Next,
};
use super::match_groups::{match_groups, MatchGroups};
use std::sync::Arc;

use super::literal_run::Progress;
use super::literals::MemberStates;
use super::replacement::{Exchange, ReplaceCall, Replacement, Utf16Counter};
use super::rule::{Engine, Rule};
use super::search::{RegexSearch, Run};
use super::view::HeldView;
use super::{lines, links};
use crate::csp::PagePolicy;
use crate::error::ReplaceError;

/// One rule's streaming state.
pub(super) struct Stage {
    pub(super) rule: Rule,
    pub(super) local_host: String,
    pub(super) max_match: usize,
    /// Bytes held back from earlier chunks: they may still belong to a match.
    pub(super) held: Vec<u8>,
    /// The byte before `held` (or before the next chunk when nothing is held).
    pub(super) before: Option<u8>,
    /// The rule's look-behind (see `Rule::look_behind_len`): the last bytes of its input before `held`.
    tail: Vec<u8>,
    /// During a scan: how much of the hay is already written out.
    emitted: usize,
    /// Bytes at the start of the held data that are already written out: a rule that works on UTF-16 units
    /// holds back whole characters, also when a match took the high half of one.
    pub(super) carried: usize,
    /// This call wrote a lone surrogate (see `hay::unit_text`): the output needs `resolve_surrogates`.
    surrogates: bool,
    /// A high surrogate the last output ended with, which the next output may pair with.
    pub(super) pending_high: Option<u16>,
    /// Where the next match search starts (JS `lastIndex`), relative to the hay.
    pub(super) search_from: usize,
    /// After an empty match JS moves `lastIndex` one character on before searching again.
    pub(super) skip_char: bool,
    /// A non-global rule that has replaced its one match, or a global one that can match no more.
    pub(super) done: bool,
    /// For a function replacement only (string rules never count): the UTF-16 units of the stage's
    /// input up to `counted` in the hay, for the offsets the function is given.
    utf16: Option<Utf16Counter>,
    counted: usize,
    /// The captures search's state, for each member of a group of regex rules (one for a rule on its own),
    /// made when first needed.
    captures: Vec<Option<(Captures, regex_automata::meta::Cache)>>,
    pub(super) abandoned: u64,
    /// Matches replaced so far (the request log and `stats()`'s per-rule counters).
    matches: u64,
    /// The request and response shown to a replacement function.
    pub(super) exchange: Option<Arc<Exchange>>,
    /// The page's Content-Security-Policy amendment: the snippet and meta rules write with it.
    pub(super) page_policy: Option<Arc<PagePolicy>>,
    /// A group of literal or regex rules: each member's state, and the member of the match being replaced.
    pub(super) members: MemberStates,
    /// The stage has a next one, which may read its input in place of an unchanged output.
    pub(super) pass_on_unchanged: bool,
    /// Set by a call that replaced nothing in a chunk it searched in place: its output is the chunk's
    /// first bytes, up to here (the rest is held), and was not copied.
    unchanged: Option<usize>,
    /// The view of the hay that a rule's automata read (lines rules, `RegexRule::low_view`), kept for the
    /// held bytes.
    view: HeldView,
    /// A regex rule's anchored run from the start it holds back from, as far as read (`search::Run`), and
    /// where its lookaheads have read in the current hay (`look_around::LookMemo`).
    pub(super) run: Option<Run>,
    look_memo: super::look_around::LookMemo,
    /// Literal rules that shared a search must run in turn from the held bytes on (see `in_turn`).
    pub(super) in_turn: bool,
}

impl Stage {
    pub(super) fn new(rule: Rule, local_host: &str, max_match: usize) -> Stage {
        let (captures, utf16) = match &rule.inner.engine {
            Engine::Regex(re) => (
                // Made at a rule's first match with groups: most members of a group never match a body.
                (0..re.members.len().max(1)).map(|_| None).collect(),
                matches!(re.replacement, Replacement::Function(_)).then(Utf16Counter::default),
            ),
            Engine::Links(_) | Engine::Origins(_) | Engine::Literals(_) => (Vec::new(), None),
        };
        let member_states =
            |count: usize| MemberStates { done: vec![false; count], matches: vec![0; count], current: 0 };
        let members = match &rule.inner.engine {
            Engine::Literals(set) => member_states(set.members().len()),
            Engine::Regex(re) if !re.members.is_empty() => member_states(re.members.len()),
            _ => MemberStates::default(),
        };
        Stage {
            rule,
            local_host: local_host.to_string(),
            max_match,
            held: Vec::new(),
            before: None,
            tail: Vec::new(),
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
            matches: 0,
            exchange: None,
            page_policy: None,
            members,
            pass_on_unchanged: false,
            unchanged: None,
            view: HeldView::default(),
            run: None,
            look_memo: Default::default(),
            in_turn: false,
        }
    }

    /// Whether the rule replaces through a function: then a step may wait on another thread.
    pub(super) fn calls_function(&self) -> bool {
        self.rule.calls_function()
    }

    /// Bytes held back from earlier chunks.
    pub(super) fn held_bytes(&self) -> usize {
        self.held.len()
    }

    /// Match candidates abandoned because they outgrew the cap.
    pub(super) fn abandoned(&self) -> u64 {
        self.abandoned
    }

    /// Marks members of a group as done before the first byte: their search is left out.
    pub(super) fn skip_members(&mut self, skipped: &[bool]) {
        for (done, &skip) in self.members.done.iter_mut().zip(skipped) {
            *done |= skip;
        }
    }

    /// The rule's label with the matches it replaced so far (each member of a group of literal rules on
    /// its own).
    pub(super) fn match_counts(&self) -> Box<dyn Iterator<Item = (&str, u64)> + '_> {
        match &self.rule.inner.engine {
            Engine::Literals(set) if set.is_alternation() => {
                Box::new(std::iter::once((self.rule.label(), self.members.matches.iter().sum())))
            }
            Engine::Literals(set) => {
                Box::new(set.members().iter().map(|m| m.label.as_str()).zip(self.members.matches.iter().copied()))
            }
            Engine::Regex(re) if !re.members.is_empty() => {
                Box::new(re.members.iter().map(Rule::label).zip(self.members.matches.iter().copied()))
            }
            _ => Box::new(std::iter::once((self.rule.label(), self.matches))),
        }
    }

    /// After a [`Stage::process`] that replaced nothing in a chunk it searched in place: the length of
    /// the chunk's first bytes that are its output (not copied; the rest is held).
    pub(super) fn take_unchanged(&mut self) -> Option<usize> {
        self.unchanged.take()
    }

    pub(super) fn passes_through(&self) -> bool {
        self.done && self.held.is_empty()
    }

    /// Rewrites what is final of `held + input` into `out`. Returns where the untouched rest of `input`
    /// starts when the stage finished inside it (the caller passes that rest on as it is), otherwise
    /// `input.len()`.
    pub(super) fn process(&mut self, input: &[u8], last: bool, out: &mut Vec<u8>) -> Result<usize, ReplaceError> {
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

    /// [`Stage::process_halves`] with `view`, the rule's view of the hay if it has one.
    fn process_viewed(
        &mut self,
        input: &[u8],
        last: bool,
        out: &mut Vec<u8>,
        view: &mut HeldView,
    ) -> Result<usize, ReplaceError> {
        if self.done {
            out.extend_from_slice(&self.held);
            self.held.clear();
            self.forget_held(view);
            return Ok(0);
        }
        let wrote_before = !out.is_empty();
        let mut held = std::mem::take(&mut self.held);
        // With nothing held the chunk is searched where it lies; otherwise it joins the held bytes.
        let in_place = held.is_empty();
        if in_place {
            self.forget_held(view);
        } else {
            held.extend_from_slice(input);
        }
        let data = if in_place { input } else { &held[..] };
        let low_view = match &self.rule.inner.engine {
            Engine::Regex(re) => re.low_view.as_ref(),
            Engine::Links(_) | Engine::Origins(_) | Engine::Literals(_) => None,
        };
        let viewing = self.lines() || low_view.is_some();
        // The end of a U+2028 may still be on its way: until then its first bytes are held.
        let data = if self.lines() && !last { &data[..lines::settled_len(data)] } else { data };
        let mut tail = std::mem::take(&mut self.tail);
        self.look_memo.clear();
        let hay = Hay {
            bytes: data,
            view: if viewing { view.of(data, self.lines(), low_view) } else { data },
            before: self.before,
            tail: &tail,
        };
        let hay_len = hay.bytes.len();
        let units = self.units();
        self.emitted = std::mem::take(&mut self.carried);
        let held_from = match self.scan(hay, last, out) {
            Ok(at) => at,
            Err(err) => {
                self.done = true;
                self.forget_held(view);
                return Err(err);
            }
        };
        if self.done {
            self.forget_held(view);
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
        if let Engine::Regex(re) = &self.rule.inner.engine {
            if let Some(looks) = &re.looks {
                looks.settle(&mut self.look_memo, &hay, held_from);
            }
        }
        if let Some(counter) = &mut self.utf16 {
            if self.counted < held_from {
                counter.feed(&hay.bytes[self.counted..held_from]);
            }
        }
        keep_tail(&mut tail, &data[..held_from], self.rule.look_behind_len());
        self.tail = tail;
        self.counted = self.counted.saturating_sub(held_from);
        self.search_from -= held_from;
        // The run and the view go on with the held bytes: both lose what is written out.
        self.run = self.run.filter(|_| !last).and_then(|run| run.after_written(held_from));
        view.hold_from(held_from, hay_len);
        if in_place {
            held.extend_from_slice(&input[held_from..]);
        } else {
            held.drain(..held_from);
        }
        self.held = held;
        Ok(input.len())
    }

    /// Nothing is held, or what is held is not searched again: the run and the view of the held bytes go.
    fn forget_held(&mut self, view: &mut HeldView) {
        self.run = None;
        view.forget();
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
        if let Engine::Literals(set) = &self.rule.inner.engine {
            // Most of a literal set's matches in one loop; the search one match at a time goes on from there.
            let at = Progress::at(self.search_from, self.emitted, self.matches);
            let run = set.replace_run(hay, at, (last, self.max_match), &mut self.members, out, &mut self.abandoned);
            (self.search_from, self.emitted, self.matches, self.done) =
                (run.from, run.emitted, run.replaced, run.finished);
            if self.done {
                return Ok(len);
            }
        }
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
                    let member_global = match self.group_member(hay, start, end)? {
                        // A first-match-only member that has had its match leaves the others as they are; no
                        // other member's match can start inside one (see `regex_groups`).
                        Some(_) if self.members.done[self.members.current] => {
                            self.search_from = end;
                            continue;
                        }
                        Some(global) => Some(global),
                        None => None,
                    };
                    self.matches += 1;
                    self.surrogates |= emit_plain(out, hay.bytes, self.emitted, start, units);
                    self.replace(hay, last, (start, end), out)?;
                    self.emitted = end;
                    self.search_from = end;
                    self.skip_char = end == start;
                    let finished = match (&self.rule.inner.engine, member_global) {
                        (Engine::Literals(set), _) => self.members.replaced(set),
                        (_, Some(global)) => self.members.replaced_member(global),
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
                Next::InTurn(at) => {
                    // Held from `at` for the rules in turn, which take this stage's place (`in_turn`).
                    self.in_turn = true;
                    self.search_from = at;
                    return Ok(at);
                }
                Next::Exhausted => {
                    self.search_from = len;
                    self.done |= last || self.rule.is_sticky();
                    return Ok(len);
                }
            }
        }
    }

    /// For a group of regex rules: notes which member matched `hay.bytes[start..end]` as the current one and
    /// returns whether that member is global. `None` for any other stage.
    fn group_member(&mut self, hay: Hay, start: usize, end: usize) -> Result<Option<bool>, ReplaceError> {
        let Engine::Regex(group) = &self.rule.inner.engine else { return Ok(None) };
        if group.members.is_empty() {
            return Ok(None);
        }
        let index = group.pattern_at(hay, start, end).filter(|&index| index < self.members.done.len());
        let global = index.and_then(|index| Some(group.members.get(index)?.inner.global));
        let (Some(index), Some(global)) = (index, global) else { return Err(no_member(&self.rule)) };
        self.members.current = index;
        Ok(Some(global))
    }

    fn next_match(&mut self, hay: Hay, last: bool) -> Next {
        let mut abandoned = 0;
        let Stage { rule, search_from, emitted, max_match, members, .. } = self;
        let next = match &rule.inner.engine {
            Engine::Literals(set) => {
                let at = (*search_from, *emitted);
                let (next, member) = set.next_match(hay, at, last, *max_match, &members.done, &mut abandoned);
                members.current = member;
                next
            }
            Engine::Links(matcher) => matcher.next_match(hay.bytes, *search_from, last, *max_match, &mut abandoned),
            Engine::Origins(swap) => swap.next_match(hay.bytes, hay.before, *search_from, last),
            Engine::Regex(re) => RegexSearch { re, hay, last, max_match: *max_match }.next_match_resumed(
                *search_from,
                &mut abandoned,
                &mut self.run,
                &mut self.look_memo,
            ),
        };
        self.abandoned += abandoned;
        next
    }
    /// Writes the replacement of `hay.bytes[start..end]`.
    fn replace(
        &mut self,
        hay: Hay,
        last: bool,
        (start, end): (usize, usize),
        out: &mut Vec<u8>,
    ) -> Result<(), ReplaceError> {
        let units = self.units();
        let Stage {
            rule,
            captures,
            local_host,
            max_match,
            utf16,
            counted,
            exchange,
            surrogates,
            page_policy,
            look_memo,
            abandoned,
            ..
        } = self;
        let whole = &hay.bytes[start..end];
        let re = match &rule.inner.engine {
            Engine::Links(matcher) => {
                let in_value = links::opens_value_attribute(hay.tail, &hay.bytes[..start], links::LINK_LOOK_BEHIND);
                matcher.write_replacement(whole, local_host, in_value, out);
                return Ok(());
            }
            Engine::Origins(swap) => {
                swap.write_replacement(whole, out);
                return Ok(());
            }
            Engine::Literals(set) => {
                out.extend_from_slice(&set.members()[self.members.current].output);
                return Ok(());
            }
            Engine::Regex(re) if re.members.is_empty() => re,
            // The member that matched (see `group_member`), with its own template and captures search.
            Engine::Regex(group) => group.member(self.members.current).ok_or_else(|| no_member(rule))?,
        };
        // Halves of an astral character cut off by the match (rules without `u`) are lone surrogates in `$&`
        // and groups, as in JavaScript.
        let whole_text = match_text(hay.bytes, start, end, units);
        *surrogates |= matches!(whole_text, std::borrow::Cow::Owned(_));
        let whole = &whole_text[..];
        // A template that names no group needs none found (a look-around rule always has its program).
        let group_free = matches!(&re.replacement, Replacement::Template(t) if !t.needs_groups());
        if re.captures.is_none() || group_free {
            match &re.replacement {
                Replacement::Template(t) => t.expand(whole, |_| None, |_| None, out),
                Replacement::EncodedLocalOrigin { scheme } => {
                    Replacement::write_encoded_origin(scheme, local_host, out)
                }
                Replacement::Snippet(snippet) => {
                    out.extend_from_slice(whole);
                    if page_policy.as_ref().is_some_and(|page| page.withheld()) {
                        return Ok(());
                    }
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
        let cache = captures.get_mut(self.members.current);
        let MatchGroups { texts, names, lone, beyond_reach } =
            match_groups(re, &hay, last, (start, end), *max_match, (cache, look_memo), units).ok_or_else(|| {
                ReplaceError { rule: rule.inner.label.clone(), message: "internal error: no captures".into() }
            })?;
        if beyond_reach {
            // Its groups are not known: the match is given up on, as an over-long one is.
            out.extend_from_slice(whole);
            *abandoned += 1;
            return Ok(());
        }
        *surrogates |= lone;
        let group = |i: usize| texts.get(i).and_then(|t| t.as_deref());
        match &re.replacement {
            Replacement::Template(t) => {
                t.expand(whole, group, |n| names.iter().position(|m| m.as_deref() == Some(n)).and_then(group), out)
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
                let groups: Vec<Option<String>> = (1..texts.len()).map(|i| group(i).map(text)).collect();
                let group_refs: Vec<Option<&str>> = groups.iter().map(|g| g.as_deref()).collect();
                let names: Vec<Option<&str>> = names[1..].iter().map(|n| n.as_deref()).collect();
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
                    names: names.iter().any(Option::is_some).then_some(&names),
                    offset: counter.units(),
                };
                let replaced = f.replace(&call).map_err(|message| ReplaceError { rule: label.clone(), message })?;
                out.extend_from_slice(replaced.as_bytes());
            }
        }
        Ok(())
    }
}

fn no_member(rule: &Rule) -> ReplaceError {
    ReplaceError { rule: rule.inner.label.clone(), message: "internal error: no member of the group matched".into() }
}
