//! JS replacement functions as the rewrite engine calls them: `ThreadsafeReplace` from the proxy's
//! threads, `DirectReplace` on the JS thread during `rewrite()` (its functions live in a
//! thread-local, freed by `DirectScope`), with JS's argument list (`SpreadArgs`, `DirectArgs`,
//! `groups_object`) and JS's string coercion of the result (`Coerced`).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::{check_status, sys, Env};
use napi_derive::napi;

use super::outcome::{self, Outcome, SlicedFn};
use crate::rewrite::{Exchange, ReplaceCall, ReplaceFn};

/// A replacement function's arguments, as resp-modifier passes them: `req` and `res` (`undefined`
/// outside the proxy), then JS's `(match, p1, ..., pn, offset, string)`, then `groups` when the
/// pattern has named groups.
pub struct SpreadArgs {
    /// The request and response of the body (the proxy), shown as `req` and `res`.
    exchange: Option<Arc<Exchange>>,
    whole: String,
    groups: Vec<Option<String>>,
    /// Each group's name, when any group has one.
    names: Option<Vec<Option<String>>>,
    /// UTF-16 index of the match in the rule's input.
    offset: f64,
}

impl SpreadArgs {
    fn new(call: &ReplaceCall) -> SpreadArgs {
        let owned = |texts: &[Option<&str>]| texts.iter().map(|t| t.map(str::to_string)).collect();
        SpreadArgs {
            exchange: call.exchange.cloned(),
            whole: call.whole.to_string(),
            groups: owned(call.groups),
            names: call.names.map(owned),
            offset: call.offset as f64,
        }
    }

    /// The JS values, with `string` (null: `undefined`).
    ///
    /// # Safety
    /// `env` is the live env of the JS thread this runs on, and `string` null or a value of it.
    unsafe fn values(self, env: sys::napi_env, string: sys::napi_value) -> Result<Vec<sys::napi_value>> {
        let mut args = Vec::with_capacity(self.groups.len() + 6);
        match self.exchange {
            Some(exchange) => {
                let (req, res) = plain_objects(&exchange);
                args.push(RuleRequestData::to_napi_value(env, req)?);
                args.push(RuleResponseData::to_napi_value(env, res)?);
            }
            None => {
                args.push(Undefined::to_napi_value(env, ())?);
                args.push(Undefined::to_napi_value(env, ())?);
            }
        }
        args.push(String::to_napi_value(env, self.whole)?);
        let groups_object = match self.names {
            Some(names) => Some(groups_object(env, names, &self.groups)?),
            None => None,
        };
        for group in self.groups {
            args.push(group_value(env, group)?);
        }
        args.push(f64::to_napi_value(env, self.offset)?);
        args.push(if string.is_null() { Undefined::to_napi_value(env, ())? } else { string });
        args.extend(groups_object);
        Ok(args)
    }
}

impl napi::bindgen_prelude::JsValuesTupleIntoVec for SpreadArgs {
    fn into_vec(self, env: sys::napi_env) -> Result<Vec<sys::napi_value>> {
        // SAFETY: napi calls `into_vec` on the JS thread with that thread's live `env`; no `string`.
        unsafe { self.values(env, std::ptr::null_mut()) }
    }
}

/// The request a rule function gets as its first argument, as plain data; lib/rules.js gives it
/// the shape of Browsersync's `req` (`RuleRequest`).
#[napi(object)]
pub struct RuleRequestData {
    /// The request target as the client sent it.
    pub url: String,
    pub method: String,
    /// Header names (lower-case) and values, alternating, in the order the client sent them.
    pub raw_headers: Vec<String>,
}

/// The response a rule function gets as its second argument, as plain data; lib/rules.js gives it
/// the shape of Browsersync's `res` (`RuleResponse`).
#[napi(object)]
pub struct RuleResponseData {
    pub status_code: u32,
    /// Header names (lower-case) and values, alternating, as they go to the client.
    pub raw_headers: Vec<String>,
}

