#!/usr/bin/env bash
# Install code-server 4.100.3 (VS Code 1.100.3 in the browser) from npm, for the end-to-end test
# of the packaged extension (client-vscode/test/e2e/). Debian's packages give the headers its
# native modules build against and ripgrep; everything else comes from the npm registry (no
# prebuilt download). The result is cached in $CODE_SERVER_DIR (default
# ~/.cache/roofline-lsp/code-server-4.100.3) and reused when its stamp file is there, so a
# second run takes a second. Prints the code-server executable's path on its last line.
# code-server 4.101 and later need node 24; this one runs on node 18-22.
set -euo pipefail

VERSION=4.100.3
CS_DIR=${CODE_SERVER_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/roofline-lsp/code-server-$VERSION}
STAMP="$CS_DIR/.installed"
CS="$CS_DIR/node_modules/.bin/code-server"
export DEBIAN_FRONTEND=noninteractive npm_config_update_notifier=false npm_config_fund=false \
    npm_config_audit=false PUPPETEER_SKIP_DOWNLOAD=1
log() { printf 'install-code-server: %s\n' "$*" >&2; }

if [[ -f "$STAMP" && -x "$CS" ]] && "$CS" --version >/dev/null 2>&1; then
    log "cached: $("$CS" --version 2>/dev/null | head -n 1)"
    echo "$CS"
    exit 0
fi

# Headers for the native modules (kerberos, native-keymap, keytar) and ripgrep for search.
need=()
for pkg in libkrb5-dev libxkbfile-dev libsecret-1-dev libx11-dev pkg-config ripgrep g++ make; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if ((${#need[@]})); then
    SUDO=()
    if [[ $(id -u) -ne 0 ]]; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            SUDO=(sudo -n -E)
        else
            log "need root (or password-less sudo) to install ${need[*]}"
            exit 1
        fi
    fi
    log "apt-get install ${need[*]}"
    for i in 1 2 3 4 5 6; do
        "${SUDO[@]}" apt-get update -q -o DPkg::Lock::Timeout=60 >&2 && break
        ((i == 6)) && { log "apt-get update failed"; exit 1; }
        sleep 10
    done
    "${SUDO[@]}" apt-get install -y -q -o DPkg::Lock::Timeout=300 --no-install-recommends \
        "${need[@]}" >&2
fi

rm -rf "$CS_DIR"
mkdir -p "$CS_DIR"
cd "$CS_DIR"
log "npm install code-server@$VERSION into $CS_DIR"
{
    npm install --unsafe-perm --ignore-scripts --no-audit --no-fund --prefix "$CS_DIR" \
        "code-server@$VERSION"
    cd node_modules/code-server/lib/vscode
    npm install --unsafe-perm --omit=dev --ignore-scripts --no-audit --no-fund
    # @vscode/ripgrep's postinstall downloads rg unless bin/ exists: use Debian's
    mkdir -p node_modules/@vscode/ripgrep/bin
    cp "$(command -v rg)" node_modules/@vscode/ripgrep/bin/
    # native modules; node-pty's compile_commands step fails after pty.node is built: harmless
    npm rebuild --unsafe-perm || log "npm rebuild reported an error (node-pty's is expected)"
    ln -sfn node_modules node_modules.asar
    (cd bin/remote-cli && ln -sfn code-linux.sh code-server)
    (cd bin/helpers && ln -sfn browser-linux.sh browser.sh)
    (cd extensions && npm install --unsafe-perm --omit=dev --no-audit --no-fund)
    cd "$CS_DIR"
    npm rebuild argon2 --build-from-source --unsafe-perm
} >&2
"$CS" --version >&2
touch "$STAMP"
log "installed in $CS_DIR"
echo "$CS"
