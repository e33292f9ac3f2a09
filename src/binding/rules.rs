//! Rewrite rules read from JS: the parser that names the bad rule, `snippetOptions` (the snippet rule
//! and the URLs always or never rewritten), and compiling rules off the JS thread. `RewriteRule` and
//! `snippetOptions`' types are declared in `declarations.rs`.

use napi::bindgen_prelude::*;
use napi::{Env, ValueType};

use super::args::{expect_object, glob_list, type_name, Fields};
use super::option_names::{
    RULE as RULE_NAMES, SNIPPET_OPTIONS as SNIPPET_OPTION_NAMES, SNIPPET_RULE as SNIPPET_RULE_NAMES,
};
use super::replace::{DirectReplace, ThreadsafeReplace};
use super::{config_error, invalid};
use crate::config::ProxyConfig;
use crate::globs::UrlGlobs;
use crate::rewrite::{Rule, RuleReplacement};
use crate::warnings;

/// `snippetOptions`: the snippet rule (compiled here, on the JS thread: it is one small pattern), the
/// whitelist and the blacklist (with `ignorePaths`).
pub(super) fn parse_snippet_options(value: Unknown, config: &mut ProxyConfig) -> Result<()> {
    let options = Fields::new(expect_object(value, "snippetOptions")?, SNIPPET_OPTION_NAMES);
    config.warnings.extend(warnings::for_keys(
        "snippetOptions",
        &Object::keys(&options.object)?,
        SNIPPET_OPTION_NAMES,
        &[],
        &[],
        &[],
    ));
    // Browsersync loads its own client script with it; there is nothing here to load.
    let _ = options.get("async")?;
    if let Some(whitelist) = options.get("whitelist")? {
        let globs = glob_list(whitelist, "snippetOptions.whitelist")?.into_iter().map(ensure_slash).collect::<Vec<_>>();
        config.rewrite_whitelist = non_empty(UrlGlobs::new(&globs, "snippetOptions.whitelist").map_err(config_error)?);
    }
    let mut blacklist = Vec::new();
    if let Some(list) = options.get("blacklist")? {
        blacklist.extend(glob_list(list, "snippetOptions.blacklist")?);
    }
    if let Some(list) = options.get("ignorePaths")? {
        blacklist.extend(glob_list(list, "snippetOptions.ignorePaths")?.into_iter().map(ensure_slash));
    }
    config.rewrite_blacklist = non_empty(UrlGlobs::new(&blacklist, "snippetOptions.blacklist").map_err(config_error)?);
    if let Some(rule) = options.get("rule")? {
        let rule = Fields::new(expect_object(rule, "snippetOptions.rule")?, SNIPPET_RULE_NAMES);
        let (source, flags) = match rule.get("match")? {
            Some(matcher) if matcher.get_type()? == ValueType::Object => {
                let regex = Object::from_unknown(matcher)?;
                (regex.get_named_property::<String>("source")?, regex.get_named_property::<String>("flags")?)
            }
            Some(other) => {
                return Err(invalid(format!("snippetOptions.rule.match must be a RegExp, got {}", type_name(&other))))
            }
            None => (r"<body[^>]*>".to_string(), "i".to_string()),
        };
        let function = match rule.get("fn")? {
            Some(f) if f.get_type()? == ValueType::Function => Some(Function::from_unknown(f)?),
            Some(other) => {
                return Err(invalid(format!("snippetOptions.rule.fn must be a function, got {}", type_name(&other))))
            }
            None => None,
        };
        rule.finish();
        // Without a snippet there is nothing to place: no rule, `fn` is never called.
        if let Some(snippet) = &config.snippet {
            let compiled = match function {
                Some(f) => Rule::regex(&source, &flags, RuleReplacement::Function(ThreadsafeReplace::register(f)?)),
                None => Rule::snippet_at(&source, &flags, snippet),
            };
            config.snippet_rule = Some(compiled.map_err(|e| invalid(format!("snippetOptions.rule: {e}")))?);
        }
    }
    options.finish();
    Ok(())
}

/// Browsersync's `ensureSlash` for `whitelist` and `ignorePaths`.
fn ensure_slash(glob: String) -> String {
    if glob.starts_with('/') {
        glob
    } else {
        format!("/{glob}")
    }
}

fn non_empty(globs: UrlGlobs) -> Option<UrlGlobs> {
    (!globs.is_empty()).then_some(globs)
}

/// Compiles rules on tokio's blocking pool (building their automata may take a while).
pub(super) async fn compile_off_thread(specs: Vec<RuleSpec>) -> Result<Vec<Rule>> {
    if specs.is_empty() {
        return Ok(Vec::new());
    }
    tokio::task::spawn_blocking(move || specs.into_iter().map(RuleSpec::compile).collect::<Result<Vec<_>>>())
        .await
        .map_err(|e| Error::new(Status::GenericFailure, format!("compiling rules failed: {e}")))?
}

