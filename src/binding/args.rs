//! Readers of JS values: an options object read through its declared keys (`Fields`), and the
//! `expect_*` checks whose errors name the option and the type it was given instead.

use std::cell::Cell;

use napi::bindgen_prelude::*;
use napi::ValueType;

use super::invalid;

/// An options object read through its declared keys. Reading a key that is not in the list, or
/// parsing it whole without reading every key of the list, is a bug in the parser: debug builds (the
/// ones the tests run) panic, which `catch_unwind` turns into a JS error. Keys outside the list are
/// ignored, not rejected: Browsersync configs carry options this proxy does not handle.
pub(super) struct Fields<'env> {
    pub(super) object: Object<'env>,
    names: &'static [&'static str],
    /// Bit `i`: `names[i]` was read.
    read: Cell<u64>,
}

impl<'env> Fields<'env> {
    pub(super) fn new(object: Object<'env>, names: &'static [&'static str]) -> Fields<'env> {
        debug_assert!(names.len() <= 64, "Fields tracks at most 64 keys");
        Fields { object, names, read: Cell::new(0) }
    }

    pub(super) fn get(&self, name: &str) -> Result<Option<Unknown<'env>>> {
        match self.names.iter().position(|n| *n == name) {
            Some(i) => self.read.set(self.read.get() | 1 << i),
            None => debug_assert!(false, "option key `{name}` is read but not declared in its name list"),
        }
        get(&self.object, name)
    }

    /// Checks that the parser read every declared key.
    pub(super) fn finish(&self) {
        let unread: Vec<_> =
            self.names.iter().enumerate().filter(|(i, _)| self.read.get() & 1 << i == 0).map(|(_, n)| *n).collect();
        debug_assert!(unread.is_empty(), "option keys {unread:?} are declared but never read");
    }
}

/// The property `name` of `object`; `None` when it is `undefined` or `null`.
pub(super) fn get<'env>(object: &Object<'env>, name: &str) -> Result<Option<Unknown<'env>>> {
    let value: Unknown = object.get_named_property(name)?;
    Ok(match value.get_type()? {
        ValueType::Undefined | ValueType::Null => None,
        _ => Some(value),
    })
}

/// The type of `value` as error messages name it ("got a number").
pub(super) fn type_name(value: &Unknown) -> &'static str {
    match value.get_type() {
        Ok(ValueType::String) => "a string",
        Ok(ValueType::Number) => "a number",
        Ok(ValueType::Boolean) => "a boolean",
        Ok(ValueType::Object) => "an object",
        Ok(ValueType::Function) => "a function",
        Ok(ValueType::Null) => "null",
        Ok(ValueType::Undefined) => "undefined",
        Ok(ValueType::Symbol) => "a symbol",
        Ok(ValueType::BigInt) => "a bigint",
        _ => "another type",
    }
}

pub(super) fn expect_string(value: Unknown, option: &str) -> Result<String> {
    match value.get_type()? {
        ValueType::String => String::from_unknown(value),
        _ => Err(invalid(format!("option `{option}` must be a string, got {}", type_name(&value)))),
    }
}

pub(super) fn expect_bool(value: Unknown, option: &str) -> Result<bool> {
    match value.get_type()? {
        ValueType::Boolean => bool::from_unknown(value),
        _ => Err(invalid(format!("option `{option}` must be a boolean, got {}", type_name(&value)))),
    }
}

pub(super) fn expect_u32(value: Unknown, option: &str, max: u32) -> Result<u32> {
    expect_u32_from(value, option, 0, max)
}

/// A whole number from `min` to `max`; the message names both bounds, as the option's docs do.
pub(super) fn expect_u32_from(value: Unknown, option: &str, min: u32, max: u32) -> Result<u32> {
    let number = match value.get_type()? {
        ValueType::Number => f64::from_unknown(value)?,
        _ => return Err(invalid(format!("option `{option}` must be a number, got {}", type_name(&value)))),
    };
    if number.fract() != 0.0 || !(f64::from(min)..=f64::from(max)).contains(&number) {
        return Err(invalid(format!("option `{option}` must be a whole number from {min} to {max}, got {number}")));
    }
    Ok(number as u32)
}

pub(super) fn expect_object<'env>(value: Unknown<'env>, option: &str) -> Result<Object<'env>> {
    match value.get_type()? {
        ValueType::Object => Object::from_unknown(value),
        _ => Err(invalid(format!("option `{option}` must be an object, got {}", type_name(&value)))),
    }
}

/// An array of strings; the error names the option, or the element that is not a string.
pub(super) fn string_array(value: Unknown, option: &str, what: &str) -> Result<Vec<String>> {
    if !value.is_array()? {
        return Err(invalid(format!("option `{option}` must be an array of {what}, got {}", type_name(&value))));
    }
    let array = Object::from_unknown(value)?;
    (0..array.get_array_length()?)
        .map(|i| expect_string(array.get_element::<Unknown>(i)?, &format!("{option}[{i}]")))
        .collect()
}

/// A glob or an array of globs.
pub(super) fn glob_list(value: Unknown, option: &str) -> Result<Vec<String>> {
    if value.get_type()? == ValueType::String {
        return Ok(vec![String::from_unknown(value)?]);
    }
    string_array(value, option, "globs (strings)")
}
