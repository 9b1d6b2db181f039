#!/usr/bin/env bash
# CI for the VS Code extension: install, lint, type-check, unit tests, package the .vsix, then
# the integration test against the installed roofline-lsp server (install the Python package first).
set -euo pipefail
cd "$(dirname "$0")"

export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

rm -f ./*.vsix
npm ci --no-audit --no-fund
npm run lint
npm run typecheck
npm test
npm run package
ls -1 ./*.vsix
npm run test:integration
