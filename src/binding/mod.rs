//! The Node binding: JS values in, core types out, core errors turned into JS errors that name the
//! culprit. Nothing else lives here; the proxy itself is in the core modules.
//!
//! This file holds the exported functions (`start`, `rewrite`, `__closestName`, and with the
//! `test-hooks` feature `__rewriteEach` and `__panicProbe`) and the errors the others share. `args`
//! reads JS values (`Fields`, `expect_*`); `option_names` lists the keys of each options object;
//! `declarations` holds the types that exist only for binding.d.ts; `options` parses the options
//! (`local`: `serveStatic` and `routes`; `record`, `replay`), `rules` the rewrite rules and
//! `snippetOptions`; `replace` calls JS replacement functions, `hooks` the proxyReq/proxyRes functions
//! and the middleware host, `on_request` the `onRequest` dispatcher; `server` is the `ProxyServer`
//! class, `status` what it reports.

// `#[napi]` registers exports only outside `cfg(test)`: a test build would hold code nothing reaches.
// The one test about the binding (tests/option_names.rs) includes the napi-free file it checks.
#![cfg(not(test))]

mod args;
mod declarations;
mod hooks;
mod local;
mod on_request;
mod option_names;
mod options;
mod outcome;
mod record;
mod replace;
mod replay;
mod rules;
mod server;
mod status;

use napi::bindgen_prelude::*;
use napi::{Env, JsValue, ValueType};
use napi_derive::napi;

use crate::error::{ConfigError, StartError};
use crate::rewrite;
use crate::server as core_server;
use args::type_name;
use options::parse_options;
use replace::DirectScope;
use rules::{compile_off_thread, parse_rules, CallMode, RuleSpec};
use server::{JsProxyServer, KeepAlive};

fn invalid(message: impl Into<String>) -> Error {
    Error::new(Status::InvalidArg, message.into())
}

fn config_error(e: ConfigError) -> Error {
    invalid(e.to_string())
}

/// Starts a proxy. Resolves to a running `ProxyServer`; rejects with an error naming the bad
/// option, rule or port.
/// Reading the options happens on the JS thread; compiling the rules (DFA construction, up to the
/// 16 MiB cap) on tokio's blocking pool, so a large rule never stalls Node's event loop.
/// `js` is what index.js's `start()` prepared (hooks and the middleware host); not for direct use.
#[napi(catch_unwind, ts_args_type = "options: ProxyOptions, js?: JsSide", ts_return_type = "Promise<ProxyServer>")]
pub fn start<'env>(env: &'env Env, options: Unknown, js: Option<Unknown>) -> Result<PromiseRaw<'env, JsProxyServer>> {
    let parsed = parse_options(env, options).and_then(|(mut config, specs)| {
        let mut code = core_server::UserCode::default();
        if let Some(js) = js {
            hooks::apply(js, &mut config, &mut code)?;
        }
        Ok((config, code, specs))
    });
    let keep_alive = parsed.as_ref().ok().map(|_| KeepAlive::new(env)).transpose()?;
    let started = async move {
        let (mut config, code, specs) = parsed?;
        config.rules = compile_off_thread(specs).await?;
        Ok(core_server::ProxyServer::start_with(config, code).await)
    };
    // The server, or the start error made on the JS thread, where it can carry Node's `code`.
    env.spawn_future_with_callback(started, move |env, started| match started {
        Ok(server) => Ok(JsProxyServer::new(server, keep_alive)),
        Err(e) => Err(start_error(env, e)),
    })
}

/// A failed start as a JS error; a taken port gets Node's `code: 'EADDRINUSE'` and `port`, as
/// `net.Server#listen` gives them.
fn start_error(env: &Env, error: StartError) -> Error {
    let port = match &error {
        StartError::PortInUse { port, .. } | StartError::NoFreePort { port, .. } => Some(*port),
        _ => None,
    };
    let plain = match error {
        StartError::Config(e) => config_error(e),
        other => Error::new(Status::GenericFailure, other.to_string()),
    };
    let Some(port) = port else { return plain };
    let reason = plain.reason.clone();
    let with_code = env.create_error(plain).and_then(|mut object| {
        object.set_named_property("code", "EADDRINUSE")?;
        object.set_named_property("port", u32::from(port))?;
        Ok(Error::from(object.to_unknown()))
    });
    with_code.unwrap_or_else(|_| Error::new(Status::GenericFailure, reason))
}

