//! Rules: what a user rule (or a built-in one) is, and how it is compiled once into the automata the
//! stages run: a forward and a reverse dense DFA, the start states by look-behind byte, the prefilter that
//! finds candidate starts, the prefix automaton for held-back data, and the captures regex when the
//! replacement needs groups.

use std::sync::Arc;

use regex_automata::dfa::{dense, Automaton, StartKind};
use regex_automata::nfa::thompson;
use regex_automata::util::prefilter::Prefilter;
use regex_automata::util::primitives::StateID;
use regex_automata::util::start;
use regex_automata::{meta, Anchored, MatchKind};
use regex_syntax::hir::Hir;

use super::literals::LiteralSet;
use super::replacement::{group_info, ReplaceFn, Replacement, Template};
use super::{js_regex, lines, links, origins, prefixes};
use crate::error::RuleError;
use crate::globs::UrlGlobs;

/// The heap a server's (or a `rewrite()` call's) rules may take, their automata counted: no cap on how
/// many rules, but on what they cost (about 400 bytes a literal rule; a regex rule from a few KiB to the
/// 16 MiB one automaton may take).
pub const RULES_MEMORY_BUDGET: usize = 512 << 20;

/// Refuses `rules` when together they take more than [`RULES_MEMORY_BUDGET`].
pub fn check_memory<'a>(rules: impl IntoIterator<Item = &'a Rule>) -> Result<(), RuleError> {
    check_memory_within(rules, RULES_MEMORY_BUDGET)
}

pub(super) fn check_memory_within<'a>(
    rules: impl IntoIterator<Item = &'a Rule>,
    budget: usize,
) -> Result<(), RuleError> {
    let (count, used) = rules.into_iter().fold((0, 0), |(n, bytes), rule| (n + 1, bytes + rule.memory_usage()));
    if used > budget {
        return Err(RuleError::TooMuchMemory { rules: count, used, budget });
    }
    Ok(())
}

const NFA_SIZE_LIMIT: usize = 8 << 20;
const DFA_SIZE_LIMIT: usize = 16 << 20;
/// What building one DFA may cost, in bytes of NFA state sets times byte classes. The determinizer's
/// time is about 4 ms per MiB of the sets it keeps per byte class (on the 2-core development machine):
/// its work is each set stepped over each class. Measured in docs/rewrite-rules.md.
const DETERMINIZE_WORK_LIMIT: usize = 160 << 20;

pub(super) type Dfa = dense::DFA<Vec<u32>>;

/// A compiled rewrite rule, cheap to clone and share between requests.
#[derive(Clone, Debug)]
pub struct Rule {
    pub(super) inner: Arc<CompiledRule>,
    /// Browsersync's `paths`: the rule runs only on these URLs, on any response type (see `state`).
    pub(super) paths: Option<Arc<UrlGlobs>>,
    /// The search this rule's stage shares with the stages around it (see `row_search`).
    pub(super) row: Option<Arc<super::row_search::RowCandidates>>,
    /// Where the stage stands in that row.
    pub(super) row_index: usize,
}