/// A rule read from JS, not yet compiled.
pub(super) struct RuleSpec {
    /// Where it came from, for errors: `rewriteRules[2]`, `rule`.
    name: String,
    pattern: Pattern,
    replacement: RuleReplacement,
    paths: Option<UrlGlobs>,
}

enum Pattern {
    Literal(String),
    Regex { source: String, flags: String },
}

impl RuleSpec {
    pub(super) fn compile(self) -> Result<Rule> {
        let compiled = match &self.pattern {
            Pattern::Literal(text) => Rule::literal(text, self.replacement),
            Pattern::Regex { source, flags } => Rule::regex(source, flags, self.replacement),
        };
        let compiled = compiled.map_err(|e| invalid(format!("{}: {e}", self.name)))?;
        Ok(match self.paths {
            Some(paths) => compiled.with_paths(paths),
            None => compiled,
        })
    }
}

pub(super) fn parse_rules(env: &Env, rules: Unknown, option: &str, mode: CallMode) -> Result<Vec<RuleSpec>> {
    if !rules.is_array()? {
        return Err(invalid(format!(
            "option `{option}` must be an array of {{ match, replace }}, got {}",
            type_name(&rules)
        )));
    }
    let array = Object::from_unknown(rules)?;
    let length = array.get_array_length()?;
    (0..length).map(|i| parse_rule(env, array.get_element::<Unknown>(i)?, &format!("{option}[{i}]"), mode)).collect()
}

#[derive(Clone, Copy)]
pub(super) enum CallMode {
    /// Called from the proxy's threads, through a threadsafe function.
    Threadsafe,
    /// Called on the JS thread during `rewrite()`.
    Direct,
}

pub(super) fn parse_rule(env: &Env, rule: Unknown, name: &str, mode: CallMode) -> Result<RuleSpec> {
    if rule.get_type()? != ValueType::Object {
        return Err(invalid(format!("{name} must be an object {{ match, replace }}, got {}", type_name(&rule))));
    }
    let rule = Fields::new(Object::from_unknown(rule)?, RULE_NAMES);
    let matcher = rule.get("match")?.ok_or_else(|| invalid(format!("{name} has no `match` (a RegExp or a string)")))?;
    // resp-modifier takes `replace` as `fn`: one of the two, either a string or a function.
    let (key, replace) = match (rule.get("replace")?, rule.get("fn")?) {
        (Some(_), Some(_)) => {
            return Err(invalid(format!("{name} has both `replace` and `fn`; give one (they mean the same)")))
        }
        (Some(replace), None) => ("replace", replace),
        (None, Some(function)) => ("fn", function),
        (None, None) => {
            return Err(invalid(format!("{name} has no `replace` or `fn` (a string or a function)")));
        }
    };
    // Browsersync's `id` names a rule for its `removeRewriteRule(id)` (the adapter's business): known, unused here.
    let _id = rule.get("id")?;
    let paths = match rule.get("paths")? {
        Some(paths) => {
            let globs = glob_list(paths, &format!("{name}.paths"))?;
            non_empty(UrlGlobs::new(&globs, "paths").map_err(|e| invalid(format!("{name}: {e}")))?)
        }
        None => None,
    };
    let replacement = match replace.get_type()? {
        ValueType::String => RuleReplacement::Text(String::from_unknown(replace)?),
        ValueType::Function => RuleReplacement::Function(match mode {
            CallMode::Threadsafe => ThreadsafeReplace::register(Function::from_unknown(replace)?)?,
            CallMode::Direct => DirectReplace::register(env, Function::from_unknown(replace)?)?,
        }),
        _ => return Err(invalid(format!("{name}.{key} must be a string or a function, got {}", type_name(&replace)))),
    };
    let pattern = match matcher.get_type()? {
        ValueType::String => Pattern::Literal(String::from_unknown(matcher)?),
        ValueType::Object if is_regexp(env, &matcher)? => {
            let regex = Object::from_unknown(matcher)?;
            Pattern::Regex { source: regex.get_named_property("source")?, flags: regex.get_named_property("flags")? }
        }
        _ => return Err(invalid(format!("{name}.match must be a RegExp or a string, got {}", type_name(&matcher)))),
    };
    rule.finish();
    Ok(RuleSpec { name: name.to_string(), pattern, replacement, paths })
}

fn is_regexp(env: &Env, value: &Unknown) -> Result<bool> {
    let constructor: Function<Unknown, Unknown> = env.get_global()?.get_named_property("RegExp")?;
    value.instanceof(constructor)
}
