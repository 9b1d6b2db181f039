#!/usr/bin/env bash
# Install the headless browser the chart tests drive (tests/e2e/test_chart_browser.py): Debian's
# `chromium` package. Idempotent and quick when chromium is already on PATH (apt is not
# touched); non-interactive. Safe to run twice.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
log() { printf 'install-browser: %s\n' "$*"; }

if command -v chromium >/dev/null 2>&1; then
    log "chromium already installed: $(chromium --version 2>/dev/null | head -n 1)"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    log "no apt-get on this system: install chromium yourself" >&2
    exit 1
fi

# Run as root directly, through sudo otherwise (when it is available without a password).
SUDO=()
if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO=(sudo -n -E)
    else
        log "need root (or password-less sudo) to install chromium" >&2
        exit 1
    fi
fi

APT_OPTS=(-y -q -o DPkg::Lock::Timeout=300 -o Dpkg::Options::=--force-confdef
    -o Dpkg::Options::=--force-confold)

# Retried: another apt run (e.g. unattended upgrades) may hold the lists lock for a while.
for i in 1 2 3 4 5 6; do
    if "${SUDO[@]}" apt-get update -q -o DPkg::Lock::Timeout=60; then
        break
    fi
    if ((i == 6)); then
        log "apt-get update failed" >&2
        exit 1
    fi
    log "apt-get update failed (try $i), retrying in 10s" >&2
    sleep 10
done
"${SUDO[@]}" apt-get install "${APT_OPTS[@]}" --no-install-recommends chromium fonts-dejavu-core
hash -r
if ! command -v chromium >/dev/null 2>&1; then
    log "chromium is still not on PATH after the install" >&2
    exit 1
fi
log "chromium installed: $(chromium --version 2>/dev/null | head -n 1)"
