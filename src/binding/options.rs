//! `start()`'s options (rules are in `rules.rs`, `serveStatic` and `routes` in `local.rs`): the parser
//! that turns JS values into a `ProxyConfig` and uncompiled `RuleSpec`s, with errors that name the bad
//! option or rule. Their TypeScript declarations are in `declarations.rs`.

use std::time::Duration;

use napi::bindgen_prelude::*;
use napi::{Env, ValueType};

use super::args::{
    expect_bool, expect_object, expect_string, expect_u32, expect_u32_from, get, string_array, type_name, Fields,
};
use super::option_names::{
    COOKIE as COOKIE_OPTION_NAMES, HTTPS as HTTPS_OPTION_NAMES, INSPECTOR as INSPECTOR_OPTION_NAMES,
    PROXY as PROXY_OPTION_NAMES, PROXY_OPTIONS as HTTP_PROXY_OPTION_NAMES, PROXY_TARGET as PROXY_TARGET_OPTION_NAMES,
};
use super::rules::{parse_rules, parse_snippet_options, CallMode, RuleSpec};
use super::{config_error, invalid};
use crate::config::{
    AllowedHosts, Https, InspectorConfig, LogLevel, ProxyConfig, Target, UpstreamCompression, VerifyTls,
    DEFAULT_INSPECTOR_PATH, DEFAULT_INSPECTOR_SIZE, MAX_CONNECTIONS_LIMIT, MAX_DURATION_MS, MAX_INSPECTOR_SIZE,
    MAX_MATCH_BYTES_LIMIT,
};
use crate::error::ConfigError;
use crate::observe::LogFormat;
use crate::warnings;