/// Applies `rules` to a string with the engine the proxy runs on bodies, for trying rules. Equal to
/// `rules.reduce((s, r) => s.replace(r.match, r.replace), input)`. An array of chunks (strings,
/// Buffers or Uint8Arrays, cut anywhere, even inside a character) is streamed through the engine
/// chunk by chunk as a proxied body is, and gives the same result as their concatenation; function
/// rules then get `undefined` as `string`, as in the proxy. Bytes that are not UTF-8 come out as U+FFFD.
/// Rule functions are called as in the proxy, `(req, res, match, ...)`; this native function passes
/// `undefined` for `req` and `res`, which the package's `rewrite` (lib/rules.js) fills in.
#[napi(catch_unwind, ts_args_type = "input: string | Array<string | Buffer | Uint8Array>, rules: RewriteRule[]")]
pub fn rewrite(env: Env, input: Unknown, rules: Unknown) -> Result<String> {
    // The functions of this call's rules, registered for the JS thread; freed however the call ends.
    let scope = DirectScope::open();
    let rules = compile_direct(&env, rules)?;
    rewrite_input(&env, &scope, &rules, input)
}

/// Test hook, not part of the API: `rewrite(input, rules)` for each of `inputs` in turn, with the rules
/// compiled once (the differential tests run each case whole and in several chunkings, and compiling is
/// most of a small case's time). Throws at the first input that fails. Not in binding.d.ts
/// (`skip_typescript`): the generated types are the same with the feature or without.
#[cfg(feature = "test-hooks")]
#[napi(
    catch_unwind,
    skip_typescript,
    js_name = "__rewriteEach",
    ts_args_type = "inputs: Array<string | Array<string | Buffer | Uint8Array>>, rules: RewriteRule[]"
)]
pub fn rewrite_each(env: Env, inputs: Unknown, rules: Unknown) -> Result<Vec<String>> {
    let scope = DirectScope::open();
    let rules = compile_direct(&env, rules)?;
    if !inputs.is_array()? {
        return Err(invalid(format!("inputs must be an array, got {}", type_name(&inputs))));
    }
    let inputs = Object::from_unknown(inputs)?;
    (0..inputs.get_array_length()?).map(|i| rewrite_input(&env, &scope, &rules, inputs.get_element(i)?)).collect()
}

/// The rules of a `rewrite()` call, compiled, their functions registered in the caller's `DirectScope`.
fn compile_direct(env: &Env, rules: Unknown) -> Result<Vec<rewrite::Rule>> {
    let rules = parse_rules(env, rules, "rules", CallMode::Direct)?
        .into_iter()
        .map(RuleSpec::compile)
        .collect::<Result<Vec<_>>>()?;
    rewrite::check_memory(&rules).map_err(|e| invalid(format!("rules: {e}")))?;
    Ok(rewrite::Rule::grouped(&rules))
}

