//! devproxy-native: a streaming, rewriting dev reverse proxy.
//!
//! The core (everything but `binding`) knows nothing about Node: it is tested with `cargo test
//! --no-default-features` and benchmarked with criterion. [`server`] accepts; `proxy` runs each
//! request through the phases, one module each: request filter ([`security`]) → upstream request and
//! send ([`forward`]) → response headers ([`headers`]) → body plan and pipeline ([`body`]: [`codec`]
//! decode → [`rewrite`] rules → [`codec`] encode) → respond. [`websocket`] tunnels upgrades; a failure
//! is a [`pages::ProxyError`], rendered in [`pages`]; `state` holds what a server's requests share.

pub mod body;
pub mod codec;
pub mod config;
pub mod error;
pub mod forward;
pub mod headers;
pub mod pages;
mod proxy;
pub mod rewrite;
pub mod security;
pub mod server;
mod state;
pub mod stats;
pub mod websocket;

pub use config::{ProxyConfig, Target};
pub use error::{ConfigError, ReplaceError, RuleError, StartError};
pub use rewrite::{rewrite_bytes, Rule, RuleReplacement};
pub use server::ProxyServer;
pub use stats::StatsSnapshot;
#[cfg(feature = "napi")]
mod binding;
