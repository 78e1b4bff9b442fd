#!/usr/bin/env bash
# Installs and starts the real servers the integration tests use, on private ports (never the
# system-wide services), and writes their addresses to bin/test-deps.env, which `make test` loads
# into the environment of `go test`. Idempotent: servers already running are reused.
#
#   ClickHouse: scripts/clickhouse.sh (127.0.0.1:19000) -> SUPPLYPLAN_TEST_CLICKHOUSE_ADDR
#   Redis:      scripts/redis.sh      (127.0.0.1:16379) -> SUPPLYPLAN_TEST_REDIS_ADDR
#   node for the bundled MCP TypeScript SDK client: scripts/mcp-client.sh (scripts/mcp-client/client.bundle.mjs)
#   curl and jq for the documentation test (docs/api.md's examples run as written)
#   chromium for the operator console's browser tests (cmd/supplyplan/console_browser_test.go,
#   driven with chromedp) -> SUPPLYPLAN_TEST_CHROMIUM
#
# When a server cannot be started the script fails if CI is set; otherwise it warns, and the tests
# that need the server skip.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bin
env_file=bin/test-deps.env
tmp="$env_file.tmp"
: >"$tmp"

if ch_addr=$(bash scripts/clickhouse.sh start); then
	echo "SUPPLYPLAN_TEST_CLICKHOUSE_ADDR=$ch_addr" >>"$tmp"
elif [ -n "${CI:-}" ]; then
	echo "test-deps: ClickHouse did not start (CI is set)" >&2
	exit 1
else
	echo "test-deps: WARNING: ClickHouse did not start; its tests will skip" >&2
fi

if redis_addr=$(bash scripts/redis.sh start); then
	echo "SUPPLYPLAN_TEST_REDIS_ADDR=$redis_addr" >>"$tmp"
elif [ -n "${CI:-}" ]; then
	echo "test-deps: Redis did not start (CI is set)" >&2
	exit 1
else
	echo "test-deps: WARNING: Redis did not start; its tests will skip" >&2
fi

# curl and jq run the examples of docs/api.md (TestAPIDocumentationRuns).
for tool in curl jq; do
	if ! command -v "$tool" >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "test-deps: installing $tool with apt-get" >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$tool" >/dev/null 2>&1 ||
			{ DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$tool" >/dev/null; } || true
	fi
	if ! command -v "$tool" >/dev/null 2>&1; then
		if [ -n "${CI:-}" ]; then
			echo "test-deps: $tool is missing (CI is set)" >&2
			exit 1
		fi
		echo "test-deps: WARNING: $tool is missing; the documentation test will skip" >&2
	fi
done

if ! bash scripts/mcp-client.sh; then
	if [ -n "${CI:-}" ]; then
		echo "test-deps: the MCP TypeScript client could not be installed (CI is set)" >&2
		exit 1
	fi
	echo "test-deps: WARNING: the MCP TypeScript client is missing; its test will skip" >&2
fi

# Debian's chromium drives the console's browser tests (docs/console.md).
chromium_bin=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium_bin" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "test-deps: installing chromium with apt-get" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1 ||
		{ DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null; } || true
	chromium_bin=$(command -v chromium || command -v chromium-browser || true)
fi
if [ -n "$chromium_bin" ]; then
	echo "SUPPLYPLAN_TEST_CHROMIUM=$chromium_bin" >>"$tmp"
elif [ -n "${CI:-}" ]; then
	echo "test-deps: chromium is missing (CI is set)" >&2
	exit 1
else
	echo "test-deps: WARNING: chromium is missing; the console's browser tests will skip" >&2
fi

mv "$tmp" "$env_file"