/// How the stage finds the positions where a match may start, so that most bytes are skipped
/// without running the automaton (the "Prexy trick", done exactly).
#[derive(Debug)]
pub(super) enum Candidates {
    /// Every position (patterns with no usable literal).
    Every,
    /// A match starts with one of the prefilter's literals.
    Prefix(Prefilter),
    /// Every match holds `needle` `offsets.0..=offsets.1` bytes after its start: for a pattern whose own
    /// start is common but that always holds a rare piece further on (a built-in rule knows it).
    Inner { needle: Box<memchr::memmem::Finder<'static>>, offsets: (usize, usize) },
}

#[derive(Debug)]
pub(super) struct CompiledRule {
    pub(super) label: String,
    pub(super) global: bool,
    pub(super) engine: Engine,
}

/// How a rule finds its matches and what it puts in their place.
#[derive(Debug)]
pub(super) enum Engine {
    Regex(Box<RegexRule>),
    /// Browsersync's link rewrite: a dedicated matcher, and a replacement that depends on the
    /// request's Host.
    Links(Box<links::LinkMatcher>),
    /// One origin for others, in every form they are written in (see `origins`).
    Origins(Box<origins::OriginSwap>),
    /// Literal rules with fixed replacements, one or several searched together (see `literals`).
    Literals(Box<LiteralSet>),
}

/// A DFA's start states by the byte before the start (`None`: the start of the body). Asking the DFA
/// classifies the byte and checks the configuration each time: too slow for once per candidate.
#[derive(Debug)]
pub(super) struct StartStates {
    /// Index 256 is the start of the body.
    table: Box<[Option<StateID>; 257]>,
}

impl StartStates {
    pub(super) fn new(dfa: &Dfa, anchored: Anchored) -> StartStates {
        let mut table = Box::new([None; 257]);
        for (index, slot) in table.iter_mut().enumerate() {
            let look_behind = u8::try_from(index).ok();
            *slot = dfa.start_state(&start::Config::new().anchored(anchored).look_behind(look_behind)).ok();
        }
        StartStates { table }
    }

    pub(super) fn get(&self, look_behind: Option<u8>) -> Option<StateID> {
        self.table[look_behind.map_or(256, usize::from)]
    }
}

#[derive(Debug)]
pub(super) struct RegexRule {
    /// The `y` flag: a match only where the last one ended (see `sticky`).
    pub(super) sticky: bool,
    /// The rule works on UTF-16 code units (a JS regex without `u`): matches may start or end between the
    /// halves of an astral character.
    pub(super) units: bool,
    /// A match may start on the low half of an astral character: the stage then holds characters whole, so
    /// that a high half already written out is never split from its low half afterwards.
    pub(super) low_half_starts: bool,
    /// The pattern has multi-line anchors: its automata read the line view (see `lines`).
    pub(super) lines: bool,
    /// The pattern names some lone low surrogates: its automata read this view of astral characters (see
    /// `js_regex::LowView`), on top of the line view if any.
    pub(super) low_view: Option<js_regex::LowView>,
    /// Forward DFA, anchored and unanchored starts, leftmost-first.
    pub(super) dfa: Dfa,
    /// Reverse anchored DFA: from a match's end back to its start.
    pub(super) reverse: Dfa,
    /// Only built when the replacement needs capture groups (or the rule has look-arounds: it finds matches).
    pub(super) captures: Option<GroupFinder>,
    /// The pattern's look-arounds: its program (in `captures`) finds its matches (see `look_around`).
    pub(super) looks: Option<Box<super::look_around::LookArounds>>,
    pub(super) candidates: Candidates,
    pub(super) replacement: Replacement,
    pub(super) anchored_starts: StartStates,
    pub(super) unanchored_starts: StartStates,
    /// Reads back from the end of the data to where a pending match may start; `None` when too big.
    pub(super) prefix_reverse: Option<Dfa>,
    /// The pattern with its groups (before `js_regex::js_repetitions`): what a group is decided on and built
    /// from.
    pub(super) hir: Hir,
    /// A group of regex rules searched together (see `regex_groups`): the rules by pattern ID, each match
    /// replaced by its own rule's `replacement` and `captures` (the group's own are unused). Empty for a
    /// rule on its own.
    pub(super) members: Vec<Rule>,
}

impl RegexRule {
    /// The rule a group's pattern stands for.
    pub(super) fn member(&self, pattern: usize) -> Option<&RegexRule> {
        match &self.members.get(pattern)?.inner.engine {
            Engine::Regex(re) => Some(re),
            Engine::Links(_) | Engine::Origins(_) | Engine::Literals(_) => None,
        }
    }
}

/// Whether a rule works on UTF-16 units (a JS regex without `u`), and the view its pattern is written for.
pub(super) enum Units {
    No,
    Yes(Option<js_regex::LowView>),
}

impl Units {
    pub(super) fn of(flags: &js_regex::JsFlags, view: Option<js_regex::LowView>) -> Units {
        if flags.unicode {
            Units::No
        } else {
            Units::Yes(view)
        }
    }
}

/// What resolves a match's groups: the engine's own captures search, or, where JavaScript's repetition rules
/// give groups other values (see `js_regex::needs_js_captures`), a matcher that follows them.
#[derive(Debug)]
pub(super) enum GroupFinder {
    Meta(meta::Regex),
    Js(js_regex::JsCaptures),
}

/// The replacement side of a user rule.
#[derive(Clone)]
pub enum RuleReplacement {
    /// A JS replacement string (`$&`, `$1`, `$<name>`, `$$`).
    Text(String),
    /// A function called for each match.
    Function(Arc<dyn ReplaceFn>),
}

impl Rule {
    /// A rule from a JS `RegExp`'s `source` and `flags`.
    pub fn regex(source: &str, flags: &str, replacement: RuleReplacement) -> Result<Rule, RuleError> {
        let parsed = js_regex::parse_flags(flags)?;
        let translated = js_regex::translate_with_looks(source, &parsed)?;
        let label = format!("/{source}/{flags}");
        if !translated.looks.is_empty() {
            return Rule::with_looks(label, translated, &parsed, replacement);
        }
        let (pattern, low_view) = (translated.pattern, translated.low_view);
        if let (RuleReplacement::Text(text), None) = (&replacement, &low_view) {
            if let Some(literal) = Rule::plain_text(source, &parsed, &pattern, text)? {
                return Rule::literal_rule(label, literal, text, parsed.global);
            }
            if let Some(alternatives) = Rule::alternatives(source, &parsed, text) {
                return Rule::alternation_rule(label, alternatives, text);
            }
        }
        let rule = Rule::compile(label, &pattern, parsed.global, Units::of(&parsed, low_view), replacement);
        rule.map(|rule| rule.sticky_if(parsed.sticky))
    }

