//! Applying rules to a body that arrives in chunks.
//!
//! Each rule is one [`Stage`]; a stage's output is the next stage's input. A stage emits every byte
//! that can no longer belong to a match and holds back the rest: the bytes from the earliest start
//! whose anchored DFA run is still alive at the end of the data seen so far. A match is replaced only
//! once the DFA has died (or the body has ended), which is when leftmost-first semantics make it final;
//! so the output is byte-identical to whole-body replacement, whatever the chunking.

use regex_automata::dfa::Automaton;
use regex_automata::util::captures::Captures;
use regex_automata::util::primitives::StateID;
use regex_automata::util::start;
use regex_automata::{Anchored, Input, Span};

use super::{Candidates, Engine, RegexRule, Replacement, Rule};
use crate::error::ReplaceError;

/// A set of rules applied to one body, chunk by chunk.
pub struct Rewriter {
    stages: Vec<Stage>,
    /// Buffers between stages, reused across chunks.
    between: [Vec<u8>; 2],
}

impl Rewriter {
    /// `local_host` is the request's Host header, used by the link rewrite rule;
    /// `max_match_bytes` caps what one pending match may hold back.
    pub fn new(rules: &[Rule], local_host: &str, max_match_bytes: usize) -> Rewriter {
        let stages = rules.iter().map(|rule| Stage::new(rule.clone(), local_host, max_match_bytes.max(1))).collect();
        Rewriter { stages, between: [Vec::new(), Vec::new()] }
    }

    /// Feeds the next chunk; appends what is final to `out`.
    pub fn push(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(), ReplaceError> {
        self.run(input, false, out)
    }

    /// Ends the body; appends everything still held back, rewritten, to `out`.
    pub fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), ReplaceError> {
        self.run(&[], true, out)
    }

    /// Bytes held back over all stages (for tests of the memory bound).
    pub fn held_bytes(&self) -> usize {
        self.stages.iter().map(|s| s.buf.len()).sum()
    }

    /// Match candidates abandoned because they outgrew `max_match_bytes`.
    pub fn abandoned_matches(&self) -> u64 {
        self.stages.iter().map(|s| s.abandoned).sum()
    }

    fn run(&mut self, input: &[u8], last: bool, out: &mut Vec<u8>) -> Result<(), ReplaceError> {
        let count = self.stages.len();
        if count == 0 {
            out.extend_from_slice(input);
            return Ok(());
        }
        let [a, b] = &mut self.between;
        let (mut src, mut dst) = (a, b);
        src.clear();
        let mut from_input = true;
        for (i, stage) in self.stages.iter_mut().enumerate() {
            let last_stage = i + 1 == count;
            // A finished stage with nothing held back is the identity: its input skips it.
            if stage.passes_through() && !last_stage {
                continue;
            }
            let data: &[u8] = if from_input { input } else { src };
            if last_stage {
                stage.process(data, last, out)?;
            } else {
                dst.clear();
                // Rewriting rarely grows a body much: one allocation instead of repeated doubling.
                dst.reserve(data.len() + data.len() / 8);
                stage.process(data, last, dst)?;
                std::mem::swap(&mut src, &mut dst);
                from_input = false;
            }
        }
        Ok(())
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
    let mut out = Vec::with_capacity(input.len());
    // One call with the end known: the scan stays linear whatever the rules.
    rewriter.run(input, true, &mut out)?;
    Ok(out)
}

/// One rule's streaming state.
struct Stage {
    rule: Rule,
    local_host: String,
    max_match: usize,
    /// `buf[..emitted]` is already written out (at most one byte is kept, as look-behind context for
    /// `\b` and `^`); `buf[emitted..]` is held back.
    buf: Vec<u8>,
    emitted: usize,
    /// Where the next match search starts (JS `lastIndex`).
    search_from: usize,
    /// After an empty match JS moves `lastIndex` one character on before searching again.
    skip_char: bool,
    /// A non-global rule that has replaced its one match, or a global one that can match no more.
    done: bool,
    /// Body offset of `buf[0]`, for the offsets given to replacement functions.
    offset: usize,
    captures: Option<(Captures, regex_automata::meta::Cache)>,
    abandoned: u64,
}

enum Attempt {
    /// A final match ending here.
    Match(usize),
    NoMatch,
    /// Still alive at the end of the data: more input decides.
    Alive,
    /// Alive after `max_match` bytes: given up on, its bytes stay as they are.
    Abandoned,
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

pub(super) enum Next {
    Match {
        start: usize,
        end: usize,
    },
    /// No match can start before this position; bytes from it on are held back.
    Pending(usize),
    /// No match in the data seen so far can start anywhere (or, at the end, no match at all).
    Exhausted,
}

impl Stage {
    fn new(rule: Rule, local_host: &str, max_match: usize) -> Stage {
        let captures = match &rule.inner.engine {
            Engine::Regex(re) => re.captures.as_ref().map(|c| (c.create_captures(), c.create_cache())),
            Engine::Links(_) => None,
        };
        Stage {
            rule,
            local_host: local_host.to_string(),
            max_match,
            buf: Vec::new(),
            emitted: 0,
            search_from: 0,
            skip_char: false,
            done: false,
            offset: 0,
            captures,
            abandoned: 0,
        }
    }

