package telemetry

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestNilMetricsDoNothing(t *testing.T) {
	var m *Metrics
	m.Route("api", "GET", "/x").Observe(200, time.Millisecond)
	m.JournalCommit(3, time.Millisecond)
	m.KafkaPartition("t", 0).Set(5)
	m.Delivery("endpoint", "succeeded")
	m.Mailbox("tenant").Add(1)
	var b bytes.Buffer
	m.WritePrometheus(&b)
	if b.Len() != 0 {
		t.Fatalf("nil metrics wrote %q", b.String())
	}
}

func TestRouteObserveAllocatesNothing(t *testing.T) {
	m := New()
	r := m.Route("api", "GET", "/api/x/:id")
	r.Observe(200, time.Millisecond) // creates the 200 counter
	if n := testing.AllocsPerRun(1000, func() { r.Observe(200, 2*time.Millisecond) }); n != 0 {
		t.Fatalf("Observe allocates %v times", n)
	}
	r.Observe(799, time.Second) // an odd status counts as other
	var b bytes.Buffer
	m.WritePrometheus(&b)
	for _, want := range []string{
		`supplyplan_http_requests_total{server="api",route="/api/x/:id",method="GET",status="200"} 1002`,
		`supplyplan_http_requests_total{server="api",route="/api/x/:id",method="GET",status="other"} 1`,
		`supplyplan_http_request_duration_seconds_bucket{server="api",route="/api/x/:id",method="GET",le="0.0025"} 1002`,
		`supplyplan_http_request_duration_seconds_count{server="api",route="/api/x/:id",method="GET"} 1003`,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %s in\n%s", want, b.String())
		}
	}
}

func TestPartitionLagGoesAwayOnClose(t *testing.T) {
	m := New()
	p := m.KafkaPartition("signals", 3)
	p.Set(42)
	var b bytes.Buffer
	m.WritePrometheus(&b)
	if !strings.Contains(b.String(), `supplyplan_kafka_consumer_lag{topic="signals",partition="3"} 42`) {
		t.Fatalf("lag missing:\n%s", b.String())
	}
	p.Close()
	b.Reset()
	m.WritePrometheus(&b)
	if strings.Contains(b.String(), "supplyplan_kafka_consumer_lag{") {
		t.Fatal("lag of a revoked partition still exposed")
	}
}
