#!/bin/sh
# What the tests need from the system, installed when missing, nothing done when it is there: with
# apt-get, Chromium for the browser tests and iproute2 (`ip`) for the test that puts the proxy and a
# client in two network namespaces (__test__/security-probe.test.js); with pip, Django 5.2 for the
# forms round trip through a real Django admin (__test__/forms-roundtrip.test.js). Uses sudo unless
# run as root. `npm test` runs it first (package.json's `pretest`).
set -eu
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
# The browser tests run $CHROMIUM_PATH, by default /usr/bin/chromium (where Debian's package puts it).
PACKAGES=
[ -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ] || PACKAGES="chromium"
command -v ip >/dev/null 2>&1 || [ -x /usr/sbin/ip ] || [ -x /sbin/ip ] || PACKAGES="$PACKAGES iproute2"
if [ -n "$PACKAGES" ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-chromium: no apt-get here; install$PACKAGES (and set CHROMIUM_PATH to Chromium's binary)" >&2
    exit 1
  fi
  echo "install-chromium: the tests need$PACKAGES; installing with ${SUDO:+sudo }apt-get" >&2
  $SUDO apt-get update
  # shellcheck disable=SC2086 # the list is meant to split
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y $PACKAGES
fi
# Django for the admin the forms test saves through the proxy, into the python3 the test runs (named
# by its path: sudo's PATH may find another one), with sudo only where that one's packages are not ours.
if ! python3 -c 'import django' >/dev/null 2>&1; then
  if ! command -v python3 >/dev/null 2>&1; then
    echo "install-chromium: no python3 here; install it, then Django 5.2 (python3 -m pip install 'django>=5.2,<5.3')" >&2
    exit 1
  fi
  PYTHON=$(python3 -c 'import sys; print(sys.executable)')
  PIP_SUDO=$SUDO
  if [ -w "$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" ]; then
    PIP_SUDO=
  fi
  echo "install-chromium: the tests need Django 5.2 for $PYTHON; installing with ${PIP_SUDO:+sudo }pip" >&2
  # A python3 whose packages belong to the system (PEP 668) takes it only when told so.
  $PIP_SUDO "$PYTHON" -m pip install 'django>=5.2,<5.3' ||
    $PIP_SUDO "$PYTHON" -m pip install --break-system-packages 'django>=5.2,<5.3'
fi
