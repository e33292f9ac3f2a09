//! devproxy-native: a streaming, rewriting dev reverse proxy.
//!
//! The core (everything but `binding`) knows nothing about Node: it is tested with `cargo test
//! --no-default-features` and benchmarked with criterion. `server` accepts; `proxy` runs each
//! request through the phases, one module each: request filter (`security`) → upstream request and
//! send (`forward`; `routes` picks the target, `local_files` answers `serveStatic` files before it) → response headers (`headers`) → body plan and pipeline ([`body`]: [`codec`]
//! decode → [`rewrite`] rules → [`codec`] encode) → respond. `websocket` tunnels upgrades; a failure
//! is a `pages::ProxyError`, rendered in `pages`; `state` holds what a server's requests share.
//!
//! The public face is what the binding, the tests, benches and fuzz targets need: the server and its
//! configuration, the rewrite engine, the codecs and the body pipeline. Every other module is private.

#![deny(missing_docs)]
#![deny(unreachable_pub)]

pub mod csp;
mod error;
pub mod globs;
pub mod rewrite;

pub use error::{ConfigError, JsRegexError, ReplaceError, RuleError, StartError};
pub use rewrite::{rewrite_bytes, Rule, RuleReplacement};

/// The proxy around the engine (sockets, threads, C code): not in the WebAssembly build, which is the
/// engine alone (`wasm`).
macro_rules! proxy_only {
    ($($item:item)*) => { $(#[cfg(not(target_arch = "wasm32"))] $item)* };
}

proxy_only! {
    pub mod body;
    pub mod cassette;
    pub mod codec;
    pub mod config;
    mod forward;
    mod headers;
    mod hooks;
    mod local_files;
    mod middleware;
    pub mod observe;
    mod pages;
    mod proxy;
    mod routes;
    mod security;
    mod server;
    mod skip;
    mod state;
    mod stats;
    mod tls;
    pub mod warnings;
    mod websocket;
    pub use config::{ProxyConfig, Target};
    pub use hooks::{ClientRequest, Hook, HookFuture, Hooks, RawHeaders, UpstreamRequestHead, UpstreamResponseHead};
    pub use middleware::MiddlewareHost;
    pub use server::ProxyServer;
    pub use stats::StatsSnapshot;
}

// napi-rs exports are `pub` items the macros reach, not Rust API: neither lint applies there.
#[cfg(feature = "napi")]
#[allow(missing_docs, unreachable_pub)]
mod binding;
// The WebAssembly build's exports (`devproxy-native/wasm`): the rewrite engine alone.
// wasm-bindgen exports are `pub` items the macros reach, not Rust API (as napi-rs's are).
#[cfg(target_arch = "wasm32")]
#[allow(unreachable_pub)]
mod wasm;
