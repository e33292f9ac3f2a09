//! The keys the binding's parsers read (src/binding/option_names.rs) against binding.d.ts's interfaces.
//! The lists are plain data, included here by path: the binding itself is built only with the `napi`
//! feature and never in a test build, and this check must also run in `cargo test --no-default-features`.

#[path = "../src/binding/option_names.rs"]
mod option_names;

/// The property names of `export interface <name> { ... }` in binding.d.ts, which napi generates
/// from the binding's `#[napi(object)]` structs.
fn interface_keys(dts: &str, name: &str) -> Vec<String> {
    let open = format!("export interface {name} {{");
    let start = dts.find(&open).unwrap_or_else(|| panic!("binding.d.ts has no `{open}`")) + open.len();
    let end = start + dts[start..].find("\n}").expect("the interface ends");
    dts[start..end]
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('/') && !line.starts_with('*'))
        .map(|line| line.split(':').next().unwrap().trim_end_matches('?').to_string())
        .collect()
}

#[test]
fn the_parsers_keys_are_the_declared_ones() {
    let dts = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/binding.d.ts")).unwrap();
    for (interface, names) in [
        ("ProxyOptions", option_names::PROXY),
        ("ProxyTargetOptions", option_names::PROXY_TARGET),
        ("CookieOptions", option_names::COOKIE),
        ("HttpProxyOptions", option_names::PROXY_OPTIONS),
        ("RewriteRule", option_names::RULE),
        ("SnippetOptions", option_names::SNIPPET_OPTIONS),
        ("SnippetRule", option_names::SNIPPET_RULE),
        ("HttpsOptions", option_names::HTTPS),
        ("StaticDir", option_names::STATIC_DIR),
        ("StaticOptions", option_names::STATIC_OPTIONS),
        ("RouteOptions", option_names::ROUTE),
        ("RecordOptions", option_names::RECORD),
        ("RedactOptions", option_names::REDACT),
        ("InspectorOptions", option_names::INSPECTOR),
    ] {
        let mut declared = interface_keys(&dts, interface);
        let mut parsed: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        declared.sort();
        parsed.sort();
        assert_eq!(parsed, declared, "the keys the parser reads differ from binding.d.ts's `{interface}`");
    }
}