    /// A rule whose match is a plain string: like `String.prototype.replace` with a string
    /// pattern, it replaces the first occurrence only.
    pub fn literal(text: &str, replacement: RuleReplacement) -> Result<Rule, RuleError> {
        js_regex::check_length(text)?;
        let label = format!("{text:?}");
        match &replacement {
            RuleReplacement::Text(replace) if !text.is_empty() => Rule::exact_text(label, text, replace),
            _ => Rule::compile(label, &js_regex::literal(text), false, Units::No, replacement),
        }
    }

    /// How many user rules this rule stands for (one but for a group of rules searched together).
    pub fn member_count(&self) -> usize {
        match &self.inner.engine {
            Engine::Literals(set) if set.is_alternation() => 1,
            Engine::Literals(set) => set.members().len(),
            Engine::Regex(re) if !re.members.is_empty() => re.members.len(),
            _ => 1,
        }
    }

    /// The user rules this rule stands for: its members' labels (one but for a group of rules).
    pub fn member_labels(&self) -> Vec<&str> {
        match &self.inner.engine {
            Engine::Literals(set) if set.is_alternation() => vec![self.label()],
            Engine::Literals(set) => set.members().iter().map(|m| m.label.as_str()).collect(),
            Engine::Regex(re) if !re.members.is_empty() => re.members.iter().map(Rule::label).collect(),
            _ => vec![self.label()],
        }
    }

    /// Heap bytes the rule's automata take (what the rules' memory budget counts).
    pub fn memory_usage(&self) -> usize {
        match &self.inner.engine {
            Engine::Literals(set) => set.memory_usage(),
            Engine::Links(_) | Engine::Origins(_) => 4096,
            Engine::Regex(re) => {
                re.dfa.memory_usage()
                    + re.reverse.memory_usage()
                    + re.prefix_reverse.as_ref().map_or(0, Dfa::memory_usage)
                    + match &re.captures {
                        Some(GroupFinder::Meta(regex)) => regex.memory_usage(),
                        _ => 0,
                    }
                    + re.members.iter().map(Rule::memory_usage).sum::<usize>()
            }
        }
    }

