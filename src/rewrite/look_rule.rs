//! A rule with look-arounds (see `look_around`): built from its translated pattern, and searched by its
//! Pike VM program, whose look-arounds ask their automata.

use super::hay::Next;
use super::lines;
use super::look_around::{
    longest, BodyGroups, Edges, LookArounds, LookItem, LookMemo, MAX_LOOK_BEHIND, SHORT_LOOK_AHEAD,
};
use super::next_match::Scan;
use super::rule::{build_all_matches_dfa, build_dfas, parse, Dfa, Engine, GroupFinder, Rule, RuleReplacement, Units};
use super::search::{Attempt, RegexSearch};
use crate::error::RuleError;
use crate::rewrite::js_regex::{self, JsCaptures, JsFlags, Leftmost, LookSearch, LookSpec, Translated};
use regex_automata::dfa::Automaton;
use regex_automata::util::start;
use regex_automata::Anchored;
use regex_syntax::hir::{Hir, HirKind};

impl Rule {
    /// A regex rule whose translated pattern has look-arounds (see the module's comment).
    pub(super) fn with_looks(
        label: String,
        translated: Translated,
        flags: &JsFlags,
        replacement: RuleReplacement,
    ) -> Result<Rule, RuleError> {
        let refuse = |what: &str, offset: usize| RuleError::from(js_regex::unsupported(what, offset, ""));
        let first = translated.looks[0].offset;
        if translated.low_view.is_some() {
            return Err(refuse("look-around in a pattern that names lone low surrogates", first));
        }
        let relaxed = js_regex::without_placeholders(&translated.pattern);
        let bodies = translated.looks.iter().map(|look| parse(&look.pattern)).collect::<Result<Vec<_>, _>>()?;
        let pattern = parse(&translated.pattern)?;
        // The look-arounds inside each body (each comes before its own in the list), and those inside one.
        let inside: Vec<Vec<usize>> = bodies.iter().map(looks_inside).collect();
        let mut inner = vec![false; bodies.len()];
        inside.iter().flatten().for_each(|&j| inner[j] = true);
        // Multi-line anchors anywhere: everything reads the line view (see `lines`), so it is written in it.
        let on_lines = std::iter::once(&pattern).chain(&bodies).any(lines::uses_lines);
        let in_view = |hir: Hir| if on_lines { lines::line_view_hir(&hir) } else { hir };
        let mut items: Vec<LookItem> = Vec::with_capacity(translated.looks.len());
        let mut behind_len = 0;
        let leading = leading_look(&pattern).filter(|&k| {
            let look = &translated.looks[k];
            !look.ahead && !look.negative && inside[k].is_empty()
        });
        let edges = edge_looks(&pattern, &translated.looks).filter(|_| !flags.sticky);
        // Bytes before its position that each look-around's run may read (`None`: no bound within the most kept).
        let mut read_back: Vec<Option<usize>> = Vec::with_capacity(bodies.len());
        for (k, (look, hir)) in translated.looks.iter().zip(bodies).enumerate() {
            let hir = in_view(hir);
            let own = if look.ahead { Some(0) } else { longest(&hir) };
            let from_inside = inside[k].iter().try_fold(0, |most: usize, &j| Some(most.max(read_back[j]?)));
            let back = own.zip(from_inside).and_then(|(a, b)| a.checked_add(b)).filter(|&len| len <= MAX_LOOK_BEHIND);
            read_back.push(back);
            let nested = !inside[k].is_empty();
            let mut carried = !look.ahead && back.is_none() && !nested && !inner[k];
            if let (true, Some(len)) = (!look.ahead || nested, back) {
                // The byte before, which tells the automaton the match has begun (one byte late), and three
                // more, which tell whether it begins inside a character.
                behind_len = behind_len.max(len + 4);
            }
            // A bounded lookbehind the pattern begins with is carried where it can be: its automaton then also
            // tells where a match may start (see `LookArounds::lead_from`).
            let lead_dfa = match leading == Some(k) && !carried && !flags.sticky {
                true => carried_dfa(&hir, look, !flags.unicode, on_lines).ok(),
                false => None,
            };
            carried |= lead_dfa.is_some();
            // A body's program, which reads it backward for a lookbehind.
            let body_program = |hir: &Hir| {
                let program = if look.ahead { JsCaptures::new(hir) } else { JsCaptures::reversed(hir) };
                program.map_err(|e| RuleError::TooComplex(e.0))
            };
            let dfa = if let Some(dfa) = lead_dfa {
                dfa
            } else if carried {
                carried_dfa(&hir, look, !flags.unicode, on_lines)?
            } else {
                // With look-arounds inside, the automaton of the body with them taken as holding.
                let relaxed =
                    if nested { in_view(parse(&js_regex::without_placeholders(&look.pattern))?) } else { hir.clone() };
                let (forward, reverse) = build_dfas(&[&js_regex::js_repetitions(&relaxed)], false)?;
                if look.ahead {
                    forward
                } else {
                    reverse
                }
            };
            let short = longest(&hir).is_some_and(|len| len <= SHORT_LOOK_AHEAD);
            // A negative look-around's groups are always undefined: its body did not match.
            let groups = match look.groups.is_empty() || look.negative {
                true => None,
                false => {
                    let mut program = body_program(&hir)?;
                    // The groups of the look-arounds inside, as the body's program numbers them.
                    let first = look.groups.start;
                    let relative = |item: &LookItem| Some(item.groups.as_ref()?.first.checked_sub(first)? + 1);
                    program.mark_look_groups(items.iter().map(relative).collect());
                    Some(BodyGroups { first, program })
                }
            };
            let nested = if nested { Some(body_program(&hir)?) } else { None };
            let reach = back.map(|len| len + 4);
            let (ahead, negative, inner) = (look.ahead, look.negative, inner[k]);
            items.push(LookItem { ahead, negative, dfa, short, groups, carried, nested, reach, inner });
        }
        let mut program = JsCaptures::new(&in_view(pattern)).map_err(|e| RuleError::TooComplex(e.0))?;
        program.mark_look_groups(items.iter().map(|item| item.groups.as_ref().map(|g| g.first)).collect());
        let units = Units::of(flags, None);
        let mut rule = Rule::compile_with(label, &relaxed, flags.global, units, replacement, on_lines)?;
        let inner = std::sync::Arc::get_mut(&mut rule.inner);
        let Some(Engine::Regex(re)) = inner.map(|inner| &mut inner.engine) else {
            return Err(RuleError::TooComplex("internal error: a look-around rule without its regex".into()));
        };
        // The program finds the matches, so it is there whatever the replacement needs.
        re.captures = Some(GroupFinder::Js(program));
        let lead = leading.filter(|&k| items[k].carried && !flags.sticky).map(|k| k as u32);
        let mut looks = LookArounds::new(items, behind_len, (!flags.unicode, on_lines), lead);
        // A rule that is its leading lookbehind and a pattern without look-arounds has one edge: with no look
        // after the middle, the middle's length does not matter.
        let lead_only = looks.lead_only().then_some(Edges { behind: lead, ahead: None });
        looks.edges = edges.or(lead_only);
        re.looks = Some(Box::new(looks));
        // Without `u` the program may hold back from a low half: the stage then holds characters whole.
        re.low_half_starts |= re.units;
        Ok(rule.sticky_if(flags.sticky))
    }

