#!/usr/bin/env bash
# Installs and starts the real servers and clients the integration tests use. Idempotent.
#  - Redis on 127.0.0.1:16379 (scripts/redis.sh) for the redisstore and distributed-mode tests.
#  - The official MCP TypeScript SDK client (scripts/mcp-client.sh) in bin/mcp-client/.
# Under CI a failure here fails the run; otherwise the tests that need a missing part say so.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${CI:-}" ]; then
  bash scripts/redis.sh start
  bash scripts/mcp-client.sh
else
  bash scripts/redis.sh start || echo "test-deps: Redis unavailable; Redis tests will skip" >&2
  bash scripts/mcp-client.sh || echo "test-deps: MCP TypeScript client unavailable; its test will skip" >&2
fi
