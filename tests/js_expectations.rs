//! The engine against V8 itself. A fixed corpus of rules and inputs whose expected outputs were recorded
//! from Node's `String.prototype.replace`, applied rule after rule (tests/fixtures/
//! record-js-expectations.js writes tests/fixtures/js-expectations.json). Nothing here shares the
//! engine's JS-regex translation or replacement templates, unlike the reference of the property tests
//! in src/rewrite/tests.rs. Each case runs on the whole body and in fixed chunkings.

use devproxy_native::rewrite::{rewrite_bytes, Rewriter, Rule, RuleReplacement, DEFAULT_MAX_MATCH_BYTES};
use serde_json::Value;

const FIXTURE: &str = include_str!("fixtures/js-expectations.json");

/// The cases the engine does not reproduce, with their marks in the fixture: README's known
/// differences ("differs") and the rules it refuses when they are created ("rejected"). A case that
/// starts or stops differing fails the test, so this list and the fixture's marks stay exact.
const KNOWN: &[(&str, &str)] =
    &[("backreference", "rejected"), ("text-before-match", "rejected"), ("text-after-match", "rejected")];

fn text(value: &Value, key: &str) -> String {
    value[key].as_str().unwrap_or_else(|| panic!("fixture: no string {key:?} in {value}")).to_string()
}

/// A case's rules, or the engine's refusal of one of them.
fn rules_of(case: &Value) -> Result<Vec<Rule>, String> {
    let rules = case["rules"].as_array().expect("fixture: rules is an array");
    rules
        .iter()
        .map(|rule| {
            let replace = RuleReplacement::Text(text(rule, "replace"));
            let built = match rule.get("string") {
                Some(_) => Rule::literal(&text(rule, "string"), replace),
                None => Rule::regex(&text(rule, "source"), &text(rule, "flags"), replace),
            };
            built.map_err(|e| e.to_string())
        })
        .collect()
}

/// Chunk edges: every byte, every 2, 3 and 7 bytes (inside multi-byte characters too), halves, and
/// one byte off each end.
fn chunkings(len: usize) -> Vec<Vec<usize>> {
    let every = |n: usize| (n..len).step_by(n).collect::<Vec<_>>();
    vec![every(1), every(2), every(3), every(7), vec![len / 2], vec![1.min(len), len.saturating_sub(1)]]
}

fn streamed(input: &[u8], rules: &[Rule], cuts: &[usize]) -> Vec<u8> {
    let mut rewriter = Rewriter::new(rules, "localhost:3000", DEFAULT_MAX_MATCH_BYTES);
    let (mut out, mut at) = (Vec::new(), 0);
    for &cut in cuts.iter().chain([&input.len()]) {
        rewriter.push(&input[at..cut], &mut out).unwrap();
        at = cut;
    }
    rewriter.finish(&mut out).unwrap();
    out
}

#[test]
fn engine_reproduces_node_on_the_recorded_corpus() {
    let fixture: Value = serde_json::from_str(FIXTURE).expect("tests/fixtures/js-expectations.json parses");
    let cases = fixture["cases"].as_array().expect("fixture: cases is an array");
    assert!(cases.len() >= 100, "the corpus has {} cases", cases.len());
    let mut failures = Vec::new();
    let mut marks = Vec::new();
    for case in cases {
        let name = text(case, "name");
        let (input, expected) = (text(case, "input"), text(case, "output"));
        let mark = case.get("known").map(|k| k.as_str().expect("fixture: known is a string").to_string());
        if let Some(mark) = &mark {
            marks.push((name.clone(), mark.clone()));
        }
        let outcome = match rules_of(case) {
            Err(refusal) => Some(("rejected", refusal)),
            Ok(rules) => {
                let whole = rewrite_bytes(input.as_bytes(), &rules, "localhost:3000", DEFAULT_MAX_MATCH_BYTES)
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                for cuts in chunkings(input.len()) {
                    let out = streamed(input.as_bytes(), &rules, &cuts);
                    if out != whole {
                        failures.push(format!(
                            "{name}: chunks at {cuts:?} gave {:?}, whole body {:?}",
                            lossy(&out),
                            lossy(&whole)
                        ));
                    }
                }
                (whole != expected.as_bytes())
                    .then(|| ("differs", format!("engine {:?}, node {expected:?}", lossy(&whole))))
            }
        };
        let agrees = match (mark.as_deref(), &outcome) {
            (None, None) => true,
            (Some("bug"), Some(_)) => true,
            (Some(mark), Some((kind, _))) => mark == *kind,
            _ => false,
        };
        if !agrees {
            let what = outcome.map_or("the same as node".to_string(), |(kind, detail)| format!("{kind}: {detail}"));
            failures.push(format!("{name} (marked {mark:?}) on {input:?}: {what}"));
        }
    }
    assert!(failures.is_empty(), "{} of {} cases fail:\n{}", failures.len(), cases.len(), failures.join("\n"));
    let known: Vec<(String, String)> = KNOWN.iter().map(|&(n, k)| (n.to_string(), k.to_string())).collect();
    assert_eq!(marks, known, "the fixture's marks are not the list of known differences");
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