fn plain_objects(exchange: &Exchange) -> (RuleRequestData, RuleResponseData) {
    let flat = |pairs: &[(String, String)]| pairs.iter().flat_map(|(n, v)| [n.clone(), v.clone()]).collect();
    (
        RuleRequestData {
            url: exchange.url.clone(),
            method: exchange.method.clone(),
            raw_headers: flat(&exchange.request_headers),
        },
        RuleResponseData { status_code: u32::from(exchange.status), raw_headers: flat(&exchange.response_headers) },
    )
}

/// `rewrite()`'s arguments: the spread ones and the rule's input as `string`. Holds a JS value, so it
/// is not `Send`: it is built and used on the JS thread only.
pub struct DirectArgs {
    spread: SpreadArgs,
    string: sys::napi_value,
}

impl napi::bindgen_prelude::JsValuesTupleIntoVec for DirectArgs {
    fn into_vec(self, env: sys::napi_env) -> Result<Vec<sys::napi_value>> {
        // SAFETY: napi calls this for `DirectReplace::replace`, which runs only on the JS thread inside
        // the `rewrite()` call that registered it, with that thread's live `env`; `string` is null or a
        // value that call received or made (`DirectScope::set_string`), alive until it returns.
        unsafe { self.spread.values(env, self.string) }
    }
}

/// A group that did not participate is `undefined`, as in JS.
///
/// # Safety
/// `env` is the live env of the JS thread this runs on.
unsafe fn group_value(env: sys::napi_env, group: Option<String>) -> Result<sys::napi_value> {
    match group {
        Some(text) => String::to_napi_value(env, text),
        None => Undefined::to_napi_value(env, ()),
    }
}

/// JS's `groups` argument: an object without prototype, one property per named group, in order.
///
/// # Safety
/// `env` is the live env of the JS thread this runs on. Each napi call's status is checked before
/// the value it wrote is used.
unsafe fn groups_object(
    env: sys::napi_env,
    names: Vec<Option<String>>,
    groups: &[Option<String>],
) -> Result<sys::napi_value> {
    let mut global = std::ptr::null_mut();
    check_status!(sys::napi_get_global(env, &mut global))?;
    let mut object = std::ptr::null_mut();
    check_status!(sys::napi_get_named_property(env, global, c"Object".as_ptr(), &mut object))?;
    let mut create = std::ptr::null_mut();
    check_status!(sys::napi_get_named_property(env, object, c"create".as_ptr(), &mut create))?;
    let mut null = std::ptr::null_mut();
    check_status!(sys::napi_get_null(env, &mut null))?;
    let mut result = std::ptr::null_mut();
    check_status!(sys::napi_call_function(env, object, create, 1, &null, &mut result))?;
    for (name, group) in names.into_iter().zip(groups) {
        if let Some(name) = name {
            let key = String::to_napi_value(env, name)?;
            let value = group_value(env, group.clone())?;
            check_status!(sys::napi_set_property(env, result, key, value))?;
        }
    }
    Ok(result)
}

/// A JS replacement function the proxy calls from its threads, wrapped by lib/rules.js so that it runs
/// in a slice of the JS thread and answers its result already coerced to a string. Send + Sync by
/// napi's types.
pub(super) struct ThreadsafeReplace(SlicedFn<SpreadArgs, String>);

impl ThreadsafeReplace {
    pub(super) fn register(function: Function<SpreadArgs, Promise<Outcome<String>>>) -> Result<Arc<dyn ReplaceFn>> {
        let tsfn = function
            .build_threadsafe_function::<SpreadArgs>()
            .callee_handled::<false>()
            .weak::<true>()
            .build_callback(|ctx| Ok(ctx.value))?;
        Ok(Arc::new(ThreadsafeReplace(tsfn)))
    }
}

impl ReplaceFn for ThreadsafeReplace {
    fn replace(&self, call: &ReplaceCall) -> std::result::Result<String, String> {
        // Called on tokio's blocking pool (the body offloads every step of a rule set that calls JS),
        // so this wait holds no runtime worker; the runtime handle is in context there.
        let runtime = tokio::runtime::Handle::try_current().map_err(|e| e.to_string())?;
        runtime.block_on(outcome::call(&self.0, SpreadArgs::new(call)))
    }
}

