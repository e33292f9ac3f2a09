//! `rewriteJson`: a JSON response keeps its data; only the targets' exact origins, as JSON and query
//! strings write them, become the proxy's. Browsersync leaves JSON alone (its issues 942, 557, 1519:
//! a REST answer's URLs send the browser to the origin), and its loose link matcher, where it does
//! run on JSON, eats escapes (issue 2016): so here a match is the whole origin and nothing looser.

use super::request::js_escape;
use crate::config::target::Target;
use crate::rewrite::{percent_encode_origin, Rule, RuleError, RuleReplacement};

/// What may follow a whole origin, as a JS regex group: the end, or a character that cannot continue
/// its host or port (`wp.test:80880`, `wp.test.cdn.net` and `wp.test@x` are other places). `$1` puts
/// it back.
const ORIGIN_END: &str = r"(?:$|([^\w.:@-]))";
/// The same after a percent-encoded origin, where `%3A` would start a port.
const ENCODED_ORIGIN_END: &str = r"(?:$|([^\w.:@%-]|%(?:[0-24-9a-f][0-9a-f]|3[0-9b-f])))";

/// The rules for a JSON response served at `local_scheme://local_host`: each target's origin, written
/// plainly (`http://wp.test:8088`), slash-escaped (`http:\/\/wp.test:8088`) or percent-encoded (any
/// case), to the proxy's in the same form.
pub(crate) fn origin_rules<'a>(
    local_scheme: &str,
    local_host: &str,
    targets: impl IntoIterator<Item = &'a Target>,
) -> Result<Vec<Rule>, RuleError> {
    let local = format!("{local_scheme}://{local_host}").replace('$', "$$");
    let rule = |source: String, replacement: String| {
        Rule::regex(&source, "gi", RuleReplacement::Text(format!("{replacement}$1")))
    };
    let mut origins: Vec<String> = targets.into_iter().map(Target::origin).collect();
    origins.dedup();
    let mut rules = Vec::with_capacity(origins.len() * 3);
    for origin in origins {
        let slashed = |text: &str| text.replace('/', r"\/");
        rules.push(rule(format!("{}{ORIGIN_END}", js_escape(&origin)), local.clone())?);
        rules.push(rule(format!("{}{ORIGIN_END}", js_escape(&slashed(&origin))), slashed(&local))?);
        let encoded = js_escape(&percent_encode_origin(&origin));
        rules.push(rule(format!("{encoded}{ENCODED_ORIGIN_END}"), percent_encode_origin(&local))?);
    }
    Ok(rules)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rewrite::{rewrite_bytes, DEFAULT_MAX_MATCH_BYTES};

    fn rewrite(json: &str) -> String {
        let target = Target::parse("http://wp.test:8088").unwrap();
        let rules = origin_rules("http", "localhost:3102", [&target]).unwrap();
        String::from_utf8(rewrite_bytes(json.as_bytes(), &rules, "localhost:3102", DEFAULT_MAX_MATCH_BYTES).unwrap())
            .unwrap()
    }

    #[test]
    fn the_targets_origin_in_each_form_becomes_the_proxys() {
        assert_eq!(
            rewrite(
                r#"{"a":"http:\/\/wp.test:8088\/wp-json\/","b":"http://WP.test:8088","c":"?to=http%3a%2F%2Fwp.test%3A8088%2Fx"}"#
            ),
            r#"{"a":"http:\/\/localhost:3102\/wp-json\/","b":"http://localhost:3102","c":"?to=http%3A%2F%2Flocalhost%3A3102%2Fx"}"#
        );
        assert_eq!(rewrite("http://wp.test:8088"), "http://localhost:3102", "at the end of the body");
    }

    #[test]
    fn only_the_exact_origin_is_touched() {
        let untouched = concat!(
            r#"["http://wp.test:80880/","http://wp.test:8088.cdn.net","https://wp.test:8088","//wp.test:8088/x","#,
            r#""wp.test:8088","http%3A%2F%2Fwp.test%3A8088%3A1","http://wp.test:8088@x.net","http:\/\/wp.test:8088-b"]"#
        );
        assert_eq!(rewrite(untouched), untouched);
    }
}
