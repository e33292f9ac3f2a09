#!/bin/sh
# Builds devproxy-native/wasm: the rewrite engine (src/wasm.rs) for wasm32-unknown-unknown, and its JS
# glue in wasm/pkg/ by wasm-bindgen. Installs what is missing: the Rust target, and the wasm-bindgen
# CLI at the version Cargo.toml pins the wasm-bindgen crate to (they must be equal).
set -eu
cd "$(dirname "$0")/.."
VERSION=$(sed -n 's/^wasm-bindgen = "=\(.*\)"$/\1/p' Cargo.toml)
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  rustup target add wasm32-unknown-unknown
fi
if [ "$(wasm-bindgen --version 2>/dev/null)" != "wasm-bindgen $VERSION" ]; then
  cargo install wasm-bindgen-cli --version "$VERSION"
fi
# The release profile strips symbols, which would take the target_features section wasm-bindgen reads.
CARGO_PROFILE_RELEASE_STRIP=debuginfo cargo build --lib --release --target wasm32-unknown-unknown --no-default-features
wasm-bindgen --target web --weak-refs --out-dir wasm/pkg target/wasm32-unknown-unknown/release/devproxy_native.wasm