    /// Browsersync's snippet rule: `snippet` right after the first `<body ...>` tag, without the
    /// whitespace around it. Browsersync's own snippet ends with a newline, and that text node before
    /// the page's first element is what React 19 cannot hydrate past (`hydrateRoot(document)`, as
    /// Next.js does); an extra `<script>` element alone it skips.
    pub fn snippet(snippet: &str) -> Rule {
        let replacement = Replacement::Snippet(snippet.trim().to_string());
        Rule::build("snippet".into(), r"(?i:<body[^>]*>)", false, Units::No, replacement)
            .expect("the snippet rule compiles")
    }

    /// The page's `<meta http-equiv="Content-Security-Policy">` tags, amended so that the snippet runs
    /// (see `crate::csp`). It runs before the snippet rule, which then knows whether to add the nonce.
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    pub fn csp_meta() -> Rule {
        // Every `<meta>` tag: `PagePolicy::amend_meta` leaves all but `http-equiv` policies as they are. A
        // pattern that named `http-equiv` after `[^>]*` cost ~150 ms of CPU to compile, on every start.
        Rule::build(
            "content-security-policy meta".into(),
            r"(?i-u:<meta\s[^>]*>)",
            true,
            Units::No,
            Replacement::MetaPolicy,
        )
        .expect("the meta rule compiles")
    }

    /// Whether this is the page's `<meta>` policy rule ([`Rule::csp_meta`]).
    pub(crate) fn amends_meta_policy(&self) -> bool {
        matches!(&self.inner.engine, Engine::Regex(re) if matches!(re.replacement, Replacement::MetaPolicy))
    }

    /// Whether this is the snippet rule (a plain snippet or one placed by `snippetOptions.rule.match`).
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    pub(crate) fn injects_snippet(&self) -> bool {
        matches!(&self.inner.engine, Engine::Regex(re) if matches!(re.replacement, Replacement::Snippet(_)))
    }

    /// `snippetOptions.rule.match` without a function: `snippet` right after the first match of the
    /// `RegExp` (every match with `g`), as Browsersync's default `fn` (`match + snippet`) puts it.
    pub fn snippet_at(source: &str, flags: &str, snippet: &str) -> Result<Rule, RuleError> {
        let parsed = js_regex::parse_flags(flags)?;
        let (pattern, low_view) = js_regex::translate_with_view(source, &parsed)?;
        let replacement = Replacement::Snippet(snippet.to_string());
        let (label, units) = (format!("/{source}/{flags}"), Units::of(&parsed, low_view));
        Rule::build(label, &pattern, parsed.global, units, replacement).map(|rule| rule.sticky_if(parsed.sticky))
    }

    /// This rule limited to the URLs `paths` matches, and applied there whatever the response type.
    pub fn with_paths(mut self, paths: UrlGlobs) -> Rule {
        self.paths = Some(Arc::new(paths));
        self
    }

    /// The URLs the rule is limited to (`None`: every URL a page is rewritten at).
    pub fn paths(&self) -> Option<&UrlGlobs> {
        self.paths.as_deref()
    }

    /// Browsersync's link rewrite for a target `host` (`hostname` or `hostname:port`), on a proxy
    /// served with `local_scheme`.
    pub fn links(target_host: &str, local_scheme: &'static str) -> Rule {
        Rule::of(CompiledRule {
            label: "link rewrite".into(),
            global: true,
            engine: Engine::Links(Box::new(links::LinkMatcher::new(target_host, local_scheme))),
        })
    }

