//! The JS side of `start()` (lib/start.js) hands the native server what it prepared: one dispatcher
//! function per hook kind (lib/hooks.js builds Browsersync's objects around the plain heads given here
//! and applies the user's functions) and the middleware host's address. Each dispatcher is called
//! through a threadsafe function and answered asynchronously: a pending hook holds no proxy thread.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::ValueType;
use napi_derive::napi;

use super::args::{get, type_name};
use super::invalid;
use super::outcome::{self, SlicedFn};
use crate::config::ProxyConfig;
use crate::proxy::hooks::{ClientRequest, Hook, HookFuture, RawHeaders, UpstreamRequestHead, UpstreamResponseHead};
use crate::proxy::middleware::{MiddlewareHost, Routes};
use crate::server::UserCode;

/// The client's request as a hook sees it (Browsersync's `req`).
#[napi(object)]
pub struct HookClientRequest {
    pub method: String,
    /// Path and query, as the client asked.
    pub url: String,
    /// Node's `rawHeaders` form: `[name, value, name, value, ...]`.
    pub raw_headers: Vec<String>,
}

/// The upstream request's head, given to and answered by the `proxyReq`/`proxyReqWs` dispatcher.
#[napi(object)]
pub struct HookRequestHead {
    pub method: String,
    /// Path and query sent to the target.
    pub path: String,
    /// `[name, value, ...]`.
    pub raw_headers: Vec<String>,
}

/// The upstream response's head, given to and answered by the `proxyRes` dispatcher.
#[napi(object)]
pub struct HookResponseHead {
    pub status_code: u32,
    /// `[name, value, ...]`.
    pub raw_headers: Vec<String>,
}

/// One call of the request dispatcher.
#[napi(object)]
pub struct HookRequestCall {
    pub head: HookRequestHead,
    pub req: HookClientRequest,
}

/// One call of the response dispatcher.
#[napi(object)]
pub struct HookResponseCall {
    pub head: HookResponseHead,
    pub req: HookClientRequest,
}

/// Where lib/middleware.js's host listens, and the routes it wants.
#[napi(object)]
pub struct MiddlewareHostOptions {
    /// Port on 127.0.0.1.
    pub port: u32,
    /// Per-server secret sent on every hop between the two servers.
    pub token: String,
    /// Route prefixes (connect's matching; `''` matches every path).
    pub routes: Vec<String>,
}

fn flat(headers: &RawHeaders) -> Vec<String> {
    headers.iter().flat_map(|(n, v)| [n.clone(), v.clone()]).collect()
}

fn pairs(flat: Vec<String>) -> std::result::Result<RawHeaders, String> {
    if !flat.len().is_multiple_of(2) {
        return Err("rawHeaders must hold name, value pairs".into());
    }
    let mut it = flat.into_iter();
    Ok(std::iter::from_fn(|| Some((it.next()?, it.next()?))).collect())
}

fn client(req: &ClientRequest) -> HookClientRequest {
    HookClientRequest { method: req.method.clone(), url: req.url.clone(), raw_headers: flat(&req.headers) }
}

struct RequestHook(Arc<SlicedFn<HookRequestCall, HookRequestHead>>);

impl Hook<UpstreamRequestHead> for RequestHook {
    fn call(&self, head: UpstreamRequestHead, req: Arc<ClientRequest>) -> HookFuture<UpstreamRequestHead> {
        let tsfn = self.0.clone();
        let call = HookRequestCall {
            head: HookRequestHead { method: head.method, path: head.path, raw_headers: flat(&head.headers) },
            req: client(&req),
        };
        Box::pin(async move {
            let changed = outcome::call(&tsfn, call).await?;
            Ok(UpstreamRequestHead { method: changed.method, path: changed.path, headers: pairs(changed.raw_headers)? })
        })
    }
}

struct ResponseHook(Arc<SlicedFn<HookResponseCall, HookResponseHead>>);

impl Hook<UpstreamResponseHead> for ResponseHook {
    fn call(&self, head: UpstreamResponseHead, req: Arc<ClientRequest>) -> HookFuture<UpstreamResponseHead> {
        let tsfn = self.0.clone();
        let call = HookResponseCall {
            head: HookResponseHead { status_code: u32::from(head.status), raw_headers: flat(&head.headers) },
            req: client(&req),
        };
        Box::pin(async move {
            let changed = outcome::call(&tsfn, call).await?;
            let status =
                u16::try_from(changed.status_code).map_err(|_| format!("bad statusCode {}", changed.status_code))?;
            Ok(UpstreamResponseHead { status, headers: pairs(changed.raw_headers)? })
        })
    }
}

/// The dispatcher `name` of `js`, as a threadsafe function; none when absent.
fn threadsafe<T: 'static + JsValuesTupleIntoVec, R: 'static + FromNapiValue>(
    js: &Object,
    name: &str,
) -> Result<Option<Arc<SlicedFn<T, R>>>> {
    let Some(value) = get(js, name)? else { return Ok(None) };
    if value.get_type()? != ValueType::Function {
        return Err(invalid(format!("the JS side's `{name}` must be a function, got {}", type_name(&value))));
    }
    let function: Function<T, Promise<outcome::Outcome<R>>> = Function::from_unknown(value)?;
    let tsfn = function
        .build_threadsafe_function::<T>()
        .callee_handled::<false>()
        .weak::<true>()
        .build_callback(|ctx| Ok(ctx.value))?;
    Ok(Some(Arc::new(tsfn)))
}

/// Puts what JS prepared (`start()`'s second argument, a `JsSide`, declared in `declarations.rs`) into
/// the user's code the server calls, and its `onRequest` into the config.
pub(super) fn apply(js: Unknown, config: &mut ProxyConfig, code: &mut UserCode) -> Result<()> {
    if matches!(js.get_type()?, ValueType::Undefined | ValueType::Null) {
        return Ok(());
    }
    if js.get_type()? != ValueType::Object {
        return Err(invalid(format!("start()'s second argument must be an object, got {}", type_name(&js))));
    }
    let js = Object::from_unknown(js)?;
    if let Some(f) = threadsafe(&js, "proxyReq")? {
        code.hooks.proxy_req = Some(Arc::new(RequestHook(f)));
    }
    if let Some(f) = threadsafe(&js, "proxyReqWs")? {
        code.hooks.proxy_req_ws = Some(Arc::new(RequestHook(f)));
    }
    if let Some(f) = threadsafe(&js, "proxyRes")? {
        code.hooks.proxy_res = Some(Arc::new(ResponseHook(f)));
    }
    if let Some(host) = get(&js, "middleware")? {
        let host = MiddlewareHostOptions::from_unknown(host)?;
        let port = u16::try_from(host.port).map_err(|_| invalid(format!("middleware host port {}", host.port)))?;
        if host.token.len() < 16 {
            return Err(invalid("middleware host token is too short"));
        }
        code.middleware = Some(MiddlewareHost {
            port,
            token: host.token,
            routes: Routes::new(host.routes),
            returns: Default::default(),
        });
    }
    super::on_request::apply(&js, config)?;
    Ok(())
}
