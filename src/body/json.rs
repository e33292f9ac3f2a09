//! `rewriteJson`: a JSON response keeps its data; only the targets' exact origins, as JSON and query
//! strings write them, become the proxy's. Browsersync leaves JSON alone (its issues 942, 557, 1519:
//! a REST answer's URLs send the browser to the origin), and its loose link matcher, where it does
//! run on JSON, eats escapes (issue 2016): so here a match is the whole origin and nothing looser.

use crate::config::target::Target;
use crate::rewrite::{Forms, OriginSwap, Rule};

/// The rule for a JSON response served at `local_scheme://local_host`: each target's origin, written
/// plainly (`http://wp.test:8088`), slash-escaped (`http:\/\/wp.test:8088`) or percent-encoded (any
/// case), becomes the proxy's in the same form (`crate::rewrite::OriginSwap`, whose table of forms the
/// request side reverses).
pub(crate) fn origin_rules<'a>(
    local_scheme: &str,
    local_host: &str,
    targets: impl IntoIterator<Item = &'a Target>,
) -> Vec<Rule> {
    let mut origins: Vec<String> = targets.into_iter().map(Target::origin).collect();
    origins.dedup();
    let local = format!("{local_scheme}://{local_host}");
    vec![Rule::origins("rewriteJson", OriginSwap::new(origins.iter().map(String::as_str), &local, Forms::WITH_SCHEME))]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rewrite::{rewrite_bytes, DEFAULT_MAX_MATCH_BYTES};

    fn rewrite(json: &str) -> String {
        let target = Target::parse("http://wp.test:8088").unwrap();
        let rules = origin_rules("http", "localhost:3102", [&target]);
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
