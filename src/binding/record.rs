//! The `record` option's parser (its declaration is in `declarations.rs`) and `toHar()`.

use napi::bindgen_prelude::*;
use napi::{Env, ValueType};
use napi_derive::napi;

use super::args::{expect_object, expect_string, string_array, Fields};
use super::option_names::{RECORD, REDACT};
use super::{config_error, invalid};
use crate::cassette::record::{check_path, RecordOptions};
use crate::cassette::redact::{parse_json_path, Redaction};
use crate::globs::UrlGlobs;

/// Reads `record`.
pub(super) fn parse_record(value: Unknown) -> Result<RecordOptions> {
    parse_record_named(value, "record")
}

/// Reads a `record` object; `option` names it in errors (`record`, `routes['/v1'].record`).
pub(super) fn parse_record_named(value: Unknown, option: &str) -> Result<RecordOptions> {
    let fields = Fields::new(expect_object(value, option)?, RECORD);
    let path =
        fields.get("path")?.ok_or_else(|| invalid(format!("option `{option}.path` is required: the cassette file")))?;
    let path = expect_string(path, &format!("{option}.path"))?;
    if path.trim().is_empty() {
        return Err(invalid(format!("option `{option}.path` is empty")));
    }
    let path = std::path::PathBuf::from(path);
    check_path(&path).map_err(|reason| invalid(format!("option `{option}.path`: {reason}")))?;
    let matches = match fields.get("match")? {
        None => None,
        Some(value) => {
            let name = format!("{option}.match");
            let globs = if value.get_type()? == ValueType::String {
                vec![expect_string(value, &name)?]
            } else {
                string_array(value, &name, "path globs")?
            };
            Some(UrlGlobs::new(&globs, "record.match").map_err(config_error)?)
        }
    };
    let redact = match fields.get("redact")? {
        Some(value) => parse_redact(value, &format!("{option}.redact"))?,
        None => Redaction::default(),
    };
    fields.finish();
    Ok(RecordOptions { path, matches, redact, append: false })
}

/// Reads a `redact` object (`record.redact`, `replay.redact`); `option` names it in errors.
pub(super) fn parse_redact(value: Unknown, option: &str) -> Result<Redaction> {
    let mut redact = Redaction::default();
    let r = Fields::new(expect_object(value, option)?, REDACT);
    if let Some(headers) = r.get("headers")? {
        redact.headers = string_array(headers, &format!("{option}.headers"), "header names")?
            .iter()
            .map(|h| h.to_ascii_lowercase())
            .collect();
    }
    if let Some(json) = r.get("json")? {
        for (i, path) in string_array(json, &format!("{option}.json"), "JSON paths")?.iter().enumerate() {
            let parsed = parse_json_path(path).ok_or_else(|| {
                invalid(format!(
                    "{option}.json[{i}]: '{path}' is not a JSON path such as '$.user' or 'messages[*].content'"
                ))
            })?;
            redact.json.push(parsed);
        }
    }
    if let Some(allow) = r.get("allow")? {
        redact.allow = string_array(allow, &format!("{option}.allow"), "fields or strings")?;
    }
    r.finish();
    Ok(redact)
}

/// Converts a cassette to HAR 1.2 (a JSON string). Rejects, naming the line, when the cassette is
/// corrupt, truncated or hand-edited into something it cannot read. Reads on a worker thread.
#[napi(js_name = "toHar", ts_return_type = "Promise<string>")]
pub fn to_har(path: String) -> AsyncTask<HarTask> {
    AsyncTask::new(HarTask { path })
}

pub struct HarTask {
    path: String,
}

impl Task for HarTask {
    type Output = String;
    type JsValue = String;

    fn compute(&mut self) -> Result<String> {
        crate::cassette::har::to_har_file(std::path::Path::new(&self.path)).map_err(|e| invalid(e.to_string()))
    }

    fn resolve(&mut self, _env: Env, output: String) -> Result<String> {
        Ok(output)
    }
}
