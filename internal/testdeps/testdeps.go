// Package testdeps finds the real servers the integration tests use (started by
// scripts/test-deps.sh, which `make test` runs). A missing server fails the test when CI is set,
// so CI can never pass by skipping; elsewhere the test skips with how to start the server.
package testdeps

import (
	"fmt"
	"net"
	"os"
	"testing"
	"time"
)

// ClickHouse returns the address of the test ClickHouse (SUPPLYPLAN_TEST_CLICKHOUSE_ADDR, default
// 127.0.0.1:19000) once it accepts connections.
func ClickHouse(tb testing.TB) string {
	tb.Helper()
	return server(tb, "ClickHouse", "SUPPLYPLAN_TEST_CLICKHOUSE_ADDR", "127.0.0.1:19000", "bash scripts/clickhouse.sh start")
}

// Redis returns the address of the test Redis (SUPPLYPLAN_TEST_REDIS_ADDR, default
// 127.0.0.1:16379) once it accepts connections.
func Redis(tb testing.TB) string {
	tb.Helper()
	return server(tb, "Redis", "SUPPLYPLAN_TEST_REDIS_ADDR", "127.0.0.1:16379", "bash scripts/redis.sh start")
}

// Missing fails the test under CI and skips it elsewhere: what is missing, and how to get it.
func Missing(tb testing.TB, what, fix string) {
	tb.Helper()
	msg := fmt.Sprintf("%s (run %s)", what, fix)
	if os.Getenv("CI") != "" {
		tb.Fatal(msg)
	}
	tb.Skip(msg + "; skipped because CI is not set")
}

func server(tb testing.TB, name, env, def, fix string) string {
	tb.Helper()
	addr := os.Getenv(env)
	if addr == "" {
		addr = def
	}
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		Missing(tb, fmt.Sprintf("%s at %s is unreachable: %v", name, addr, err), fix)
		return ""
	}
	_ = c.Close()
	return addr
}
