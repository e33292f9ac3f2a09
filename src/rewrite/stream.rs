//! Applying rules to a body that arrives in chunks: the [`Rewriter`] a body is fed to, and the chain
//! of stages it runs.
//!
//! Each rule is one [`Stage`] (see [`super::stage`]); a stage's output is the next stage's input. Every
//! stage holds back what may still belong to a match and replaces a match only once it is final, so the
//! output is byte-identical to whole-body replacement, whatever the chunking.

use std::sync::Arc;

use super::replacement::Exchange;
use super::rule::Rule;
use super::stage::Stage;
use crate::csp::PagePolicy;
use crate::error::ReplaceError;

/// Default cap on the bytes one pending match may hold back (`maxMatchBytes`).
pub const DEFAULT_MAX_MATCH_BYTES: usize = 64 * 1024;

/// A set of rules applied to one body, chunk by chunk.
pub struct Rewriter {
    stages: Vec<Stage>,
    /// Each stage's output for the current chunk; the last stage writes straight to the caller's buffer.
    /// A stage takes a spare buffer (`crate::buffers`) when it first writes in a chunk, and all go back
    /// after the chunk: a page whose response waits on the network holds none, and stages that pass
    /// a chunk on untouched never take one (a list of 120 rules took 22 per page, past the spares).
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
        let outputs = (1..stages.len()).map(|_| Vec::new()).collect();
        Rewriter { stages, outputs }
    }

    /// Shows `exchange` (the request and response of the body) to the rules' replacement functions.
    pub fn with_exchange(mut self, exchange: Arc<Exchange>) -> Rewriter {
        for stage in &mut self.stages {
            stage.exchange = Some(exchange.clone());
        }
        self
    }

    /// Leaves members of groups out of their group's search from the start: `(stage, members)` pairs, a
    /// stage by its rule's index, its members by a flag each (what the skip table knows finds nothing).
    pub fn with_members_skipped(mut self, skipped: &[(usize, Vec<bool>)]) -> Rewriter {
        for (index, members) in skipped {
            if let Some(stage) = self.stages.get_mut(*index) {
                stage.skip_members(members);
            }
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

    /// Leaves the `<meta>` policy rule out from the first byte (it reads nothing and costs nothing): for a
    /// page whose start shows `<body` with no policy named before it, as a policy `<meta>` after that is
    /// not one (browsers ignore it outside `<head>`).
    pub fn leave_out_meta_policy(&mut self) {
        for stage in self.stages.iter_mut().filter(|stage| stage.rule.amends_meta_policy() && stage.held.is_empty()) {
            stage.done = true;
        }
    }

    /// Feeds the next chunk; appends what is final to `out`.
    pub fn push(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(), ReplaceError> {
        let fed =
            feed(&mut self.stages, &mut self.outputs, input, false, out).and_then(|()| self.run_in_turn(false, out));
        self.give_outputs_back();
        fed
    }

    /// Ends the body; appends everything still held back, rewritten, to `out`.
    pub fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), ReplaceError> {
        let fed = feed(&mut self.stages, &mut self.outputs, &[], true, out).and_then(|()| self.run_in_turn(true, out));
        self.give_outputs_back();
        fed
    }

    fn give_outputs_back(&mut self) {
        for output in self.outputs.iter_mut().filter(|output| output.capacity() > 0) {
            crate::buffers::give(std::mem::take(output));
        }
    }

    /// Puts the rules in turn in the place of a stage of literal rules whose shared search stopped where
    /// it would differ from them (see `in_turn`), and runs the bytes it held through them and the rest.
    fn run_in_turn(&mut self, last: bool, out: &mut Vec<u8>) -> Result<(), ReplaceError> {
        while let Some(index) = self.stages.iter().position(Stage::wants_in_turn) {
            let in_turn = self.stages.remove(index).into_in_turn()?;
            self.stages.splice(index..index, in_turn);
            self.outputs.resize_with(self.stages.len().saturating_sub(1), Vec::new);
            feed(&mut self.stages[index..], &mut self.outputs[index..], &[], last, out)?;
        }
        Ok(())
    }

    /// Bytes of output buffers the rewriter holds (none between chunks).
    #[cfg(test)]
    pub(super) fn output_capacity(&self) -> usize {
        self.outputs.iter().map(Vec::capacity).sum()
    }

    /// The stages the rules run as now (more than at the start once rules went in turn).
    #[cfg(test)]
    pub(super) fn stage_count(&self) -> usize {
        self.stages.len()
    }

    /// A whole body in one push and the end, its output dropped.
    #[cfg(test)]
    pub(super) fn finish_with(&mut self, input: &[u8]) {
        let mut out = Vec::new();
        self.push(input, &mut out).and_then(|()| self.finish(&mut out)).expect("rewrite");
    }

    /// Whether some rule replaces through a function: then a step may wait on another thread.
    pub fn calls_functions(&self) -> bool {
        self.stages.iter().any(|stage| stage.calls_function())
    }

    /// Bytes held back over all stages (for tests of the memory bound).
    pub fn held_bytes(&self) -> usize {
        self.stages.iter().map(Stage::held_bytes).sum()
    }

    /// Match candidates abandoned because they outgrew `max_match_bytes`.
    pub fn abandoned_matches(&self) -> u64 {
        self.stages.iter().map(Stage::abandoned).sum()
    }

    /// For each rule, in order, each member of a group on its own: whether it has replaced at least one
    /// match so far.
    pub fn matched_rules(&self) -> Vec<bool> {
        self.stages.iter().flat_map(Stage::match_counts).map(|(_, count)| count > 0).collect()
    }

    /// Each rule's label with the matches it replaced so far, in rule order (each member of a group of
    /// literal rules on its own).
    pub fn match_counts(&self) -> impl Iterator<Item = (&str, u64)> + '_ {
        self.stages.iter().flat_map(Stage::match_counts)
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
    match row_len(stages) {
        row if row >= 2 && !input.is_empty() => feed_row(stages, outputs, input, last, out, row),
        _ => feed_each(stages, outputs, input, last, out, 0),
    }
}

/// Bytes before the row's next candidate that are worth a piece of their own: each piece costs every later
/// stage a call.
const MIN_PASS: usize = 512;
/// The first piece searched stage by stage from a candidate on; each next one without a pass between is
/// twice as long, so bodies dense with candidates go in a few pieces.
const FIRST_SEARCHED: usize = 4 * 1024;
/// The first piece at an input's start, where a stage of the row most often holds bytes back: the first byte
/// or two of a literal (a space before ` data-x=`, cut off by the last input's end), which a few bytes
/// settle. A piece of `FIRST_SEARCHED` there made every stage of the row search 4 KiB of every chunk.
const FIRST_HELD: usize = 64;

/// [`feed`] for stages whose first `row` share a search (see `row_search`): while none of them holds bytes
/// back, the bytes before the row's next candidate pass them all at once; the rest goes in pieces, stage by
/// stage, which the stages' output does not depend on.
fn feed_row(
    stages: &mut [Stage],
    outputs: &mut [Vec<u8>],
    input: &[u8],
    last: bool,
    out: &mut Vec<u8>,
    row: usize,
) -> Result<(), ReplaceError> {
    let Some(candidates) = stages[0].rule.row.clone() else { return feed_each(stages, outputs, input, last, out, 0) };
    let (mut from, mut searched) = (0, FIRST_HELD);
    while from < input.len() {
        let quiet = stages[..row].iter().all(|s| s.quiet() || s.passes_through());
        let next = if quiet { candidates.pass_end(input, from, last, row) } else { from };
        if next == input.len() || next - from >= MIN_PASS {
            let passed = &input[from..next];
            stages[..row].iter_mut().for_each(|s| s.pass_over(passed));
            let (later, later_outputs) = (&mut stages[row..], outputs.get_mut(row..).unwrap_or_default());
            feed(later, later_outputs, passed, last && next == input.len(), out)?;
            (from, searched) = (next, FIRST_SEARCHED);
            continue;
        }
        let end = next.saturating_add(searched).min(input.len());
        let (piece, piece_last) = (&input[from..end], last && end == input.len());
        // The stages before the first that may change the piece pass it over, as in a pass (`feed_each`).
        feed_each(stages, outputs, piece, piece_last, out, row)?;
        (from, searched) = (end, searched.saturating_mul(2));
    }
    Ok(())
}

/// [`feed`] stage by stage; the first `in_row` stages are in a row being fed in pieces (they do not start
/// a row of their own), and those of them that cannot change the piece pass it over.
fn feed_each(
    mut stages: &mut [Stage],
    mut outputs: &mut [Vec<u8>],
    input: &[u8],
    last: bool,
    out: &mut Vec<u8>,
    mut in_row: usize,
) -> Result<(), ReplaceError> {
    // One search of the row's literals for all the stages it passes over, where each would search the piece
    // for its own (a piece holds the candidates of a stage or two; the rest of the row searched it each).
    if in_row >= 2 && !input.is_empty() {
        let first = first_changing_stage(stages, input, last, in_row);
        if first > 0 {
            stages[..first].iter_mut().for_each(|s| s.pass_over(input));
            stages = &mut std::mem::take(&mut stages)[first..];
            outputs = std::mem::take(&mut outputs).get_mut(first..).unwrap_or_default();
            in_row -= first;
            if in_row == 0 {
                return feed(stages, outputs, input, last, out);
            }
        }
    }
    let Some((stage, later)) = stages.split_first_mut() else {
        out.extend_from_slice(input);
        return Ok(());
    };
    let Some((output, later_outputs)) = outputs.split_first_mut() else {
        let untouched = stage.process(input, last, out)?;
        out.extend_from_slice(&input[untouched..]);
        return Ok(());
    };
    let feed = |stages: &mut [Stage], outputs: &mut [Vec<u8>], input: &[u8], last: bool, out: &mut Vec<u8>| match in_row
    {
        0 | 1 => feed(stages, outputs, input, last, out),
        _ => feed_each(stages, outputs, input, last, out, in_row - 1),
    };
    if stage.passes_through() {
        return feed(later, later_outputs, input, last, out);
    }
    if output.capacity() == 0 {
        *output = crate::buffers::take();
    }
    output.clear();
    // Rewriting rarely grows a body much: one allocation instead of repeated doubling.
    output.reserve(input.len() + input.len() / 8);
    let untouched = stage.process(input, last, output)?;
    // A stage that gives way to its rules in turn holds bytes for them: the body has not ended after it yet.
    let last = last && !stage.wants_in_turn();
    if let Some(upto) = stage.take_unchanged() {
        return feed(later, later_outputs, &input[..upto], last, out);
    }
    if untouched == input.len() {
        feed(later, later_outputs, output, last, out)
    } else {
        feed(later, later_outputs, output, false, out)?;
        feed(later, later_outputs, &input[untouched..], last, out)
    }
}

/// Of the first `in_row` stages, in a row, the first that may change `input` where it reaches them (see
/// `RowCandidates::first_stage_in`); the stages before it hold nothing back.
fn first_changing_stage(stages: &[Stage], input: &[u8], last: bool, in_row: usize) -> usize {
    let Some(candidates) = stages[0].rule.row.as_deref() else { return 0 };
    let quiet = stages[..in_row].iter().position(|s| !(s.quiet() || s.passes_through())).unwrap_or(in_row);
    candidates.first_stage_in(input, last, stages[0].rule.row_index, quiet)
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
    let fed = feed(&mut rewriter.stages, &mut rewriter.outputs, input, true, &mut out)
        .and_then(|()| rewriter.run_in_turn(true, &mut out));
    rewriter.give_outputs_back();
    fed.map(|()| out)
}

/// How many stages from the first on share its row's search (0 when it has none).
pub(super) fn row_len(stages: &[Stage]) -> usize {
    let Some(row) = stages.first().and_then(|s| s.rule.row.as_ref()) else { return 0 };
    stages.iter().take_while(|s| s.rule.row.as_ref().is_some_and(|r| Arc::ptr_eq(r, row))).count()
}

impl Stage {
    /// Nothing of the stage's state refers to bytes it has seen but not written out.
    pub(super) fn quiet(&self) -> bool {
        self.held.is_empty()
            && self.run.is_none()
            && self.carried == 0
            && self.search_from == 0
            && !self.skip_char
            && self.pending_high.is_none()
    }

    /// The stage's state after bytes in which it cannot match went by it unchanged.
    pub(super) fn pass_over(&mut self, bytes: &[u8]) {
        if let Some(&last) = bytes.last() {
            self.before = Some(last);
        }
    }
}
