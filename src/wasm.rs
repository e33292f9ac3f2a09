//! The WebAssembly build's exports: the rewrite engine alone, for `devproxy-native/wasm`
//! (`wasm/rewriter.mjs` gives them the documented API: `createRewriter`, `rewrite`).
//!
//! JS reads the rules (a RegExp's `source` and `flags`, a string, a replacement string or function)
//! and adds them one by one to a `Rules`, compiled once (`compileRules`) for any number of bodies; a
//! `Stream` then rewrites one body chunk by chunk, or `rewriteText` a whole string. A stream holds its
//! own references to the compiled rules: freeing the `Rules` leaves the streams made from it running.
//! Replacement functions are called synchronously on the one thread there is, with JS's
//! `(match, p1, ..., pn, offset, string, groups)`; the glue adds the body's `req` and `res`.

use std::cell::RefCell;
use std::sync::Arc;

use js_sys::{Array, Function, Object, Reflect};
use wasm_bindgen::prelude::*;

use crate::globs::UrlGlobs;
use crate::rewrite::{self, ReplaceCall, ReplaceFn, Rule, RuleReplacement};

/// How many snippet rules and link rewrites (one per snippet text, per origin) a `Rules` keeps compiled.
const KEPT_PER_BODY_RULES: usize = 8;

