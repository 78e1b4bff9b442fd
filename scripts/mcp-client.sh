#!/usr/bin/env bash
# Installs the official MCP TypeScript SDK client (versions pinned in scripts/mcp-client/package-lock.json)
# from the npm registry into bin/mcp-client/ (gitignored), next to the smoke client client.mjs.
# Idempotent: does nothing when the installed lock file matches the committed one.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=scripts/mcp-client
DST=bin/mcp-client
command -v node >/dev/null 2>&1 || { echo "mcp-client.sh: node is not installed" >&2; exit 1; }
command -v npm >/dev/null 2>&1 || { echo "mcp-client.sh: npm is not installed" >&2; exit 1; }
mkdir -p "$DST"
cp "$SRC/client.mjs" "$DST/client.mjs"
if [ -d "$DST/node_modules/@modelcontextprotocol/sdk" ] && cmp -s "$SRC/package-lock.json" "$DST/package-lock.json"; then
  exit 0
fi
cp "$SRC/package.json" "$SRC/package-lock.json" "$DST/"
(cd "$DST" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
echo "mcp-client.sh: installed $(node -p "require('./$DST/node_modules/@modelcontextprotocol/sdk/package.json').version" 2>/dev/null || echo '?') in $DST" >&2
