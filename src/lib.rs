//! devproxy-native: a streaming, rewriting dev reverse proxy.
//!
//! The core (everything but `binding`) knows nothing about Node: it is tested with `cargo test
//! --no-default-features` and benchmarked with criterion. Request flow, one module per step:
//! [`server`] accepts → [`headers`] rewrites request headers → [`forward`] sends upstream →
//! [`headers`] rewrites response headers → [`body`] decides and runs the body pipeline
//! ([`codec`] decode → [`rewrite`] rules → [`codec`] encode). [`websocket`] tunnels upgrades.

pub mod error;
pub mod rewrite;
pub mod codec;