/// A JS function registered by a running `rewrite()` call, with the `string` argument of the rule
/// being applied (null: `undefined`).
struct DirectFunction {
    env: Env,
    function: FunctionRef<DirectArgs, Coerced>,
    string: Cell<sys::napi_value>,
}

thread_local! {
    /// The functions of the `rewrite()` calls running on this thread (the JS thread), by slot. What
    /// cannot leave the JS thread (an `Env`, a function reference) lives here, not in the rules, which
    /// the engine needs `Send + Sync`.
    static DIRECT_FUNCTIONS: RefCell<Vec<Rc<DirectFunction>>> = const { RefCell::new(Vec::new()) };
}

/// A JS function that `rewrite()` calls on the JS thread: only its slot in `DIRECT_FUNCTIONS`, so the
/// rule is `Send + Sync` without any claim that the function is. On another thread the slot is
/// empty and the call is an error, never a touch of JS.
pub(super) struct DirectReplace {
    slot: usize,
}

impl DirectReplace {
    pub(super) fn register(env: &Env, function: Function<DirectArgs, Coerced>) -> Result<Arc<dyn ReplaceFn>> {
        let entry =
            DirectFunction { env: *env, function: function.create_ref()?, string: Cell::new(std::ptr::null_mut()) };
        let slot = DIRECT_FUNCTIONS.with(|slots| {
            let mut slots = slots.borrow_mut();
            slots.push(Rc::new(entry));
            slots.len() - 1
        });
        Ok(Arc::new(DirectReplace { slot }))
    }
}

impl ReplaceFn for DirectReplace {
    fn replace(&self, call: &ReplaceCall) -> std::result::Result<String, String> {
        // The borrow ends before JS runs: a replace function may itself call `rewrite()`.
        let entry = DIRECT_FUNCTIONS
            .with(|slots| slots.borrow().get(self.slot).cloned())
            .ok_or("a rewrite() replace function was called outside its rewrite() call")?;
        let function = entry.function.borrow_back(&entry.env).map_err(|e| e.reason.clone())?;
        let args = DirectArgs { spread: SpreadArgs::new(call), string: entry.string.get() };
        function.call(args).map(|c| c.0).map_err(|e| e.reason.clone())
    }
}

/// The slots one `rewrite()` call registers; freed when it ends, however it ends.
pub(super) struct DirectScope {
    base: usize,
}

impl DirectScope {
    pub(super) fn open() -> DirectScope {
        DirectScope { base: DIRECT_FUNCTIONS.with(|slots| slots.borrow().len()) }
    }

    /// Sets the `string` argument of this call's functions (only the rule being applied runs).
    pub(super) fn set_string(&self, string: sys::napi_value) {
        DIRECT_FUNCTIONS.with(|slots| slots.borrow()[self.base..].iter().for_each(|f| f.string.set(string)));
    }
}

impl Drop for DirectScope {
    fn drop(&mut self) {
        DIRECT_FUNCTIONS.with(|slots| slots.borrow_mut().truncate(self.base));
    }
}

/// A replacement function's result, converted to a string as `String.prototype.replace` does.
pub struct Coerced(String);

impl FromNapiValue for Coerced {
    unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> Result<Self> {
        let mut string = std::ptr::null_mut();
        // SAFETY: napi hands us a live `env` and `value` (this trait's contract); `napi_coerce_to_string`
        // accepts any value and writes a string handle to `string` when it returns napi_ok, which is
        // checked before `string` is read.
        let status = sys::napi_coerce_to_string(env, value, &mut string);
        if status != sys::Status::napi_ok {
            return Err(Error::new(Status::StringExpected, "the replacement function's result cannot become a string"));
        }
        Ok(Coerced(String::from_napi_value(env, string)?))
    }
}
