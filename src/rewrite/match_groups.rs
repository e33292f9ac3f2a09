//! A regex match's groups as text, for its replacement: found by the meta regex, or by the JavaScript
//! program (see `js_regex::JsCaptures`), whose look-arounds' groups come from their bodies' own matches.

use std::borrow::Cow;

use regex_automata::util::captures::Captures;
use regex_automata::{meta, Anchored, Input, PatternID};

use super::hay::{match_text, tail_text, Hay};
use super::js_regex;
use super::look_around::LookMemo;
use super::rule::{GroupFinder, RegexRule};

/// A match's groups (index 0: the whole match).
pub(super) struct MatchGroups<'h, 'r> {
    pub(super) texts: Vec<Option<Cow<'h, [u8]>>>,
    pub(super) names: Vec<Option<Cow<'r, str>>>,
    /// A text holds a lone surrogate: the output then needs them resolved.
    pub(super) lone: bool,
    /// A lookbehind's groups needed more of the text than the stage keeps (see `LookGroups::beyond_reach`).
    pub(super) beyond_reach: bool,
}

/// The groups of the match `hay.bytes[start..end]` of `re`. `cache` is the stage's for the meta regex (`None`
/// without one), `memo` its look-arounds' memo.
pub(super) fn match_groups<'h, 'r>(
    re: &'r RegexRule,
    hay: &Hay<'h>,
    last: bool,
    (start, end): (usize, usize),
    max_match: usize,
    (cache, memo): (Option<&mut Option<(Captures, meta::Cache)>>, &mut LookMemo),
    units: bool,
) -> Option<MatchGroups<'h, 'r>> {
    // The captures search reads what the automata read, so a match at its very start needs a copy that
    // begins with the byte before it (for `\b` and `^`). The DFA run from a match's start dies within the
    // cap, so the cap plus one look-ahead byte is all the search can read.
    let joined;
    let (buf, base) = match hay.before {
        Some(byte) if start == 0 => {
            let upto = hay.view.len().min(max_match + 2);
            joined = [&[byte][..], &hay.view[..upto]].concat();
            (&joined[..], 1)
        }
        _ => (hay.view, 0),
    };
    // Each group's span in `buf`, counted from `from_tail` bytes before it, and name.
    let mut beyond_reach = false;
    let (spans, names, from_tail): (Vec<_>, Vec<Option<Cow<'r, str>>>, usize) = match re.captures.as_ref()? {
        GroupFinder::Meta(regex) => {
            let (caps, cache) = cache?.get_or_insert_with(|| (regex.create_captures(), regex.create_cache()));
            let input = Input::new(buf).span(start + base..buf.len()).anchored(Anchored::Yes);
            regex.search_captures_with(cache, &input, caps);
            debug_assert_eq!(caps.get_match().map(|m| m.end()), Some(end + base), "DFA and captures disagree");
            (
                (0..caps.group_len()).map(|i| caps.get_group(i).map(|s| s.range())).collect(),
                regex.group_info().pattern_names(PatternID::ZERO).map(|n| n.map(js_regex::js_name)).collect(),
                0,
            )
        }
        GroupFinder::Js(js) => {
            let (groups, from_tail) = match re.looks.as_deref() {
                Some(looks) => match looks.groups(js, hay, last, max_match, (buf, base), (start, end), memo) {
                    Some(found) => {
                        beyond_reach = found.beyond_reach;
                        (Some(found.spans), Some(found.shift))
                    }
                    None => (None, None),
                },
                None => (js.captures(buf, start + base, end + base), None),
            };
            debug_assert!(groups.is_some(), "DFA and JS captures disagree");
            let count = js.names().len();
            (
                groups.map_or_else(|| vec![None; count], |g| g.into_iter().map(|g| g.map(|(a, b)| a..b)).collect()),
                js.names().iter().map(|n| n.as_deref().map(Into::into)).collect(),
                from_tail.unwrap_or(0),
            )
        }
    };
    let base = base + from_tail;
    let mut lone = false;
    let mut texts = Vec::with_capacity(spans.len());
    for span in spans {
        let Some(r) = span else {
            texts.push(None);
            continue;
        };
        let text = match r.start.checked_sub(base) {
            Some(from) => {
                // Halves of an astral character cut off (rules without `u`) are lone surrogates, as in JavaScript.
                let text = match_text(hay.bytes, from, r.end - base, units);
                lone |= matches!(text, Cow::Owned(_));
                text
            }
            // A lookbehind's group that begins before the hay.
            None => {
                let (from, to) = (r.start + hay.tail.len() - base, r.end + hay.tail.len() - base);
                let (text, has_lone) = tail_text(hay, from, to, units);
                lone |= has_lone;
                text.into()
            }
        };
        texts.push(Some(text));
    }
    Some(MatchGroups { texts, names, lone, beyond_reach })
}