/// One `rewrite()` of `input` (a string, or an array of chunks) with compiled `rules`.
fn rewrite_input(env: &Env, scope: &DirectScope, rules: &[rewrite::Rule], input: Unknown) -> Result<String> {
    let chunks = match input.get_type()? {
        ValueType::String => None,
        ValueType::Object if input.is_array()? => Some(read_chunks(input)?),
        _ => {
            return Err(invalid(format!(
                "input must be a string or an array of strings and Buffers, got {}",
                type_name(&input)
            )))
        }
    };
    let failed = |e: rewrite::ReplaceError| Error::new(Status::GenericFailure, e.to_string());
    // The whole string is in hand: no match is ever too long to wait for.
    let uncapped = usize::MAX / 4;
    let Some(chunks) = chunks else {
        let text = String::from_unknown(input)?;
        // A function rule gets its own input as `string`: the rules before it are applied first.
        // Runs of rules without functions go through the engine together.
        let mut bytes = text.into_bytes();
        let mut first = 0;
        for end in 1..=rules.len() {
            if end < rules.len() && !rules[end].calls_function() {
                continue;
            }
            let run = &rules[first..end];
            if run[0].calls_function() {
                // Rule 0 sees the caller's own string, lone surrogates and all.
                scope.set_string(if first == 0 {
                    input.raw()
                } else {
                    let text = std::str::from_utf8(&bytes).map_err(|e| invalid(e.to_string()))?;
                    env.create_string(text)?.raw()
                });
            }
            bytes = rewrite::rewrite_bytes(&bytes, run, "", uncapped).map_err(failed)?;
            first = end;
        }
        return String::from_utf8(bytes).map_err(|e| Error::new(Status::GenericFailure, e.to_string()));
    };
    // A streamed body is never whole: functions get `undefined` as `string` (whatever an earlier input set).
    scope.set_string(std::ptr::null_mut());
    // Uncapped, as for a string: every chunk is in hand. Many chunks go through as one (each push
    // rescans what a pending match holds back, so pushing many tiny ones would be quadratic).
    let mut rewriter = rewrite::Rewriter::new(rules, "", uncapped);
    let mut out = Vec::new();
    for chunk in gathered(chunks) {
        rewriter.push(&chunk, &mut out).map_err(failed)?;
    }
    rewriter.finish(&mut out).map_err(failed)?;
    Ok(String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

/// More chunks than this go through the engine as one piece (the result is their concatenation's
/// either way). Fewer are pushed as they are, so that tests can put chunk edges where they want them.
const MAX_CHUNKS_AS_GIVEN: usize = 64;

/// `chunks` as the engine gets them: as given, or joined when there are many.
fn gathered(chunks: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    if chunks.len() <= MAX_CHUNKS_AS_GIVEN {
        return chunks;
    }
    vec![chunks.concat()]
}

/// The chunks of `rewrite([...])`, as bytes; an element of another type is named by its index.
fn read_chunks(input: Unknown) -> Result<Vec<Vec<u8>>> {
    let array = Object::from_unknown(input)?;
    let length = array.get_array_length()?;
    (0..length)
        .map(|i| {
            let chunk: Unknown = array.get_element(i)?;
            let wrong =
                |what: &str| invalid(format!("input[{i}] must be a string, a Buffer or a Uint8Array, got {what}"));
            match chunk.get_type()? {
                ValueType::String => Ok(String::from_unknown(chunk)?.into_bytes()),
                ValueType::Object if chunk.is_typedarray()? => match Uint8ArraySlice::from_unknown(chunk) {
                    Ok(bytes) => Ok(bytes.to_vec()),
                    Err(_) => Err(wrong("another typed array")),
                },
                _ => Err(wrong(type_name(&chunk))),
            }
        })
        .collect()
}

/// For lib/ (the adapter's and the command line's "did you mean"): the candidate closest to `name`,
/// chosen as the proxy's own option warnings choose it; `null` when none is close.
#[napi(catch_unwind, js_name = "__closestName")]
pub fn closest_name(name: String, candidates: Vec<String>) -> Option<String> {
    crate::warnings::closest(&name, candidates.iter().map(String::as_str)).map(str::to_string)
}

/// Test hook, not part of the API: panics on the JS thread (`'sync'`) or inside the returned
/// Promise's task (`'async'`), so tests can show that a panic becomes a JS error, never a crash.
#[cfg(feature = "test-hooks")]
#[napi(catch_unwind, skip_typescript, js_name = "__panicProbe")]
pub fn panic_probe<'env>(env: &'env Env, place: String) -> Result<PromiseRaw<'env, ()>> {
    if place == "sync" {
        panic!("panic probe: binding (sync)");
    }
    env.spawn_future(async move {
        if place == "async" {
            panic!("panic probe: binding (async)");
        }
        Ok(())
    })
}