    /// How many bytes of its input before the held data the rule looks at: a link rule's `value=` check,
    /// a rule's lookbehinds. The stage keeps that many.
    pub(super) fn look_behind_len(&self) -> usize {
        match &self.inner.engine {
            Engine::Links(_) => super::links::LINK_LOOK_BEHIND,
            Engine::Regex(re) => re.looks.as_ref().map_or(0, |looks| looks.behind_len()),
            Engine::Literals(_) | Engine::Origins(_) => 0,
        }
    }
}

/// The look-arounds whose placeholders `hir` (a look-around's body) holds.
fn looks_inside(hir: &Hir) -> Vec<usize> {
    match hir.kind() {
        HirKind::Capture(cap) => match cap.name.as_deref().and_then(js_regex::look_index) {
            Some(k) => vec![k],
            None => looks_inside(&cap.sub),
        },
        HirKind::Concat(subs) | HirKind::Alternation(subs) => subs.iter().flat_map(looks_inside).collect(),
        HirKind::Repetition(rep) => looks_inside(&rep.sub),
        _ => Vec::new(),
    }
}

/// The look-around that every match of `hir` (a translated pattern) begins with, if one does: its placeholder
/// first in the pattern, whatever groups open around it.
fn leading_look(hir: &Hir) -> Option<usize> {
    match hir.kind() {
        HirKind::Concat(subs) => leading_look(subs.first()?),
        HirKind::Capture(cap) => match cap.name.as_deref().and_then(js_regex::look_index) {
            Some(k) => Some(k),
            None => leading_look(&cap.sub),
        },
        _ => None,
    }
}

