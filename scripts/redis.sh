#!/usr/bin/env bash
# Starts (or stops) a private redis-server for the tests: port $REDIS_PORT (default 16379), data in
# a temp dir, no persistence. Idempotent: "start" when it already answers does nothing. Installs
# Debian's redis-server when it is missing and we are root. "start" prints the address on stdout.
#   scripts/redis.sh start|stop|status
# Tests find it through SUPPLYPLAN_TEST_REDIS_ADDR (default 127.0.0.1:16379).
set -euo pipefail
PORT="${REDIS_PORT:-16379}"
DIR="${REDIS_DIR:-${TMPDIR:-/tmp}/supplyplan-redis-$PORT}"
PIDFILE="$DIR/redis.pid"

answers() {
  if command -v redis-cli >/dev/null 2>&1; then
    redis-cli -h 127.0.0.1 -p "$PORT" ping 2>/dev/null | grep -q PONG
  else
    (exec 3<>/dev/tcp/127.0.0.1/"$PORT" && printf 'PING\r\n' >&3 && timeout 1 head -c 5 <&3 | grep -q PONG) 2>/dev/null
  fi
}

install() {
  command -v redis-server >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "redis.sh: installing redis-server" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null 2>&1 ||
      { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null 2>&1; }
  fi
  command -v redis-server >/dev/null 2>&1 || { echo "redis.sh: redis-server is not installed" >&2; return 1; }
}

case "${1:-start}" in
start)
  if answers; then echo "127.0.0.1:$PORT"; exit 0; fi
  install
  mkdir -p "$DIR"
  redis-server --port "$PORT" --bind 127.0.0.1 --dir "$DIR" --save "" --appendonly no \
    --daemonize yes --pidfile "$PIDFILE" --logfile "$DIR/redis.log" >/dev/null 2>&1
  for _ in $(seq 1 50); do
    if answers; then echo "redis.sh: redis-server on 127.0.0.1:$PORT" >&2; echo "127.0.0.1:$PORT"; exit 0; fi
    sleep 0.1
  done
  echo "redis.sh: redis-server did not start; see $DIR/redis.log" >&2
  exit 1
  ;;
stop)
  if [ -f "$PIDFILE" ]; then
    kill "$(cat "$PIDFILE")" 2>/dev/null || true
    rm -f "$PIDFILE"
  fi
  ;;
status)
  answers && echo "up" || { echo "down"; exit 1; }
  ;;
*)
  echo "usage: $0 start|stop|status" >&2
  exit 2
  ;;
esac