/// A rule set being built, then compiled into grouped stages once, for every body it rewrites.
#[wasm_bindgen]
#[derive(Default)]
pub struct Rules {
    user: Vec<Rule>,
    /// The rules of `user` without `paths`, grouped as the engine runs them; made at the first body.
    grouped: Option<Vec<Rule>>,
    /// Every rule of `user`, grouped: what a body without a URL goes through (`rewrite()`).
    all_grouped: Option<Vec<Rule>>,
    /// The snippet rules of the last few snippets: a body's snippet runs first (Browsersync's order).
    snippets: Vec<(String, Rule)>,
    /// The link rewrites of the last few (origin host, local scheme) pairs: they run last.
    link_rewrites: Vec<((String, &'static str), Vec<Rule>)>,
}

#[wasm_bindgen]
impl Rules {
    /// An empty rule set.
    #[wasm_bindgen(constructor)]
    pub fn new() -> Rules {
        Rules::default()
    }

    /// A RegExp rule; `replace` is a replacement string or a function. `name` (`rules[2]`) is what an
    /// error names.
    /// `paths`, when given, limits the rule to the URLs its globs match (`Stream`'s `url`).
    pub fn regex(
        &mut self,
        name: &str,
        source: &str,
        flags: &str,
        replace: JsValue,
        paths: Option<Vec<String>>,
    ) -> Result<(), JsError> {
        let rule = Rule::regex(source, flags, replacement(name, replace)?).map_err(|e| named(name, e))?;
        self.add(name, rule, paths)
    }

    /// A string rule: its first occurrence replaced, as `String.prototype.replace` does.
    pub fn literal(
        &mut self,
        name: &str,
        text: &str,
        replace: JsValue,
        paths: Option<Vec<String>>,
    ) -> Result<(), JsError> {
        let rule = Rule::literal(text, replacement(name, replace)?).map_err(|e| named(name, e))?;
        self.add(name, rule, paths)
    }

    /// Checks that the rules' automata fit the memory budget (as `start()` does).
    #[wasm_bindgen(js_name = checkMemory)]
    pub fn check_memory(&self) -> Result<(), JsError> {
        rewrite::check_memory(&self.user).map_err(|e| JsError::new(&format!("rules: {e}")))
    }

    fn add(&mut self, name: &str, rule: Rule, paths: Option<Vec<String>>) -> Result<(), JsError> {
        let rule = match paths {
            Some(globs) => rule
                .with_paths(UrlGlobs::new(&globs, "paths").map_err(|e| JsError::new(&format!("{name}.paths: {e}")))?),
            None => rule,
        };
        self.user.push(rule);
        self.grouped = None;
        self.all_grouped = None;
        Ok(())
    }

    /// The rules a body at `url` goes through, as the proxy picks them: where rules limited by
    /// `paths` match the URL, those alone; else the snippet, the other rules (grouped) and the link
    /// rewrite. Without a URL (the native `rewrite()`'s way), every rule. Grouping, and compiling the
    /// snippet and link rules, happen at the first body that needs them: later bodies clone references.
    fn for_url(&mut self, url: Option<&str>, extras: &BodyRules) -> Result<Vec<Rule>, JsError> {
        let user = &self.user;
        let grouped = match url {
            None => self.all_grouped.get_or_insert_with(|| Rule::grouped(user)),
            Some(url) => {
                let limited: Vec<Rule> =
                    user.iter().filter(|r| r.paths().is_some_and(|p| p.matches(url))).cloned().collect();
                if !limited.is_empty() {
                    return Ok(limited);
                }
                self.grouped.get_or_insert_with(|| {
                    Rule::grouped(&user.iter().filter(|r| r.paths().is_none()).cloned().collect::<Vec<_>>())
                })
            }
        };
        let mut rules = Vec::with_capacity(grouped.len() + 3);
        if let Some(snippet) = &extras.snippet {
            rules.push(kept(&mut self.snippets, snippet.clone(), || Ok(Rule::snippet(snippet)))?.clone());
        }
        rules.extend(grouped.iter().cloned());
        if let Some((from_host, local_scheme)) = &extras.links {
            let scheme = match local_scheme.as_str() {
                "http" => "http",
                "https" => "https",
                other => {
                    return Err(JsError::new(&format!("options.to must be an http: or https: origin, got {other}:")))
                }
            };
            let links = kept(&mut self.link_rewrites, (from_host.clone(), scheme), || {
                Ok(vec![Rule::links(from_host, scheme), Rule::encoded_origin(from_host, scheme)])
            })?;
            rules.extend(links.iter().cloned());
        }
        Ok(rules)
    }
}

/// What one body adds to the rules: Browsersync's snippet after the first `<body ...>` tag, and its link
/// rewrite, by which links to an origin host (`example.com`, `host:8080`) lead to the stream's
/// `local_host` instead, and so do percent-encoded origins (with the local scheme).
struct BodyRules {
    snippet: Option<String>,
    links: Option<(String, String)>,
}

/// The value kept under `key` in `kept` (the most recently used first, at most [`KEPT_PER_BODY_RULES`]),
/// made by `make` when missing.
fn kept<K: PartialEq, V>(
    kept: &mut Vec<(K, V)>,
    key: K,
    make: impl FnOnce() -> Result<V, JsError>,
) -> Result<&V, JsError> {
    match kept.iter().position(|(k, _)| *k == key) {
        Some(at) => kept[..=at].rotate_right(1),
        None => {
            let value = make()?;
            kept.truncate(KEPT_PER_BODY_RULES - 1);
            kept.insert(0, (key, value));
        }
    }
    Ok(&kept[0].1)
}

/// One body, rewritten chunk by chunk: never held whole, at most the longest pending match plus a
/// byte held back (capped by `max_match_bytes`).
#[wasm_bindgen]
pub struct Stream {
    rewriter: rewrite::Rewriter,
}

#[wasm_bindgen]
impl Stream {
    /// A body at `url` (path and query, for rules' `paths`; none: every rule applies) rewritten with
    /// `rules`, the `snippet` after its first `<body ...>` tag; with `from_host`, links to it lead to
    /// `local_host` (`localhost:8787`) with `local_scheme` (`http`, `https`).
    #[wasm_bindgen(constructor)]
    pub fn new(
        rules: &mut Rules,
        url: Option<String>,
        local_host: &str,
        max_match_bytes: usize,
        snippet: Option<String>,
        from_host: Option<String>,
        local_scheme: Option<String>,
    ) -> Result<Stream, JsError> {
        let links = from_host.map(|host| (host, local_scheme.unwrap_or_default()));
        let rules = rules.for_url(url.as_deref(), &BodyRules { snippet, links })?;
        Ok(Stream { rewriter: rewrite::Rewriter::new(&rules, local_host, max_match_bytes) })
    }

    /// The next chunk; returns what is final.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<u8>, JsError> {
        let mut out = Vec::with_capacity(chunk.len() + chunk.len() / 8);
        self.rewriter.push(chunk, &mut out).map_err(|e| JsError::new(&e.to_string()))?;
        Ok(out)
    }

    /// The end of the body; returns what was still held back, rewritten.
    pub fn finish(&mut self) -> Result<Vec<u8>, JsError> {
        let mut out = Vec::new();
        self.rewriter.finish(&mut out).map_err(|e| JsError::new(&e.to_string()))?;
        Ok(out)
    }

    /// Bytes held back now (for tests of the memory bound).
    #[wasm_bindgen(getter, js_name = heldBytes)]
    pub fn held_bytes(&self) -> usize {
        self.rewriter.held_bytes()
    }
}

/// `input` rewritten whole, as `String.prototype.replace` applied rule after rule: a function rule
/// gets its own input as `string` (`first_string`, the caller's own string, for the first rule).
#[wasm_bindgen(js_name = rewriteText)]
pub fn rewrite_text(rules: &mut Rules, input: &str, first_string: JsValue) -> Result<String, JsError> {
    let rules = rules.for_url(None, &BodyRules { snippet: None, links: None })?;
    let mut bytes = input.as_bytes().to_vec();
    let mut first = 0;
    // However this ends, streams' functions get `undefined` as `string` again.
    let mut set = None;
    // Runs of rules without functions go through the engine together; before a function rule, its
    // input becomes its `string`.
    for end in 1..=rules.len() {
        if end < rules.len() && !rules[end].calls_function() {
            continue;
        }
        let run = &rules[first..end];
        if run[0].calls_function() {
            let string = if first == 0 {
                first_string.clone()
            } else {
                JsValue::from_str(std::str::from_utf8(&bytes).map_err(|e| JsError::new(&e.to_string()))?)
            };
            CURRENT_STRING.with(|s| *s.borrow_mut() = string);
            // (`_with`: a `StringReset` made and dropped here would reset the string just set.)
            set.get_or_insert_with(|| StringReset);
        }
        // The whole string is in hand: no match is ever too long to wait for.
        bytes = rewrite::rewrite_bytes(&bytes, run, "", usize::MAX / 4).map_err(|e| JsError::new(&e.to_string()))?;
        first = end;
    }
    drop(set);
    String::from_utf8(bytes).map_err(|e| JsError::new(&e.to_string()))
}

/// Puts `CURRENT_STRING` back to `undefined` when dropped.
struct StringReset;

impl Drop for StringReset {
    fn drop(&mut self) {
        CURRENT_STRING.with(|s| *s.borrow_mut() = JsValue::UNDEFINED);
    }
}

/// Test hook, not part of the API (the `test-hooks` feature: not in the published .wasm): how many
/// replacement functions live rules hold.
#[cfg(feature = "test-hooks")]
#[wasm_bindgen(js_name = __liveFunctions)]
pub fn live_functions() -> usize {
    FUNCTIONS.with(|f| {
        let slots = f.borrow();
        slots.functions.len() - slots.free.len()
    })
}

thread_local! {
    /// The replacement functions of the live rule sets, by slot: a JS function is not `Send`, and the
    /// engine needs its rules `Send + Sync`; the rules hold only the slot. (WebAssembly here has one
    /// thread, so the slot is always found.)
    static FUNCTIONS: RefCell<Slots> = const { RefCell::new(Slots { functions: Vec::new(), free: Vec::new() }) };
    /// The `string` argument of the rule being applied by `rewriteText` (`undefined` on streams).
    static CURRENT_STRING: RefCell<JsValue> = const { RefCell::new(JsValue::UNDEFINED) };
}

/// The functions by slot; a slot is freed when the last rule holding it is dropped.
struct Slots {
    functions: Vec<Option<Function>>,
    free: Vec<usize>,
}

/// A JS replacement function, by its slot in `FUNCTIONS`.
struct JsReplace {
    slot: usize,
}

impl Drop for JsReplace {
    fn drop(&mut self) {
        FUNCTIONS.with(|f| {
            let mut slots = f.borrow_mut();
            slots.functions[self.slot] = None;
            slots.free.push(self.slot);
        });
    }
}

impl ReplaceFn for JsReplace {
    fn replace(&self, call: &ReplaceCall) -> Result<String, String> {
        // The borrow ends before JS runs: a function may itself rewrite.
        let function = FUNCTIONS
            .with(|f| f.borrow().functions.get(self.slot).cloned().flatten())
            .ok_or("a replacement function was called on another thread")?;
        let args = Array::new();
        args.push(&JsValue::from_str(call.whole));
        for group in call.groups {
            args.push(&group.map_or(JsValue::UNDEFINED, JsValue::from_str));
        }
        args.push(&JsValue::from_f64(call.offset as f64));
        args.push(&CURRENT_STRING.with(|s| s.borrow().clone()));
        if let Some(names) = call.names {
            let groups: Object = Object::create(&JsValue::NULL.unchecked_into::<Object>());
            for (name, group) in names.iter().zip(call.groups) {
                if let Some(name) = name {
                    let value = group.map_or(JsValue::UNDEFINED, JsValue::from_str);
                    Reflect::set(&groups, &JsValue::from_str(name), &value).map_err(describe)?;
                }
            }
            args.push(&groups);
        }
        let result = function.apply(&JsValue::UNDEFINED, &args).map_err(describe)?;
        // The glue returns the result already coerced as `String.prototype.replace` coerces it.
        result.as_string().ok_or_else(|| "the replacement function's result cannot become a string".to_string())
    }
}

/// A replacement string, or a function kept in `FUNCTIONS`.
fn replacement(name: &str, replace: JsValue) -> Result<RuleReplacement, JsError> {
    if let Some(text) = replace.as_string() {
        return Ok(RuleReplacement::Text(text));
    }
    let function: Function =
        replace.dyn_into().map_err(|_| JsError::new(&format!("{name}.replace must be a string or a function")))?;
    let slot = FUNCTIONS.with(|f| {
        let mut slots = f.borrow_mut();
        match slots.free.pop() {
            Some(slot) => {
                slots.functions[slot] = Some(function);
                slot
            }
            None => {
                slots.functions.push(Some(function));
                slots.functions.len() - 1
            }
        }
    });
    Ok(RuleReplacement::Function(Arc::new(JsReplace { slot })))
}

fn named(name: &str, error: rewrite::RuleError) -> JsError {
    JsError::new(&format!("{name}: {error}"))
}

/// What a JS exception says: its `message`, or the value as text.
fn describe(thrown: JsValue) -> String {
    Reflect::get(&thrown, &JsValue::from_str("message"))
        .ok()
        .and_then(|m| m.as_string())
        .or_else(|| thrown.as_string())
        .unwrap_or_else(|| format!("{thrown:?}"))
}
