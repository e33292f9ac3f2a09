//! What a call into JS answers: lib/js-thread.js runs the proxy's JS calls in time slices (so Node's
//! event loop keeps its turns) and resolves each to `{ value }` or `{ error }`, never a rejection.

use napi::bindgen_prelude::*;
use napi::threadsafe_function::ThreadsafeFunction;
use napi::{sys, JsValue, ValueType};

/// `{ value: T }` or `{ error: string }`, as lib/js-thread.js resolves them.
pub(super) struct Outcome<T>(std::result::Result<T, String>);

impl<T: FromNapiValue> FromNapiValue for Outcome<T> {
    unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> Result<Self> {
        // SAFETY: napi hands us a live `env` and `value` (this trait's contract).
        let object = unsafe { Object::from_napi_value(env, value) }?;
        let error: Unknown = object.get_named_property("error")?;
        if error.get_type()? != ValueType::Undefined {
            return Ok(Outcome(Err(String::from_unknown(error)?)));
        }
        let value: Unknown = object.get_named_property("value")?;
        // SAFETY: `env` is the live env we were handed (as above), and `value` was just read from
        // `object` with it, in the same call on the JS thread.
        Ok(Outcome(Ok(unsafe { T::from_napi_value(env, value.raw()) }?)))
    }
}

/// A JS function called from the proxy's threads, answering through a time slice.
pub(super) type SlicedFn<Args, T> = ThreadsafeFunction<Args, Promise<Outcome<T>>, Args, Status, false, true, 0>;

/// Calls `function` and waits for its slice's answer; the error is the thrown value's text, or why
/// the call could not be made (Node shutting down).
pub(super) async fn call<Args: 'static + JsValuesTupleIntoVec, T: 'static + FromNapiValue>(
    function: &SlicedFn<Args, T>,
    args: Args,
) -> std::result::Result<T, String> {
    let answer = function.call_async_catch(args).await.map_err(|e| e.reason.clone())?;
    answer.await.map_err(|e| e.reason.clone())?.0
}