/// Reads `start()`'s options; the rules come back uncompiled (see `compile_off_thread`).
pub(super) fn parse_options(env: &Env, options: Unknown) -> Result<(ProxyConfig, Vec<RuleSpec>)> {
    let options = Fields::new(expect_object(options, "options")?, PROXY_OPTION_NAMES);
    let proxy = options.get("proxy")?.ok_or_else(|| config_error(ConfigError::MissingTarget))?;
    let mut warnings = Vec::new();
    let mut config = match proxy.get_type()? {
        ValueType::String => {
            let raw = expect_string(proxy, "proxy")?;
            let mut config = ProxyConfig::new(Target::parse(&raw).map_err(config_error)?);
            config.start_path = target_path(&raw);
            config
        }
        ValueType::Object => {
            let proxy = Fields::new(expect_object(proxy, "proxy")?, PROXY_TARGET_OPTION_NAMES);
            warnings.extend(warnings::for_keys(
                "proxy",
                &Object::keys(&proxy.object)?,
                PROXY_TARGET_OPTION_NAMES,
                warnings::PROXY_HANDLED_ELSEWHERE,
                &[],
                warnings::PROXY_UNSUPPORTED,
            ));
            let target = proxy.get("target")?.ok_or_else(|| config_error(ConfigError::MissingTarget))?;
            let raw = expect_string(target, "proxy.target")?;
            let mut config = ProxyConfig::new(Target::parse(&raw).map_err(config_error)?);
            config.start_path = target_path(&raw);
            if let Some(ws) = proxy.get("ws")? {
                config.ws = expect_bool(ws, "proxy.ws")?;
            }
            if let Some(options) = proxy.get("proxyOptions")? {
                let options = Fields::new(expect_object(options, "proxy.proxyOptions")?, HTTP_PROXY_OPTION_NAMES);
                if let Some(xfwd) = options.get("xfwd")? {
                    config.xfwd = expect_bool(xfwd, "proxy.proxyOptions.xfwd")?;
                }
                if let Some(secure) = options.get("secure")? {
                    config.verify_tls = VerifyTls::from_secure(expect_bool(secure, "proxy.proxyOptions.secure")?);
                }
                if let Some(change) = options.get("changeOrigin")? {
                    config.change_origin = expect_bool(change, "proxy.proxyOptions.changeOrigin")?;
                }
                options.finish();
            }
            if let Some(secure) = proxy.get("secure")? {
                config.verify_tls = VerifyTls::from_secure(expect_bool(secure, "proxy.secure")?);
            }
            if let Some(cookies) = proxy.get("cookies")? {
                let cookies = Fields::new(expect_object(cookies, "proxy.cookies")?, COOKIE_OPTION_NAMES);
                if let Some(strip) = cookies.get("stripDomain")? {
                    config.strip_cookie_domain = expect_bool(strip, "proxy.cookies.stripDomain")?;
                }
                cookies.finish();
            }
            if let Some(headers) = proxy.get("reqHeaders")? {
                let headers = expect_object(headers, "proxy.reqHeaders")?;
                for name in Object::keys(&headers)? {
                    let value =
                        get(&headers, &name)?.ok_or_else(|| invalid(format!("proxy.reqHeaders['{name}'] is empty")))?;
                    let value = expect_string(value, &format!("proxy.reqHeaders['{name}']"))?;
                    config.add_req_header(&name, &value).map_err(config_error)?;
                }
            }
            proxy.finish();
            config
        }
        _ => {
            return Err(invalid(format!(
                "option `proxy` must be a URL string or {{ target }}, got {}",
                type_name(&proxy)
            )))
        }
    };
    if let Some(port) = options.get("port")? {
        config.port = expect_u32(port, "port", u32::from(u16::MAX))? as u16;
    }
    if let Some(host) = options.get("host")? {
        config.host = expect_string(host, "host")?;
    }
    // Browsersync's `listen` overrides `host`.
    if let Some(listen) = options.get("listen")? {
        config.host = expect_string(listen, "listen")?;
    }
    if let Some(strict) = options.get("strictPort")? {
        config.strict_port = expect_bool(strict, "strictPort")?;
    }
    if let Some(https) = options.get("https")? {
        config.https = parse_https(https)?;
    }
    if let Some(snippet) = options.get("snippet")? {
        // Browsersync's `true`/`false` says whether to inject; there is nothing to inject without a string.
        config.snippet = match snippet.get_type()? {
            ValueType::Boolean => None,
            _ => Some(expect_string(snippet, "snippet (a string of HTML, or a boolean)")?),
        };
    }
    if let Some(snippet_options) = options.get("snippetOptions")? {
        parse_snippet_options(snippet_options, &mut config)?;
    }
    if let Some(ws) = options.get("ws")? {
        config.ws = expect_bool(ws, "ws")?;
    }
    if let Some(level) = options.get("logLevel")? {
        let level = expect_string(level, "logLevel")?;
        config.log_level = LogLevel::parse(&level).ok_or_else(|| {
            invalid(format!("option `logLevel` must be 'silent', 'warn', 'info' or 'debug', got '{level}'"))
        })?;
    }
    if let Some(prefix) = options.get("logPrefix")? {
        config.log_prefix = expect_string(prefix, "logPrefix")?;
    }
    if let Some(flag) = options.get("serverTiming")? {
        config.observe.server_timing = expect_bool(flag, "serverTiming")?;
    }
    if let Some(flag) = options.get("logRequests")? {
        config.observe.log_requests = expect_bool(flag, "logRequests")?;
    }
    if let Some(format) = options.get("logFormat")? {
        let format = expect_string(format, "logFormat")?;
        config.observe.log_format = LogFormat::parse(&format)
            .ok_or_else(|| invalid(format!("option `logFormat` must be 'text' or 'json', got '{format}'")))?;
    }
    if let Some(path) = options.get("startPath")? {
        config.start_path = Some(expect_string(path, "startPath")?);
    }
    if let Some(flag) = options.get("rewriteTextTypes")? {
        config.rewrite_text_types = expect_bool(flag, "rewriteTextTypes")?;
    }
    if let Some(flag) = options.get("rewriteJson")? {
        config.rewrite_json = expect_bool(flag, "rewriteJson")?;
    }
    if let Some(flag) = options.get("rewriteRequestBodies")? {
        config.rewrite_request_bodies = expect_bool(flag, "rewriteRequestBodies")?;
    }
    if let Some(quiet) = options.get("quiet")? {
        config.quiet = expect_bool(quiet, "quiet")?;
    }
    if let Some(value) = options.get("upstreamCompression")? {
        let value = expect_string(value, "upstreamCompression")?;
        config.upstream_compression = UpstreamCompression::parse(&value).ok_or_else(|| {
            invalid(format!("option `upstreamCompression` must be 'auto', 'always' or 'never', got '{value}'"))
        })?;
    }
    if let Some(max) = options.get("maxMatchBytes")? {
        config.max_match_bytes = expect_u32(max, "maxMatchBytes", MAX_MATCH_BYTES_LIMIT)?.max(1) as usize;
    }
    if let Some(ms) = options.get("upstreamTimeoutMs")? {
        let ms = expect_u32(ms, "upstreamTimeoutMs", MAX_DURATION_MS)?;
        config.upstream_timeout = (ms > 0).then(|| Duration::from_millis(u64::from(ms)));
    }
    if let Some(ms) = options.get("gracePeriodMs")? {
        config.grace_period = Duration::from_millis(u64::from(expect_u32(ms, "gracePeriodMs", MAX_DURATION_MS)?));
    }
    if let Some(hosts) = options.get("allowedHosts")? {
        config.allowed_hosts = parse_allowed_hosts(hosts)?;
    }
    if let Some(origins) = options.get("allowedOrigins")? {
        for (index, origin) in
            string_array(origins, "allowedOrigins", "origins such as 'http://localhost:5173'")?.iter().enumerate()
        {
            config.add_allowed_origin(index, origin).map_err(config_error)?;
        }
    }
    if let Some(max) = options.get("maxConnections")? {
        config.max_connections = expect_u32(max, "maxConnections", MAX_CONNECTIONS_LIMIT)?.max(1) as usize;
    }
    let static_options = match options.get("serveStaticOptions")? {
        Some(value) => Some(super::local::parse_static_options(value, "serveStaticOptions")?),
        None => None,
    };
    if let Some(dirs) = options.get("serveStatic")? {
        config.serve_static = super::local::parse_serve_static(dirs, static_options.as_ref())?;
        // Browsersync serves what a directory holds when a request comes, so one that a build has
        // not made yet is no error; but a typo would serve nothing in silence.
        for mount in config.serve_static.iter().filter(|mount| !mount.dir.is_dir()) {
            let what = if mount.dir.exists() { "is not a directory" } else { "does not exist (yet)" };
            warnings.push(format!(
                "serveStatic: '{}' {what}: nothing is served from it until it is a directory",
                mount.dir.display()
            ));
        }
    }
    if let Some(routes) = options.get("routes")? {
        config.routes = super::local::parse_routes(env, routes)?;
    }
    if let Some(replay) = options.get("replay")? {
        config.replay = Some(super::replay::parse_replay(env, replay, "replay")?);
    }
    if let Some(record) = options.get("record")? {
        let record = super::record::parse_record(record)?;
        config.observe.secret_headers.extend(record.redact.headers.iter().cloned());
        config.record = Some(record);
    }
    if let Some(inspector) = options.get("inspector")? {
        config.inspector = parse_inspector(inspector, &mut warnings)?;
    }
    // Test hook (the `test-hooks` feature): requests under /__devproxy_panic_probe/ panic (see config.rs).
    #[cfg(feature = "test-hooks")]
    if let Some(flag) = get(&options.object, "__panicProbes")? {
        config.panic_probes = expect_bool(flag, "__panicProbes")?;
    }
    let specs = match options.get("rewriteRules")? {
        Some(rules) => parse_rules(env, rules, "rewriteRules", CallMode::Threadsafe)?,
        None => Vec::new(),
    };
    options.finish();
    // Top-level keys first, then the nested objects' (the proxy's, then snippetOptions').
    let mut all = warnings::for_keys(
        "",
        &Object::keys(&options.object)?,
        PROXY_OPTION_NAMES,
        warnings::HANDLED_ELSEWHERE,
        warnings::BROWSERSYNC_OTHER,
        &[],
    );
    all.extend(warnings);
    all.extend(config.protections_off());
    all.append(&mut config.warnings);
    config.warnings = all;
    Ok((config, specs))
}

