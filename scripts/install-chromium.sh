#!/bin/sh
# Chromium for the browser test (__test__/security.test.js): installed with apt-get when missing,
# nothing done when it is there. Uses sudo unless run as root.
set -eu
# The test runs $CHROMIUM_PATH, by default /usr/bin/chromium (where Debian's package puts it).
if [ -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ]; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-chromium: no apt-get here; install Chromium and set CHROMIUM_PATH to its binary" >&2
  exit 1
fi
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium
