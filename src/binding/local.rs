//! `serveStatic`, `serveStaticOptions` and `routes`: read as Browsersync (and, for `routes`, Vite)
//! read them, with errors that name the entry.

use napi::bindgen_prelude::*;
use napi::ValueType;

use super::args::{expect_bool, expect_object, expect_string, get, string_array, type_name, Fields};
use super::option_names::{ROUTE, STATIC_DIR, STATIC_OPTIONS};
use super::{config_error, invalid};
use crate::config::{Route, StaticMount, Target, VerifyTls};

/// What the proxy's local files do whatever serve-static is told: these keys are accepted with
/// these values only.
const FIXED_BEHAVIOUR: &[(&str, &str)] = &[
    ("dotfiles", "'ignore'"),
    ("etag", "true"),
    ("lastModified", "true"),
    ("acceptRanges", "true"),
    ("redirect", "true"),
    ("fallthrough", "true"),
];

/// serve-static's options as the proxy implements them.
#[derive(Clone)]
pub(super) struct StaticSettings {
    index: Vec<String>,
    extensions: Vec<String>,
}

impl Default for StaticSettings {
    fn default() -> StaticSettings {
        StaticSettings { index: vec!["index.html".into()], extensions: Vec::new() }
    }
}

/// `index` and `extensions`; another key is refused, naming it, unless it asks for what is done anyway.
pub(super) fn parse_static_options(value: Unknown, option: &str) -> Result<StaticSettings> {
    let object = expect_object(value, option)?;
    let fields = Fields::new(object, STATIC_OPTIONS);
    let mut settings = StaticSettings::default();
    if let Some(index) = fields.get("index")? {
        settings.index = match index.get_type()? {
            ValueType::Boolean if !expect_bool(index, &format!("{option}.index"))? => Vec::new(),
            ValueType::String => vec![expect_string(index, &format!("{option}.index"))?],
            _ => string_array(index, &format!("{option}.index"), "file names, or false")?,
        };
    }
    if let Some(extensions) = fields.get("extensions")? {
        settings.extensions = match extensions.get_type()? {
            ValueType::Boolean if !expect_bool(extensions, &format!("{option}.extensions"))? => Vec::new(),
            _ => string_array(extensions, &format!("{option}.extensions"), "extensions such as 'html', or false")?,
        }
        .into_iter()
        .map(|ext| ext.trim_start_matches('.').to_string())
        .collect();
    }
    fields.finish();
    for key in Object::keys(&fields.object)? {
        if STATIC_OPTIONS.contains(&key.as_str()) {
            continue;
        }
        let value = get(&fields.object, &key)?;
        let shown = match &value {
            None => continue,
            Some(v) if v.get_type()? == ValueType::Boolean => bool::from_unknown(*v)?.to_string(),
            Some(v) if v.get_type()? == ValueType::String => format!("'{}'", String::from_unknown(*v)?),
            Some(v) => type_name(v).to_string(),
        };
        match FIXED_BEHAVIOUR.iter().find(|(name, _)| *name == key) {
            Some((_, fixed)) if *fixed == shown => {}
            Some((_, fixed)) => {
                return Err(invalid(format!(
                    "option `{option}.{key}` is not supported: local files are always served with `{key}: {fixed}`"
                )))
            }
            None => {
                return Err(invalid(format!(
                    "option `{option}.{key}` is not supported: local files take `index` and `extensions` only"
                )))
            }
        }
    }
    Ok(settings)
}

