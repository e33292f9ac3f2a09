//! devproxy-native: a streaming, rewriting dev reverse proxy.
//!
//! The core (everything but `binding`) knows nothing about Node: it is tested with `cargo test
//! --no-default-features` and benchmarked with criterion. Request flow, one module per step:
//! [`server`] accepts → [`headers`] rewrites request headers → [`forward`] sends upstream →
//! [`headers`] rewrites response headers → [`body`] decides and runs the body pipeline
//! ([`codec`] decode → [`rewrite`] rules → [`codec`] encode). [`websocket`] tunnels upgrades; [`security`] decides
//! which `Host` and WebSocket `Origin` the proxy accepts.

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
