#!/bin/sh
# The browser for tests/learn/test_lab_browser.py: Debian's chromium and chromium-driver.
# `make test` runs this. Installs them when missing and we are root with apt-get; otherwise says
# how to install them (the browser tests then skip, or fail under CI=true).
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
    exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing chromium and chromium-driver for the lab's browser tests ..."
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
    exit $?
fi
echo "note: no /usr/bin/chromium + /usr/bin/chromedriver; the lab's browser tests will skip (or fail under CI)."
echo "      install them with: sudo apt-get install chromium chromium-driver"