    /// The target's origin percent-encoded (`https%3A%2F%2Fwp.test%3A8088`, any case: a `redirect_to`
    /// query value in a page) becomes the proxy's, as the link rewrite does for the plain forms. Like
    /// Browsersync's link rewrite, the host is matched as it is written, without a look at what follows.
    pub fn encoded_origin(target_link_host: &str, local_scheme: &'static str) -> Rule {
        let encoded = regex_syntax::escape(&super::percent_encode_origin(target_link_host));
        let pattern = format!("(?i:https?%3A%2F%2F{encoded})");
        let replacement = Replacement::EncodedLocalOrigin { scheme: local_scheme };
        // `http` starts every link of a page; `%3` (any case of `%3A`) after `http` or `https` is rare. With
        // the prefix alone the automaton read every byte of every page (0.55 M instructions per 100 KB).
        let candidates =
            Candidates::Inner { needle: Box::new(memchr::memmem::Finder::new(b"%3").into_owned()), offsets: (4, 5) };
        Rule::build_with("encoded link rewrite".into(), &pattern, true, Units::No, replacement, Some(candidates), false)
            .expect("an escaped host always compiles")
    }

    /// The origins `swap` looks for, in the forms it looks for, become its one origin (`rewriteJson`,
    /// `rewriteRequestBodies`): a literal matcher, so nothing is compiled per request `Host`.
    pub fn origins(label: &str, swap: origins::OriginSwap) -> Rule {
        Rule::of(CompiledRule { label: label.into(), global: true, engine: Engine::Origins(Box::new(swap)) })
    }

    /// A rule of its own: on every URL, in no row.
    pub(super) fn of(compiled: CompiledRule) -> Rule {
        Rule { inner: Arc::new(compiled), paths: None, row: None, row_index: 0 }
    }

    /// Whether matches are replaced by a function (which may wait on another thread, e.g. Node's).
    pub fn calls_function(&self) -> bool {
        matches!(&self.inner.engine, Engine::Regex(re) if matches!(re.replacement, Replacement::Function(_)))
    }

    /// How the rule is shown in errors and logs, e.g. `/foo/g`.
    pub fn label(&self) -> &str {
        &self.inner.label
    }

    pub(super) fn compile(
        label: String,
        pattern: &str,
        global: bool,
        units: Units,
        replacement: RuleReplacement,
    ) -> Result<Rule, RuleError> {
        Rule::compile_with(label, pattern, global, units, replacement, false)
    }

    /// [`Rule::compile`]; with `on_lines`, the automata read the line view even if `pattern` has no multi-line
    /// anchors (a look-around's body has them).
    pub(super) fn compile_with(
        label: String,
        pattern: &str,
        global: bool,
        units: Units,
        replacement: RuleReplacement,
        on_lines: bool,
    ) -> Result<Rule, RuleError> {
        let replacement = match replacement {
            RuleReplacement::Function(f) => Replacement::Function(f),
            RuleReplacement::Text(text) => {
                let hir = parse(pattern)?;
                let (count, named) = group_info(&hir);
                Replacement::Template(Template::parse(&text, count, named)?)
            }
        };
        Rule::build_with(label, pattern, global, units, replacement, None, on_lines)
    }

    pub(super) fn build(
        label: String,
        pattern: &str,
        global: bool,
        units: Units,
        replacement: Replacement,
    ) -> Result<Rule, RuleError> {
        Rule::build_with(label, pattern, global, units, replacement, None, false)
    }

