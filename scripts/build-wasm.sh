#!/bin/sh
# Builds devproxy-native/wasm: the rewrite engine (src/wasm.rs) for wasm32-unknown-unknown, and its JS
# glue in wasm/pkg/ by wasm-bindgen. Installs what is missing: the Rust target, and the wasm-bindgen
# CLI at the version Cargo.toml pins the wasm-bindgen crate to (they must be equal).
#
#   sh scripts/build-wasm.sh [--features test-hooks]
#
# The release workflow runs it bare: the published .wasm has no test hooks. scripts/prepare.js passes
# `--features test-hooks` for a clone's own build, which the tests use (`__liveFunctions`).
set -eu
cd "$(dirname "$0")/.."
VERSION=$(sed -n 's/^wasm-bindgen = "=\(.*\)"$/\1/p' Cargo.toml)
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  rustup target add wasm32-unknown-unknown
fi
BINDGEN=$(command -v wasm-bindgen || echo "${CARGO_HOME:-$HOME/.cargo}/bin/wasm-bindgen")
if [ "$("$BINDGEN" --version 2>/dev/null)" != "wasm-bindgen $VERSION" ]; then
  # --debug: built in 1m18s instead of 3m38s on a 2-core machine, and it still takes under a second
  # here, with byte-identical output (both measured on 0.2.130).
  cargo install wasm-bindgen-cli --version "$VERSION" --debug
  BINDGEN="${CARGO_HOME:-$HOME/.cargo}/bin/wasm-bindgen"
fi
# The release profile strips symbols, which would take the target_features section wasm-bindgen reads.
CARGO_PROFILE_RELEASE_STRIP=debuginfo cargo build --lib --release --target wasm32-unknown-unknown --no-default-features "$@"
# WASM_OUT_DIR: elsewhere than wasm/pkg/ (scripts/release-dry-run.sh).
"$BINDGEN" --target web --weak-refs --out-dir "${WASM_OUT_DIR:-wasm/pkg}" "${CARGO_TARGET_DIR:-target}/wasm32-unknown-unknown/release/devproxy_native.wasm"