/// `['public', { route: '/assets', dir: 'static' }]`: one mount per route and directory, in order.
/// String entries take `serveStaticOptions`; object entries their own `options`, as in Browsersync.
pub(super) fn parse_serve_static(value: Unknown, options: Option<&StaticSettings>) -> Result<Vec<StaticMount>> {
    if !value.is_array()? {
        return Err(invalid(format!(
            "option `serveStatic` must be an array of directories or {{ route, dir }}, got {}",
            type_name(&value)
        )));
    }
    let array = Object::from_unknown(value)?;
    let mut mounts = Vec::new();
    for i in 0..array.get_array_length()? {
        let name = format!("serveStatic[{i}]");
        let entry: Unknown = array.get_element(i)?;
        let (routes, dirs, settings) = match entry.get_type()? {
            ValueType::String => {
                (vec![String::new()], vec![String::from_unknown(entry)?], options.cloned().unwrap_or_default())
            }
            ValueType::Object if !entry.is_array()? => {
                let fields = Fields::new(Object::from_unknown(entry)?, STATIC_DIR);
                let routes = match fields.get("route")? {
                    None => vec![String::new()],
                    Some(route) if route.get_type()? == ValueType::String => vec![String::from_unknown(route)?],
                    Some(route) => string_array(route, &format!("{name}.route"), "URL paths")?,
                };
                let dirs = match fields.get("dir")? {
                    None => return Err(invalid(format!("{name} has no `dir` (the directory to serve)"))),
                    Some(dir) if dir.get_type()? == ValueType::String => vec![String::from_unknown(dir)?],
                    Some(dir) => string_array(dir, &format!("{name}.dir"), "directories")?,
                };
                let settings = match fields.get("options")? {
                    Some(options) => parse_static_options(options, &format!("{name}.options"))?,
                    None => StaticSettings::default(),
                };
                fields.finish();
                (routes, dirs, settings)
            }
            _ => {
                return Err(invalid(format!(
                    "{name} must be a directory or {{ route, dir }}, got {}",
                    type_name(&entry)
                )))
            }
        };
        for route in &routes {
            for dir in &dirs {
                let mut mount =
                    StaticMount::new(route, dir).map_err(|reason| invalid(format!("{name} is invalid: {reason}")))?;
                mount.index = settings.index.clone();
                mount.extensions = settings.extensions.clone();
                mounts.push(mount);
            }
        }
    }
    Ok(mounts)
}

/// `{ '/api': 'http://127.0.0.1:4000', '/ws': { target, ws, reqHeaders, secure } }`.
pub(super) fn parse_routes(env: &napi::Env, value: Unknown) -> Result<Vec<Route>> {
    let object = expect_object(value, "routes")?;
    let mut routes = Vec::new();
    for prefix in Object::keys(&object)? {
        let name = format!("routes['{prefix}']");
        let Some(entry) = get(&object, &prefix)? else { continue };
        let target = |raw: Unknown, option: &str| -> Result<Target> {
            let raw = expect_string(raw, option)?;
            Target::parse(&raw).map_err(|e| invalid(format!("option `{name}`: {e}")))
        };
        let route = match entry.get_type()? {
            ValueType::String => Route::new(&prefix, target(entry, &name)?).map_err(config_error)?,
            ValueType::Object => {
                let fields = Fields::new(Object::from_unknown(entry)?, ROUTE);
                let url = fields.get("target")?.ok_or_else(|| invalid(format!("{name} has no `target` URL")))?;
                let mut route = Route::new(&prefix, target(url, &format!("{name}.target"))?).map_err(config_error)?;
                if let Some(ws) = fields.get("ws")? {
                    route.ws = expect_bool(ws, &format!("{name}.ws"))?;
                }
                if let Some(secure) = fields.get("secure")? {
                    route.verify_tls = VerifyTls::from_secure(expect_bool(secure, &format!("{name}.secure"))?);
                }
                if let Some(replay) = fields.get("replay")? {
                    route.replay = Some(super::replay::parse_replay(env, replay, "routes[].replay")?);
                }
                if let Some(record) = fields.get("record")? {
                    route.record = Some(super::record::parse_record_named(record, &format!("{name}.record"))?);
                }
                if let Some(headers) = fields.get("reqHeaders")? {
                    let headers = expect_object(headers, &format!("{name}.reqHeaders"))?;
                    for header in Object::keys(&headers)? {
                        let option = format!("{name}.reqHeaders['{header}']");
                        let value = get(&headers, &header)?.ok_or_else(|| invalid(format!("{option} is empty")))?;
                        route.add_req_header(&header, &expect_string(value, &option)?).map_err(config_error)?;
                    }
                }
                fields.finish();
                route
            }
            _ => {
                return Err(invalid(format!(
                    "option `{name}` must be a URL string or {{ target }}, got {}",
                    type_name(&entry)
                )))
            }
        };
        if routes.iter().any(|r: &Route| r.prefix == route.prefix) {
            return Err(invalid(format!("option `{name}` repeats the prefix '{}'", route.prefix)));
        }
        routes.push(route);
    }
    Ok(routes)
}