/// Browsersync's reading of a path in the `proxy` URL: it becomes `startPath` (`None` for `/`).
fn target_path(raw: &str) -> Option<String> {
    let raw = raw.trim();
    let with_scheme = if raw.contains("://") { raw.to_string() } else { format!("http://{raw}") };
    let url = url::Url::parse(&with_scheme).ok()?;
    let path = match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_string(),
    };
    (path != "/").then_some(path)
}

fn parse_allowed_hosts(value: Unknown) -> Result<AllowedHosts> {
    if value.get_type()? == ValueType::String {
        return match expect_string(value, "allowedHosts")?.as_str() {
            "auto" => Ok(AllowedHosts::Auto),
            "all" => Ok(AllowedHosts::All),
            other => Err(invalid(format!(
                "option `allowedHosts` must be 'auto', 'all' or an array of host names, got '{other}' (write ['{other}'])"
            ))),
        };
    }
    let entries = string_array(value, "allowedHosts", "host names, or 'auto' or 'all'")?;
    AllowedHosts::from_entries(&entries).map_err(config_error)
}

/// `inspector`: a boolean, or `{ path, size, remote }` (unknown keys are warned about, like the proxy's).
fn parse_inspector(value: Unknown, out: &mut Vec<String>) -> Result<Option<InspectorConfig>> {
    if value.get_type()? == ValueType::Boolean {
        return Ok(expect_bool(value, "inspector")?.then(InspectorConfig::default));
    }
    let fields = Fields::new(expect_object(value, "inspector")?, INSPECTOR_OPTION_NAMES);
    out.extend(warnings::for_keys("inspector", &Object::keys(&fields.object)?, INSPECTOR_OPTION_NAMES, &[], &[], &[]));
    let path = match fields.get("path")? {
        Some(path) => expect_string(path, "inspector.path")?,
        None => DEFAULT_INSPECTOR_PATH.to_string(),
    };
    let size = match fields.get("size")? {
        Some(size) => expect_u32_from(size, "inspector.size", 1, MAX_INSPECTOR_SIZE)?,
        None => DEFAULT_INSPECTOR_SIZE as u32,
    };
    let remote = match fields.get("remote")? {
        Some(remote) => expect_bool(remote, "inspector.remote")?,
        None => false,
    };
    fields.finish();
    let config = InspectorConfig::new(&path, size).map_err(config_error)?;
    Ok(Some(InspectorConfig { remote, ..config }))
}

