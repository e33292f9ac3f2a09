//! `replay` (in `start()`, a `routes` entry, `server.replay()`): its parser, through serde so that an
//! unknown key or a wrong type is named. Its declaration is in `declarations.rs`.

use napi::bindgen_prelude::*;
use napi::{Env, ValueType};

use super::record::parse_redact;
use super::{config_error, invalid};
use crate::cassette::replay::{OnMiss, ReplayOptions, ReplaySpec};

/// Parses a `replay` object; `option` names it in errors.
pub(super) fn parse_replay(env: &Env, value: Unknown, option: &'static str) -> Result<ReplayOptions> {
    // `redact` is read here (its JSON paths); serde only lets it through.
    let redact = match value.get_type()? {
        ValueType::Object => Object::from_unknown(value)?.get::<Unknown>("redact")?,
        _ => None,
    };
    let redact = match redact.filter(|r| !matches!(r.get_type(), Ok(ValueType::Undefined))) {
        Some(redact) => Some(parse_redact(redact, &format!("{option}.redact"))?),
        None => None,
    };
    let spec: ReplaySpec = env.from_js_value(value).map_err(|e| invalid(format!("option `{option}`: {}", e.reason)))?;
    let mut options = ReplayOptions::from_spec(spec, option).map_err(config_error)?;
    if let Some(redact) = redact {
        if options.on_miss != OnMiss::Record {
            // It would do nothing: say so rather than drop it in silence.
            return Err(invalid(format!("option `{option}.redact` applies only with `onMiss: 'record'`")));
        }
        options.redact = redact;
    }
    Ok(options)
}