/// The rule's shape when its pattern (translated) is a middle of one length between look-arounds at its edges
/// (see [`Edges`]).
fn edge_looks(hir: &Hir, looks: &[LookSpec]) -> Option<Edges> {
    let placeholder = |hir: &Hir| match hir.kind() {
        HirKind::Capture(cap) => cap.name.as_deref().and_then(js_regex::look_index),
        _ => None,
    };
    let mut parts = match hir.kind() {
        HirKind::Concat(subs) => &subs[..],
        _ => std::slice::from_ref(hir),
    };
    let behind = parts.first().and_then(placeholder).filter(|&k| !looks[k].ahead);
    if behind.is_some() {
        parts = &parts[1..];
    }
    let ahead = parts.last().and_then(placeholder).filter(|&k| looks[k].ahead);
    if ahead.is_some() {
        parts = &parts[..parts.len() - 1];
    }
    let edges = usize::from(behind.is_some()) + usize::from(ahead.is_some());
    if edges != looks.len() || looks.iter().any(|look| !look.groups.is_empty()) {
        return None;
    }
    let middle = Hir::concat(parts.to_vec());
    let (shortest, longest) = (middle.properties().minimum_len()?, middle.properties().maximum_len()?);
    let to_u32 = |k: usize| u32::try_from(k).ok();
    (shortest == longest).then(|| Edges { behind: behind.and_then(to_u32), ahead: ahead.and_then(to_u32) })
}

/// The automaton of a lookbehind whose body has no bounded length (see `LookItem::carried`). It cannot tell
/// where a body's match begins, so a body that may begin where JavaScript has no position is refused: on a
/// continuation byte without `u` (a low half, or inside one), on the `\n` inside the line view's U+2028.
/// (Groups inside are found by the body's reversed program, which can: see `LookArounds::groups`.)
fn carried_dfa(hir: &Hir, look: &LookSpec, units: bool, on_lines: bool) -> Result<Dfa, RuleError> {
    let refuse = |what: String| RuleError::from(js_regex::unsupported(what, look.offset, ""));
    let long = format!("lookbehind that can match more than {MAX_LOOK_BEHIND} bytes");
    let dfa = build_all_matches_dfa(&js_regex::js_repetitions(hir))?;
    // Where such a start would be, a continuation byte comes before (the view's U+2028 is `0D A8 0A`).
    let config = start::Config::new().anchored(Anchored::Yes).look_behind(Some(0xA8));
    // Whether the body's match may begin with one of `bytes`: the automaton lives on after it (a match it
    // reports right after the byte is the empty one before it, as matches are reported one byte late).
    let starts_with = |bytes: std::ops::RangeInclusive<u8>| {
        let Ok(start) = dfa.start_state(&config) else { return false };
        let lives = |state| !dfa.is_dead_state(state);
        bytes.into_iter().map(|byte| dfa.next_state(start, byte)).any(|after| {
            lives(after)
                && ((0..=255).any(|next| lives(dfa.next_state(after, next))) || lives(dfa.next_eoi_state(after)))
        })
    };
    if units && starts_with(0x80..=0xBF) {
        return Err(refuse(format!("{long} that may begin inside a character (without the u flag)")));
    }
    if on_lines && starts_with(b'\n'..=b'\n') {
        return Err(refuse(format!("{long} that may begin with \\n (with the m flag)")));
    }
    Ok(dfa)
}

