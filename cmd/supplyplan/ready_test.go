package main

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/supplyplan/supplyplan/internal/testdeps"
)

// TestReadyChecksDependencies runs /ready against the real ClickHouse and Redis servers and a
// Kafka-protocol broker: ready, with each check visible to the platform key only; then with a
// broker that refuses connections: 503, the driver's error shown to the platform key only.
func TestReadyChecksDependencies(t *testing.T) {
	ch, rd := testdeps.ClickHouse(t), testdeps.Redis(t)
	const topic = "supplyplan.demand-signals"
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic, topic+".dlq"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	db := fmt.Sprintf("sp_ready_%d", time.Now().UnixNano())
	prefix := fmt.Sprintf("sp-ready-%d:", time.Now().UnixNano())
	s := MustStart(t, "", func(c *Config) {
		c.ClickHouseAddr, c.ClickHouseDatabase = ch, db
		c.RedisAddr, c.RedisPrefix = rd, prefix
		c.KafkaBrokers = cluster.ListenAddrs()[0]
	})
	if r := s.Do("GET", "/ready", "", nil); r.Status != 200 || string(r.Body) != `{"status":"ready"}` {
		t.Fatalf("ready: %d %s", r.Status, r.Body)
	}
	if r := s.Do("GET", "/ready", s.Key("ADMIN"), nil); r.Status != 200 || string(r.Body) != `{"status":"ready"}` {
		t.Fatalf("ready, tenant key: %d %s", r.Status, r.Body)
	}
	full := s.Do("GET", "/ready", s.Key("platform"), nil).Must(t, 200)
	checks, _ := full["checks"].(map[string]any)
	for _, name := range []string{"journal", "clickhouse", "redis", "kafka"} {
		c, _ := checks[name].(map[string]any)
		if c["ok"] != true {
			t.Errorf("check %s = %v (all: %v)", name, c, full)
		}
	}
	if len(checks) != 4 {
		t.Errorf("checks = %v", checks)
	}
	if h := s.Do("GET", "/health", "", nil); h.Status != 200 {
		t.Errorf("health: %d", h.Status)
	}

	// A broker address nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	s2 := MustStart(t, "", func(c *Config) { c.KafkaBrokers = dead })
	r := s2.Do("GET", "/ready", "", nil)
	if r.Status != 503 || string(r.Body) != `{"status":"unavailable"}` {
		t.Fatalf("kafka down, no key: %d %s", r.Status, r.Body)
	}
	r = s2.Do("GET", "/ready", s2.Key("platform"), nil)
	body := r.Must(t, 503)
	k, _ := body["checks"].(map[string]any)["kafka"].(map[string]any)
	if k["ok"] != false || !strings.Contains(fmt.Sprint(k["error"]), dead) {
		t.Fatalf("kafka down, platform key: %s", r.Body)
	}
	if j, _ := body["checks"].(map[string]any)["journal"].(map[string]any); j["ok"] != true {
		t.Fatalf("journal: %s", r.Body)
	}
	if h := s2.Do("GET", "/health", "", nil); h.Status != 200 {
		t.Errorf("health stays liveness: %d", h.Status)
	}
}