/// `https`: a boolean, or `{ key, cert, ca }` paths. Browsersync's `pfx` and `passphrase` are refused
/// with the command that makes PEM files of them, rather than ignored.
fn parse_https(value: Unknown) -> Result<Https> {
    if value.get_type()? == ValueType::Boolean {
        return Ok(if expect_bool(value, "https")? { Https::SelfSigned } else { Https::Off });
    }
    let fields = Fields::new(expect_object(value, "https")?, HTTPS_OPTION_NAMES);
    if let Some(pfx) = fields.get("pfx")? {
        let path = expect_string(pfx, "https.pfx")?;
        return Err(invalid(format!(
            "option `https.pfx` ('{path}') is not supported: convert the PKCS#12 file to PEM with \
             `openssl pkcs12 -in '{path}' -nocerts -nodes -out key.pem` and \
             `openssl pkcs12 -in '{path}' -clcerts -nokeys -out cert.pem`, then pass \
             `https: {{ key: 'key.pem', cert: 'cert.pem' }}`"
        )));
    }
    if let Some(passphrase) = fields.get("passphrase")? {
        if !expect_string(passphrase, "https.passphrase")?.is_empty() {
            return Err(invalid(
                "option `https.passphrase` is not supported (encrypted keys): decrypt the key with \
                 `openssl pkey -in key.pem -out key-decrypted.pem` and pass that file as `https.key`",
            ));
        }
    }
    let path = |name: &'static str| -> Result<std::path::PathBuf> {
        let value = fields
            .get(name)?
            .ok_or_else(|| invalid(format!("option `https.{name}` is required: the path of a PEM file")))?;
        Ok(expect_string(value, &format!("https.{name}"))?.into())
    };
    let (key, cert) = (path("key")?, path("cert")?);
    let ca = match fields.get("ca")? {
        None => Vec::new(),
        Some(ca) if ca.get_type()? == ValueType::String => vec![expect_string(ca, "https.ca")?.into()],
        Some(ca) => string_array(ca, "https.ca", "paths")?.into_iter().map(Into::into).collect(),
    };
    fields.finish();
    Ok(Https::Files { key, cert, ca })
}
