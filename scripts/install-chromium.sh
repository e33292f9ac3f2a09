#!/bin/sh
# What the tests need from the system, installed with apt-get when missing, nothing done when it is
# there: Chromium for the browser tests, and iproute2 (`ip`) for the test that puts the proxy and a
# client in two network namespaces (__test__/security-probe.test.js). Uses sudo unless run as root.
# `npm test` runs it first (package.json's `pretest`).
set -eu
# The browser tests run $CHROMIUM_PATH, by default /usr/bin/chromium (where Debian's package puts it).
PACKAGES=
[ -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ] || PACKAGES="chromium"
command -v ip >/dev/null 2>&1 || [ -x /usr/sbin/ip ] || [ -x /sbin/ip ] || PACKAGES="$PACKAGES iproute2"
if [ -z "$PACKAGES" ]; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-chromium: no apt-get here; install$PACKAGES (and set CHROMIUM_PATH to Chromium's binary)" >&2
  exit 1
fi
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "install-chromium: the tests need$PACKAGES; installing with ${SUDO:+sudo }apt-get" >&2
$SUDO apt-get update
# shellcheck disable=SC2086 # the list is meant to split
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y $PACKAGES