/// Bytes a look-around rule's skip ahead may read before the rule's own program reads on (see its use).
const SKIP_BUDGET: usize = 256;

/// Bytes read to tell whether the pattern without look-arounds starts a match at a position: a few automaton
/// steps against a Pike VM thread, and never more than a small multiple of the program's own reading.
const START_BUDGET: usize = 16;

impl RegexSearch<'_> {
    /// Whether a match of the pattern without its look-arounds starts at `at`, as its anchored automaton tells
    /// within [`START_BUDGET`] bytes (`None` where it cannot). A match of the rule starts only where one of
    /// that pattern does. Asked before the skip's scan, which reads to the end of the leftmost match (where one
    /// starts at every position, `[^"]*` after a lookbehind, the scan read to the next `"` from each: ~70 times
    /// V8's time on a page), and before the program starts a thread, which costs a closure and the oracle's
    /// answers (`(?<![\w.])cdn\.example\.com(?=/)` started one at every byte while a candidate was read).
    fn relaxed_match_starts_at(&self, at: usize) -> Option<bool> {
        let (dfa, view) = (&self.re.dfa, self.hay.view);
        let config = start::Config::new().anchored(Anchored::Yes).look_behind(self.hay.look_behind(at));
        let Ok(mut state) = dfa.start_state(&config) else { return Some(false) };
        let end = view.len().min(at.saturating_add(START_BUDGET));
        for &byte in &view[at..end] {
            state = dfa.next_state(state, byte);
            if dfa.is_match_state(state) {
                return Some(true);
            }
            if dfa.is_dead_state(state) || dfa.is_quit_state(state) {
                return Some(false);
            }
        }
        let at_the_end = end == view.len() && self.last;
        at_the_end.then(|| dfa.is_match_state(dfa.next_eoi_state(state)))
    }

    /// The next match of a rule that is a middle between look-arounds at its edges (see [`Edges`]: `foo(?!bar)`,
    /// `(?<![\w.])cdn\.example\.com(?=/)`, `\bfoo\b` under `iu`, `(?<=href=")[^"]*`): the middle's automata
    /// find where it matches, as a plain rule's do, after a leading lookbehind's automaton has said where it
    /// may start (`LookArounds::lead_from`), and the looks are asked at its two ends. No program.
    fn match_between_edges(
        &self,
        looks: &LookArounds,
        edges: Edges,
        from: usize,
        abandoned: &mut u64,
        memo: &mut LookMemo,
    ) -> Next {
        let len = self.hay.view.len();
        let mut at = from;
        // Each start is tried where it stands once the scan read to the end of the data undecided, and always
        // with a leading lookbehind, whose positions are the starts: a scan from one of them to the middle's next
        // start elsewhere could read a long middle again for each (`(?<=q)x[^"]*z` on `qyx qyx … z`).
        let mut each_start = looks.has_lead();
        loop {
            let Some(lead) = looks.lead_from(memo, &self.hay, self.last, at) else { return Next::Exhausted };
            let start = match each_start || self.relaxed_match_starts_at(lead) == Some(true) {
                true => lead,
                false => match self.scan_forward(lead, usize::MAX) {
                    Scan::Match { end, pattern, .. } => self.match_start(lead, end, pattern),
                    Scan::NoMatch => return Next::Exhausted,
                    Scan::Undecided => {
                        each_start = true;
                        lead
                    }
                },
            };
            let may_start = !each_start || self.relaxed_match_starts_at(start) != Some(false);
            if may_start && self.hay.can_start(start, self.re.units) {
                match self.attempt(start, &mut 0) {
                    Attempt::Match(end) => {
                        let mut holds = |look: Option<u32>, at| match look {
                            Some(k) => looks.holds(k, (&self.hay, self.last), self.max_match, at, memo),
                            None => Some(true),
                        };
                        match holds(edges.behind, start) {
                            Some(true) => match holds(edges.ahead, end) {
                                Some(true) => return Next::Match { start, end },
                                Some(false) => {}
                                None => return Next::Pending(start),
                            },
                            Some(false) => {}
                            None => return Next::Pending(start),
                        }
                    }
                    Attempt::Alive(_) => return Next::Pending(start),
                    Attempt::Abandoned => *abandoned += 1,
                    Attempt::NoMatch => {}
                }
            }
            if start >= len {
                return Next::Exhausted;
            }
            at = start + 1;
        }
    }

    /// The next match of a rule with look-arounds, by its program (see the module's comment).
    pub(super) fn look_around_match(
        &self,
        looks: &LookArounds,
        from: usize,
        abandoned: &mut u64,
        memo: &mut LookMemo,
    ) -> Next {
        let Some(GroupFinder::Js(program)) = &self.re.captures else { return Next::Exhausted };
        if let Some(edges) = looks.edges {
            return self.match_between_edges(looks, edges, from, abandoned, memo);
        }
        let hay = self.hay;
        let can_start = |at| hay.can_start(at, self.re.units) && self.relaxed_match_starts_at(at) != Some(false);
        // The pattern with its look-arounds taken as always holding matches wherever it does: its automata
        // skip to where that pattern's leftmost match starts. Its matches may be long where the rule's are
        // not (`(?<=href=")[^"]*` on text without `"`): a scan that reads more than `SKIP_BUDGET` bytes gives
        // up, and none is tried again for as many bytes, which the program reads itself. Each byte is then
        // scanned a bounded number of times, not once per position before it. A lookbehind that every match
        // begins with skips first (see `LookArounds::lead_from`).
        let no_skip_before = std::cell::Cell::new(0);
        let memo = std::cell::RefCell::new(memo);
        let skip_to = |at: usize| {
            let at = looks.lead_from(&mut memo.borrow_mut(), &hay, self.last, at)?;
            if at < no_skip_before.get() || self.relaxed_match_starts_at(at) == Some(true) {
                return Some(at);
            }
            match self.scan_forward(at, SKIP_BUDGET) {
                Scan::Match { end, pattern, .. } => Some(self.match_start(at, end, pattern)),
                Scan::NoMatch => None,
                Scan::Undecided => {
                    no_skip_before.set(at.saturating_add(SKIP_BUDGET));
                    Some(at)
                }
            }
        };
        let search = LookSearch {
            hay: hay.view,
            before: hay.before,
            last: self.last,
            max_match: self.max_match,
            can_start: &can_start,
            skip_to: &skip_to,
        };
        let mut oracle = |k, at| looks.holds(k, (&hay, self.last), self.max_match, at, &mut memo.borrow_mut());
        let mut from = from;
        loop {
            match program.leftmost(&search, from, self.re.sticky, &mut oracle) {
                Leftmost::Match(start, end) => return Next::Match { start, end },
                Leftmost::Pending(start) => return Next::Pending(start),
                Leftmost::NoMatch => return Next::Exhausted,
                Leftmost::Abandoned(start) => {
                    *abandoned += 1;
                    if self.re.sticky {
                        return Next::Exhausted;
                    }
                    from = start + 1;
                }
            }
        }
    }
}
