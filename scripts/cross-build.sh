#!/bin/sh
# The release build of the Linux targets, exactly as the release workflow's Linux legs run it (they call
# this script): cargo-zigbuild, zig as the C compiler and linker, for glibc and musl, x64 and arm64, from
# one Linux x64 host. Each .node lands in the repository root, named as napi names them
# (devproxy-native.linux-arm64-gnu.node...).
#
#   sh scripts/cross-build.sh [triple...]      default: the four Linux targets of package.json
#
# CROSS_BUILD_OUT=dir puts the .node files there instead (scripts/release-dry-run.sh does, to leave the
# clone's own test build alone).
#
# glibc targets are built against glibc 2.17 (zig's `<triple>.2.17`), so the addon loads on CentOS 7,
# Debian 8, Ubuntu 14.04 and later; the script reads the highest GLIBC_ symbol version each .node needs
# (readelf) and fails above GLIBC_MAX. musl targets link musl dynamically (napi turns crt-static off).
#
# Versions are pinned here and nowhere else (the workflow runs this): zig and cargo-zigbuild from PyPI
# (ziglang, cargo-zigbuild), installed with pip when another version is there; each target's Rust std
# with rustup. Why zig and not napi's `--use-napi-cross` (docs/releasing.md): @napi-rs/cli 3.10's
# toolchain packages (@napi-rs/cross-toolchain-*@1.0.5) do not exist on npm, and its GCC 4.8.5 cannot
# build ring for arm64 without -D__ARM_ARCH=8.
set -eu
cd "$(dirname "$0")/.."

ZIG_VERSION=0.14.1
ZIGBUILD_VERSION=0.24.1
GLIBC=2.17
GLIBC_MAX=${GLIBC_MAX:-$GLIBC}
OUT=${CROSS_BUILD_OUT:-.}
TARGETS=${*:-x86_64-unknown-linux-gnu x86_64-unknown-linux-musl aarch64-unknown-linux-gnu aarch64-unknown-linux-musl}
PY=${PYTHON:-python3}

if [ "$($PY -m ziglang version 2>/dev/null)" != "$ZIG_VERSION" ] || [ "$(cargo-zigbuild --version 2>/dev/null)" != "cargo-zigbuild $ZIGBUILD_VERSION" ]; then
  $PY -m pip install --quiet "ziglang==$ZIG_VERSION" "cargo-zigbuild==$ZIGBUILD_VERSION"
fi
# napi's -x wants `zig` on PATH; PyPI's ziglang runs as `python3 -m ziglang`.
if [ "$(zig version 2>/dev/null)" != "$ZIG_VERSION" ]; then
  shim=$(mktemp -d)
  printf '#!/bin/sh\nexec %s -m ziglang "$@"\n' "$PY" >"$shim/zig"
  chmod +x "$shim/zig"
  PATH="$shim:$PATH"
  export PATH
fi

# The highest GLIBC_x.y a .node needs (its version-needs section), or "none".
glibc_floor() {
  readelf -W --version-info "$1" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -t. -k1,1n -k2,2n -k3,3n | tail -n 1 | grep . || echo none
}

for target in $TARGETS; do
  if ! rustup target list --installed | grep -qx "$target"; then
    rustup target add "$target"
  fi
  case "$target" in
    *-linux-gnu) zig_target="$target.$GLIBC" ;;
    *) zig_target="$target" ;;
  esac
  echo "cross-build: $zig_target (zig $ZIG_VERSION, cargo-zigbuild $ZIGBUILD_VERSION)" >&2
  # -x: cargo-zigbuild (napi also turns off crt-static for musl, so a cdylib can be built). The types go
  # to a scratch file: binding.d.ts is generated with the loader (npm run build), and is the same.
  npx napi build --platform --release --target "$zig_target" -x --output-dir "$OUT" --no-js --dts .cross-build.d.ts
  rm -f .cross-build.d.ts "$OUT/.cross-build.d.ts"
  case "$target" in
    x86_64-*-linux-gnu) node=devproxy-native.linux-x64-gnu.node ;;
    x86_64-*-linux-musl) node=devproxy-native.linux-x64-musl.node ;;
    aarch64-*-linux-gnu) node=devproxy-native.linux-arm64-gnu.node ;;
    aarch64-*-linux-musl) node=devproxy-native.linux-arm64-musl.node ;;
    *) continue ;;
  esac
  node=$OUT/$node
  floor=$(glibc_floor "$node")
  echo "cross-build: $node: $(wc -c <"$node") bytes, needs glibc $floor" >&2
  case "$target" in
    *-gnu)
      if [ "$(printf '%s\n%s\n' "$floor" "$GLIBC_MAX" | sort -t. -k1,1n -k2,2n | tail -n 1)" != "$GLIBC_MAX" ]; then
        echo "cross-build: $node needs glibc $floor, above $GLIBC_MAX" >&2
        exit 1
      fi
      ;;
    *-musl)
      if [ "$floor" != none ]; then
        echo "cross-build: $node is musl but needs glibc $floor" >&2
        exit 1
      fi
      ;;
  esac
done