    /// [`Rule::build`] with the candidates given (`None`: from the pattern's prefix), and on the line view
    /// whatever the pattern (`on_lines`).
    fn build_with(
        label: String,
        pattern: &str,
        global: bool,
        units: Units,
        replacement: Replacement,
        candidates: Option<Candidates>,
        on_lines: bool,
    ) -> Result<Rule, RuleError> {
        let (units, low_view) = match units {
            Units::No => (false, None),
            Units::Yes(view) => (true, view),
        };
        let groups_hir = parse(pattern)?;
        // Multi-line anchors: everything reads the line view, so the pattern is written in it.
        let lines = on_lines || lines::uses_lines(&groups_hir);
        let groups_hir = if lines { lines::line_view_hir(&groups_hir) } else { groups_hir };
        // The automata find spans only: they run the pattern with JavaScript's repetition rules made explicit.
        let hir = js_regex::js_repetitions(&groups_hir);
        let candidates =
            candidates.unwrap_or_else(|| match Prefilter::from_hir_prefix(MatchKind::LeftmostFirst, &hir) {
                Some(pre) if pre.is_fast() => Candidates::Prefix(pre),
                _ => Candidates::Every,
            });
        // Start states only need checking where a prefilter can skip ahead from them.
        let (dfa, reverse) = build_dfas(&[&hir], !matches!(candidates, Candidates::Every))?;
        let prefix_reverse = build_prefix_reverse(&hir);
        let needs_captures = match &replacement {
            Replacement::Template(t) => t.needs_groups(),
            Replacement::Function(_) => true,
            Replacement::EncodedLocalOrigin { .. } | Replacement::Snippet(_) | Replacement::MetaPolicy => false,
        };
        let captures = if !needs_captures {
            None
        } else if js_regex::needs_js_captures(&groups_hir) {
            Some(GroupFinder::Js(js_regex::JsCaptures::new(&groups_hir).map_err(|e| RuleError::TooComplex(e.0))?))
        } else {
            Some(GroupFinder::Meta(
                meta::Builder::new()
                    .configure(
                        meta::Config::new()
                            .nfa_size_limit(Some(NFA_SIZE_LIMIT))
                            .utf8_empty(false)
                            .line_terminator(lines::LINE_TERMINATOR),
                    )
                    .build_from_hir(&groups_hir)
                    .map_err(|e| RuleError::TooComplex(e.to_string()))?,
            ))
        };
        let anchored_starts = StartStates::new(&dfa, Anchored::Yes);
        // A low half follows two continuation bytes; any continuation byte stands for all of them.
        // A view's low halves are told apart by the byte before them: characters are held whole.
        let low_half_starts = low_view.is_some()
            || units
                && anchored_starts
                    .get(Some(0x80))
                    .is_some_and(|state| (0x80..=0xBF).any(|byte| !dfa.is_dead_state(dfa.next_state(state, byte))));
        Ok(Rule {
            inner: Arc::new(CompiledRule {
                label,
                global,
                engine: Engine::Regex(Box::new(RegexRule {
                    sticky: false,
                    units,
                    lines,
                    low_view,
                    low_half_starts,
                    anchored_starts,
                    unanchored_starts: StartStates::new(&dfa, Anchored::No),
                    dfa,
                    reverse,
                    captures,
                    looks: None,
                    candidates,
                    replacement,
                    prefix_reverse,
                    hir: groups_hir,
                    members: Vec::new(),
                })),
            }),
            paths: None,
            row: None,
            row_index: 0,
        })
    }
}

pub(super) fn parse(pattern: &str) -> Result<Hir, RuleError> {
    // Without `u` a pattern may match half of an astral character (see `js_regex`), which is not UTF-8.
    regex_syntax::ParserBuilder::new()
        .utf8(false)
        .nest_limit(256)
        .build()
        .parse(pattern)
        .map_err(|e| RuleError::TooComplex(format!("translated pattern rejected: {e}")))
}

/// The forward and reverse DFAs of one pattern, or of a group's (whose reverse DFA has a start per pattern:
/// a match's start is searched for with its own pattern).
pub(super) fn build_dfas(hirs: &[&Hir], skip_from_start_states: bool) -> Result<(Dfa, Dfa), RuleError> {
    let build = |reverse: bool| {
        let nfa = thompson::Compiler::new()
            .configure(
                thompson::Config::new()
                    .nfa_size_limit(Some(NFA_SIZE_LIMIT))
                    .shrink(!reverse)
                    .reverse(reverse)
                    .look_matcher(lines::look_matcher())
                    .which_captures(thompson::WhichCaptures::None),
            )
            .build_many_from_hir(hirs)
            .map_err(|e| RuleError::TooComplex(e.to_string()))?;
        // Bounded by work, not only by size: a pattern such as `/\b(?:\w+\s+){1000}/` has a small DFA whose
        // states each hold a set that grows with the repetition, so its time grows as the square.
        let classes = nfa.byte_classes().alphabet_len();
        let work_limit = (DETERMINIZE_WORK_LIMIT / classes).min(DFA_SIZE_LIMIT);
        let config = dense::Config::new().dfa_size_limit(Some(DFA_SIZE_LIMIT)).determinize_size_limit(Some(work_limit));
        let config = if reverse {
            config.match_kind(MatchKind::All).start_kind(StartKind::Anchored).starts_for_each_pattern(hirs.len() > 1)
        } else {
            config
                .match_kind(MatchKind::LeftmostFirst)
                .start_kind(StartKind::Both)
                .specialize_start_states(skip_from_start_states)
        };
        dense::Builder::new().configure(config).build_from_nfa(&nfa).map_err(|e| match e.to_string() {
            text if text.starts_with("determinization exceeded") => RuleError::TooComplex(format!(
                "building its automaton would take more than about a second: the states it tracks at once \
                 outgrew {} KiB over {classes} byte classes; a long counted repetition (such as `{{1000}}`) \
                 of a pattern that can start anywhere is the usual cause",
                work_limit >> 10
            )),
            text => RuleError::TooComplex(text),
        })
    };
    Ok((build(false)?, build(true)?))
}

/// The forward DFA of `hir` that reports every match (unanchored or anchored): an unbounded lookbehind's,
/// run from the text's start (see `look_around`).
pub(super) fn build_all_matches_dfa(hir: &Hir) -> Result<Dfa, RuleError> {
    let nfa = thompson::Compiler::new()
        .configure(
            thompson::Config::new()
                .nfa_size_limit(Some(NFA_SIZE_LIMIT))
                .look_matcher(lines::look_matcher())
                .which_captures(thompson::WhichCaptures::None),
        )
        .build_from_hir(hir)
        .map_err(|e| RuleError::TooComplex(e.to_string()))?;
    let classes = nfa.byte_classes().alphabet_len();
    let config = dense::Config::new()
        .dfa_size_limit(Some(DFA_SIZE_LIMIT))
        .determinize_size_limit(Some((DETERMINIZE_WORK_LIMIT / classes).min(DFA_SIZE_LIMIT)))
        .match_kind(MatchKind::All)
        .start_kind(StartKind::Both);
    dense::Builder::new().configure(config).build_from_nfa(&nfa).map_err(|e| RuleError::TooComplex(e.to_string()))
}

/// The reverse DFA of the rule's non-empty prefixes (see `prefixes`). It only saves time, so a rule
/// whose prefix automaton would be large does without it.
pub(super) fn build_prefix_reverse(hir: &Hir) -> Option<Dfa> {
    const LIMIT: usize = 2 << 20;
    let prefixes = prefixes::live_runs(hir);
    let nfa = thompson::Compiler::new()
        .configure(
            thompson::Config::new()
                .nfa_size_limit(Some(LIMIT))
                .reverse(true)
                .look_matcher(lines::look_matcher())
                .which_captures(thompson::WhichCaptures::None),
        )
        .build_from_hir(&prefixes)
        .ok()?;
    let config = dense::Config::new()
        .dfa_size_limit(Some(LIMIT))
        .determinize_size_limit(Some(LIMIT))
        .match_kind(MatchKind::All)
        .start_kind(StartKind::Anchored);
    dense::Builder::new().configure(config).build_from_nfa(&nfa).ok()
}
