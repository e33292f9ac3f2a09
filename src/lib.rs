//! devproxy-native: a streaming, rewriting dev reverse proxy.
//!
//! The core (everything but `binding`) knows nothing about Node: it is tested with `cargo test
//! --no-default-features` and benchmarked with criterion. Its layers, bottom to top (imports run
//! down; `scripts/module-graph.js` draws them): plain data and the engine ([`rewrite`], [`codec`],
//! `error`, [`globs`], [`csp`]), the log and counters (`stats`), the body pipeline ([`body`]:
//! [`codec`] decode → [`rewrite`] rules → [`codec`] encode), the records ([`observe`], [`cassette`]),
//! the validated configuration ([`config`]), the request path (`proxy`: one module per phase, run in
//! order by `proxy/mod.rs`), the listener (`server`: accept, TLS), and the faces (`binding` for Node,
//! `wasm` for WebAssembly). A failure is a `proxy::pages::ProxyError`, rendered in one place.
//!
//! The public face is what the binding, the tests, benches and fuzz targets need: the server and its
//! configuration, the rewrite engine, the codecs and the body pipeline. Every other module is private.

#![deny(missing_docs)]
#![deny(unreachable_pub)]
// Every `unsafe` block says why it holds (`// SAFETY:` above it).
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod buffers;
pub mod csp;
mod error;
pub mod globs;
pub mod rewrite;

pub use error::{ConfigError, JsRegexError, ReplaceError, RuleError, StartError};
pub use rewrite::{rewrite_bytes, Rule, RuleReplacement};

// The proxy around the engine (sockets, threads, C code): not in the WebAssembly build, which is the
// engine alone (`wasm`). One attribute per item, not a macro: tools that follow `mod` declarations
// (cargo-mutants, for one) do not look inside macro calls.
#[cfg(not(target_arch = "wasm32"))]
pub mod body;
#[cfg(not(target_arch = "wasm32"))]
pub mod cassette;
#[cfg(not(target_arch = "wasm32"))]
pub mod codec;
#[cfg(not(target_arch = "wasm32"))]
pub mod config;
#[cfg(not(target_arch = "wasm32"))]
mod header_pairs;
#[cfg(not(target_arch = "wasm32"))]
mod lifecycle;
#[cfg(not(target_arch = "wasm32"))]
pub mod observe;
#[cfg(not(target_arch = "wasm32"))]
mod proxy;
#[cfg(not(target_arch = "wasm32"))]
mod server;
#[cfg(not(target_arch = "wasm32"))]
mod skip;
#[cfg(not(target_arch = "wasm32"))]
mod stats;
#[cfg(not(target_arch = "wasm32"))]
pub mod warnings;
#[cfg(not(target_arch = "wasm32"))]
pub use config::{ProxyConfig, Target};
#[cfg(not(target_arch = "wasm32"))]
pub use proxy::hooks::{ClientRequest, Hook, HookFuture, Hooks, RawHeaders, UpstreamRequestHead, UpstreamResponseHead};
#[cfg(not(target_arch = "wasm32"))]
pub use proxy::middleware::MiddlewareHost;
#[cfg(not(target_arch = "wasm32"))]
pub use server::{ProxyServer, UserCode};
#[cfg(not(target_arch = "wasm32"))]
pub use stats::StatsSnapshot;

// napi-rs exports are `pub` items the macros reach, not Rust API: neither lint applies there.
#[cfg(feature = "napi")]
#[allow(missing_docs, unreachable_pub)]
mod binding;
// The WebAssembly build's exports (`devproxy-native/wasm`): the rewrite engine alone.
// wasm-bindgen exports are `pub` items the macros reach, not Rust API (as napi-rs's are).
#[cfg(target_arch = "wasm32")]
#[allow(unreachable_pub)]
mod wasm;
