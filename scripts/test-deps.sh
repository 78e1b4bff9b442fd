#!/usr/bin/env bash
# Installs and starts the real servers the integration tests use. Idempotent.
#  - Redis on 127.0.0.1:16379 (scripts/redis.sh) for the redisstore and distributed-mode tests.
# Under CI a failure here fails the run; otherwise the tests that need a missing part say so.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${CI:-}" ]; then
  bash scripts/redis.sh start
else
  bash scripts/redis.sh start || echo "test-deps: Redis unavailable; Redis tests will skip" >&2
fi
