#!/usr/bin/env bash
# Starts or stops a private ClickHouse server for the tests (never the system-wide service).
#
#   bash scripts/clickhouse.sh start   # installs clickhouse-server if missing (root + apt), starts it, prints the address
#   bash scripts/clickhouse.sh stop    # stops it (data stays under the directory until `clean`)
#   bash scripts/clickhouse.sh status  # prints the address when it answers, exits 1 otherwise
#   bash scripts/clickhouse.sh clean   # stops it and removes its directory
#
# Settings (environment): SUPPLYPLAN_CLICKHOUSE_DIR (default /tmp/supplyplan-clickhouse),
# SUPPLYPLAN_CLICKHOUSE_PORT (native protocol, default 19000). The server listens on 127.0.0.1 only and
# opens no HTTP or interserver port. See docs/clickhouse.md for why each config entry is there.
set -euo pipefail

DIR="${SUPPLYPLAN_CLICKHOUSE_DIR:-/tmp/supplyplan-clickhouse}"
PORT="${SUPPLYPLAN_CLICKHOUSE_PORT:-19000}"
ADDR="127.0.0.1:${PORT}"
SERVER=/usr/sbin/clickhouse-server
CLIENT=/usr/bin/clickhouse-client
PIDFILE="$DIR/clickhouse.pid"

log() { echo "clickhouse.sh: $*" >&2; }

install_server() {
	if [ -x "$SERVER" ] && [ -x "$CLIENT" ]; then
		return
	fi
	if [ "$(id -u)" != 0 ]; then
		log "$SERVER is missing and we are not root: install the Debian packages clickhouse-server and clickhouse-client"
		exit 1
	fi
	log "installing clickhouse-server and clickhouse-client with apt-get"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	# The package's postinst may try to start the system service; policy-rc.d 101 keeps it from doing so.
	local policy=/usr/sbin/policy-rc.d created_policy=0
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy"
		chmod +x "$policy"
		created_policy=1
	fi
	local rc=0
	apt-get install -y -qq --no-install-recommends clickhouse-server clickhouse-client >&2 || rc=$?
	if [ "$created_policy" = 1 ]; then
		rm -f "$policy"
	fi
	if [ "$rc" != 0 ] || [ ! -x "$SERVER" ] || [ ! -x "$CLIENT" ]; then
		log "apt-get install failed (exit $rc)"
		exit 1
	fi
}

answers() {
	"$CLIENT" --host 127.0.0.1 --port "$PORT" --query 'SELECT 1' >/dev/null 2>&1
}

running_pid() {
	[ -f "$PIDFILE" ] || return 1
	local pid
	pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
	# Guard against a recycled pid: it must still be our server.
	grep -q "$DIR/config.xml" "/proc/$pid/cmdline" 2>/dev/null || return 1
	echo "$pid"
}

write_config() {
	mkdir -p "$DIR/data" "$DIR/tmp" "$DIR/user_files" "$DIR/format_schemas" "$DIR/log"
	cat >"$DIR/config.xml" <<EOF
<?xml version="1.0"?>
<!-- Written by scripts/clickhouse.sh: a private test server. -->
<yandex>
    <logger>
        <level>warning</level>
        <log>$DIR/log/clickhouse-server.log</log>
        <errorlog>$DIR/log/clickhouse-server.err.log</errorlog>
        <size>50M</size>
        <count>2</count>
    </logger>
    <listen_host>127.0.0.1</listen_host>
    <tcp_port>$PORT</tcp_port>
    <!-- No http_port, https_port, tcp_port_secure or interserver_http_port: those listeners stay closed. -->
    <max_connections>512</max_connections>
    <keep_alive_timeout>3</keep_alive_timeout>
    <max_concurrent_queries>100</max_concurrent_queries>
    <uncompressed_cache_size>268435456</uncompressed_cache_size>
    <mark_cache_size>268435456</mark_cache_size>
    <path>$DIR/data/</path>
    <tmp_path>$DIR/tmp/</tmp_path>
    <user_files_path>$DIR/user_files/</user_files_path>
    <format_schema_path>$DIR/format_schemas/</format_schema_path>
    <users_config>$DIR/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <mlock_executable>false</mlock_executable>
    <builtin_dictionaries_reload_interval>3600</builtin_dictionaries_reload_interval>
    <max_session_timeout>3600</max_session_timeout>
    <default_session_timeout>60</default_session_timeout>
</yandex>
EOF
	cat >"$DIR/users.xml" <<EOF
<?xml version="1.0"?>
<yandex>
    <profiles>
        <default>
            <max_memory_usage>4000000000</max_memory_usage>
            <use_uncompressed_cache>0</use_uncompressed_cache>
            <load_balancing>random</load_balancing>
        </default>
    </profiles>
    <users>
        <default>
            <password></password>
            <networks>
                <ip>127.0.0.1</ip>
                <ip>::1</ip>
            </networks>
            <profile>default</profile>
            <quota>default</quota>
        </default>
    </users>
    <quotas>
        <default>
            <interval>
                <duration>3600</duration>
                <queries>0</queries>
                <errors>0</errors>
                <result_rows>0</result_rows>
                <read_rows>0</read_rows>
                <execution_time>0</execution_time>
            </interval>
        </default>
    </quotas>
</yandex>
EOF
}

start() {
	install_server
	if answers; then
		log "already running"
		echo "$ADDR"
		return
	fi
	if pid=$(running_pid); then
		log "server $pid is starting; waiting"
	else
		write_config
		# The server runs in the foreground of a detached session so that its pid is ours to stop;
		# its own stdout/stderr go to a file (it logs to $DIR/log as configured).
		# (18.16 writes no --pid-file unless it daemonizes itself, so the pid is taken from $!.)
		cd "$DIR"
		setsid "$SERVER" --config-file="$DIR/config.xml" </dev/null >"$DIR/log/stdout.log" 2>&1 &
		echo $! >"$PIDFILE"
		cd - >/dev/null
	fi
	local i
	for i in $(seq 1 300); do
		if answers; then
			log "ready on $ADDR (dir $DIR)"
			echo "$ADDR"
			return
		fi
		sleep 0.2
	done
	log "server did not answer on $ADDR within 60 s; last log lines:"
	tail -n 30 "$DIR/log/stdout.log" "$DIR/log/clickhouse-server.err.log" >&2 2>/dev/null || true
	exit 1
}

stop() {
	local pid
	if ! pid=$(running_pid); then
		if answers; then
			log "something answers on $ADDR but it was not started from $DIR; leaving it alone"
			exit 1
		fi
		log "not running"
		return
	fi
	kill -TERM "$pid"
	local i
	for i in $(seq 1 150); do
		if ! kill -0 "$pid" 2>/dev/null; then
			rm -f "$PIDFILE"
			log "stopped"
			return
		fi
		sleep 0.2
	done
	log "server $pid did not stop in 30 s; sending SIGKILL"
	kill -KILL "$pid" 2>/dev/null || true
	rm -f "$PIDFILE"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status)
	if answers; then echo "$ADDR"; else exit 1; fi
	;;
clean)
	stop
	rm -rf "$DIR"
	;;
*)
	echo "usage: $0 start|stop|status|clean" >&2
	exit 2
	;;
esac