    fn passes_through(&self) -> bool {
        self.done && self.emitted == self.buf.len()
    }

    fn process(&mut self, input: &[u8], last: bool, out: &mut Vec<u8>) -> Result<(), ReplaceError> {
        if self.done {
            out.extend_from_slice(&self.buf[self.emitted..]);
            self.emitted = self.buf.len();
            out.extend_from_slice(input);
        } else {
            self.buf.extend_from_slice(input);
            let held_from = self.scan(last, out)?;
            let held_from = if self.done { self.buf.len() } else { held_from };
            if self.done {
                self.search_from = self.buf.len();
            }
            out.extend_from_slice(&self.buf[self.emitted..held_from]);
            self.emitted = held_from;
        }
        self.compact();
        Ok(())
    }

    /// Replaces every match that is final; returns the first byte that must stay held back.
    fn scan(&mut self, last: bool, out: &mut Vec<u8>) -> Result<usize, ReplaceError> {
        loop {
            let len = self.buf.len();
            if self.skip_char {
                if self.search_from >= len {
                    // JS: `lastIndex` past the end stops the search.
                    self.done |= last;
                    return Ok(len);
                }
                let width = utf8_width(self.buf[self.search_from]);
                if self.search_from + width > len && !last {
                    return Ok(self.search_from);
                }
                self.search_from = (self.search_from + width).min(len);
                self.skip_char = false;
            }
            match self.next_match(last) {
                Next::Match { start, end } => {
                    out.extend_from_slice(&self.buf[self.emitted..start]);
                    self.replace(start, end, out)?;
                    self.emitted = end;
                    self.search_from = end;
                    self.skip_char = end == start;
                    if !self.rule.inner.global {
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

    fn compact(&mut self) {
        let keep_from = self.emitted.saturating_sub(1);
        if keep_from > 0 {
            self.buf.drain(..keep_from);
            self.emitted -= keep_from;
            self.search_from -= keep_from;
            self.offset += keep_from;
        }
    }

    fn next_match(&mut self, last: bool) -> Next {
        let mut abandoned = 0;
        let next = match &self.rule.inner.engine {
            Engine::Links(matcher) => {
                matcher.next_match(&self.buf, self.search_from, last, self.max_match, &mut abandoned)
            }
            Engine::Regex(re) => self.next_regex_match(re, last, &mut abandoned),
        };
        self.abandoned += abandoned;
        next
    }

    fn next_regex_match(&self, re: &RegexRule, last: bool, abandoned: &mut u64) -> Next {
        let len = self.buf.len();
        let mut from = self.search_from;
        loop {
            let (end, died) = match self.scan_forward(re, from, last) {
                Scan::Match { end, died } => (end, died),
                Scan::NoMatch => return Next::Exhausted,
                Scan::Undecided => return self.pending_start(re, from, last, abandoned),
            };
            let start = self.match_start(re, from, end);
            if start < len && is_continuation(self.buf[start]) {
                // An empty match inside a UTF-8 character: JS never sees that position.
                from = start + 1;
                continue;
            }
            // The anchored run from `start` dies no later than the unanchored scan did: only when that
            // was past the cap may the attempt have outgrown it, and then it is checked exactly.
            if died - start > self.max_match {
                match self.attempt(re, start, last) {
                    Attempt::Match(checked) => debug_assert_eq!(checked, end),
                    _ => {
                        *abandoned += 1;
                        from = start + 1;
                        continue;
                    }
                }
            }
            return Next::Match { start, end };
        }
    }

    /// Leftmost-first unanchored scan from `from`, linear in the data: finds the end of the leftmost
    /// match once it is final. While no match is in progress it skips to the next candidate position.
    fn scan_forward(&self, re: &RegexRule, from: usize, last: bool) -> Scan {
        let dfa = &re.dfa;
        let hay = &self.buf[..];
        let len = hay.len();
        let start_at = |at: usize| {
            let config = start::Config::new().anchored(Anchored::No).look_behind(at.checked_sub(1).map(|i| hay[i]));
            dfa.start_state(&config).ok()
        };
        let Some(mut at) = self.next_candidate(re, from) else { return Scan::NoMatch };
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
                    match self.next_candidate(re, at) {
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
    fn match_start(&self, re: &RegexRule, from: usize, end: usize) -> usize {
        let rev = &re.reverse;
        let hay = &self.buf[..];
        let config = start::Config::new().anchored(Anchored::Yes).look_behind(hay.get(end).copied());
        let Ok(mut state) = rev.start_state(&config) else { return from };
        let mut start = None;
        let mut at = end;
        while at > from {
            at -= 1;
            state = rev.next_state(state, hay[at]);
            if rev.is_special_state(state) {
                if rev.is_match_state(state) {
                    start = Some(at + 1);
                } else if rev.is_dead_state(state) || rev.is_quit_state(state) {
                    return start.unwrap_or(from);
                }
            }
        }
        // Matches are reported one byte late: one more step says whether one starts at `from`.
        state = match from.checked_sub(1) {
            Some(i) => rev.next_state(state, hay[i]),
            None => rev.next_eoi_state(state),
        };
        if rev.is_match_state(state) {
            start = Some(from);
        }
        start.unwrap_or(from)
    }

    /// The data ends inside a possible match: the earliest candidate whose anchored run is still
    /// alive (everything before it can go out), or a match that became final meanwhile.
    fn pending_start(&self, re: &RegexRule, from: usize, last: bool, abandoned: &mut u64) -> Next {
        let len = self.buf.len();
        let mut from = from;
        while from <= len {
            let Some(at) = self.next_candidate(re, from) else { return Next::Exhausted };
            if at < len && is_continuation(self.buf[at]) {
                from = at + 1;
                continue;
            }
            match self.attempt(re, at, last) {
                Attempt::Match(end) => return Next::Match { start: at, end },
                Attempt::Alive => return Next::Pending(at),
                Attempt::Abandoned => *abandoned += 1,
                Attempt::NoMatch => {}
            }
            from = at + 1;
        }
        Next::Exhausted
    }

    /// The smallest position at or after `from` where a match may start, given the data so far.
    fn next_candidate(&self, re: &RegexRule, from: usize) -> Option<usize> {
        let hay = &self.buf;
        let len = hay.len();
        match &re.candidates {
            Candidates::Every => Some(from),
            Candidates::Prefix(pre) => {
                // A literal cut by the end of the data shows only as a partial prefix.
                let tail = len.saturating_sub(pre.max_needle_len().saturating_sub(1)).max(from);
                let hit = (from < len).then(|| pre.find(hay, Span::from(from..len))).flatten().map(|s| s.start);
                match hit {
                    Some(h) => Some(h.min(tail)),
                    None => (tail < len).then_some(tail),
                }
            }
        }
    }

    /// Runs the anchored DFA from `at` over the data held.
    fn attempt(&self, re: &RegexRule, at: usize, last: bool) -> Attempt {
        let dfa = &re.dfa;
        let hay = &self.buf;
        let look_behind = at.checked_sub(1).map(|i| hay[i]);
        let config = start::Config::new().anchored(Anchored::Yes).look_behind(look_behind);
        let mut state: StateID = match dfa.start_state(&config) {
            Ok(state) => state,
            Err(_) => return Attempt::NoMatch,
        };
        // One byte past the cap: DFA matches are reported a byte late.
        let limit = at.saturating_add(self.max_match).saturating_add(1);
        let end = hay.len().min(limit);
        let mut found = None;
        for (i, &byte) in hay[at..end].iter().enumerate() {
            state = dfa.next_state(state, byte);
            if dfa.is_special_state(state) {
                if dfa.is_match_state(state) {
                    found = Some(at + i);
                } else if dfa.is_dead_state(state) || dfa.is_quit_state(state) {
                    return found.map_or(Attempt::NoMatch, Attempt::Match);
                }
            }
        }
        if end == limit {
            return Attempt::Abandoned;
        }
        if !last {
            return Attempt::Alive;
        }
        state = dfa.next_eoi_state(state);
        if dfa.is_match_state(state) {
            found = Some(hay.len());
        }
        found.map_or(Attempt::NoMatch, Attempt::Match)
    }

    /// Writes the replacement of `buf[start..end]`.
    fn replace(&mut self, start: usize, end: usize, out: &mut Vec<u8>) -> Result<(), ReplaceError> {
        let Stage { rule, buf, captures, local_host, offset, .. } = self;
        let whole = &buf[start..end];
        let re = match &rule.inner.engine {
            Engine::Links(matcher) => {
                matcher.write_replacement(whole, local_host, out);
                return Ok(());
            }
            Engine::Regex(re) => re,
        };
        let Some((caps, cache)) = captures.as_mut() else {
            if let Replacement::Template(t) = &re.replacement {
                t.expand(whole, |_| None, |_| None, out);
            }
            return Ok(());
        };
        let regex = re.captures.as_ref().expect("captures come with their regex");
        let input = Input::new(&buf[..]).span(start..buf.len()).anchored(Anchored::Yes);
        regex.search_captures_with(cache, &input, caps);
        debug_assert_eq!(caps.get_match().map(|m| m.end()), Some(end), "DFA and captures disagree");
        match &re.replacement {
            Replacement::Template(t) => t.expand(
                whole,
                |i| caps.get_group(i).map(|s| &buf[s.range()]),
                |n| caps.get_group_by_name(n).map(|s| &buf[s.range()]),
                out,
            ),
            Replacement::Function(f) => {
                let text = |s: Span| String::from_utf8_lossy(&buf[s.range()]).into_owned();
                let groups: Vec<Option<String>> = (1..caps.group_len()).map(|i| caps.get_group(i).map(text)).collect();
                let group_refs: Vec<Option<&str>> = groups.iter().map(|g| g.as_deref()).collect();
                let replaced = f
                    .replace(&String::from_utf8_lossy(whole), &group_refs, *offset + start)
                    .map_err(|message| ReplaceError { rule: rule.inner.label.clone(), message })?;
                out.extend_from_slice(replaced.as_bytes());
            }
        }
        Ok(())
    }
}

fn is_continuation(byte: u8) -> bool {
    (0x80..0xC0).contains(&byte)
}

/// Bytes in the UTF-8 character starting with `byte` (1 for bytes that start none).
pub(super) fn utf8_width(byte: u8) -> usize {
    match byte {
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => 1,
    }
}
