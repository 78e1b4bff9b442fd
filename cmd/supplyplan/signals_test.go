package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/streams"
)

func TestSignalsOverHTTP(t *testing.T) {
	s := MustStart(t, "")
	s.SeedCatalog([]string{"P"}, []string{"L"})
	wk := monday(-1)
	s.Import("demand-history", map[string]any{"records": []any{map[string]any{"skuId": "P", "locationId": "L", "weekStarting": wk.Format("2006-01-02"), "actualDemand": 10}}})
	at := wk.Add(50 * time.Hour).Format(time.RFC3339)
	body := map[string]any{"signals": []any{
		map[string]any{"signalId": "s1", "skuId": "P", "locationId": "L", "quantity": 3, "occurredAt": at},
		map[string]any{"signalId": "s2", "skuId": "P", "locationId": "L", "channel": "ONLINE", "quantity": 2, "occurredAt": at},
		map[string]any{"signalId": "s1", "skuId": "P", "locationId": "L", "quantity": 3, "occurredAt": at},
		map[string]any{"signalId": "s3", "skuId": "NOPE", "locationId": "L", "quantity": 3, "occurredAt": at},
		map[string]any{"signalId": "s4", "skuId": "P", "locationId": "L", "occurredAt": at},
		map[string]any{"signalId": "s5", "skuId": "P", "locationId": "L", "quantity": 1, "occurredAt": "not a time"},
		map[string]any{"signalId": "s6", "skuId": "P", "locationId": "L", "quantity": 1, "occurredAt": at, "organizationId": "org_other"},
	}}
	res := s.Do("POST", "/api/demand/signals", s.Key("PLANNER"), body).Must(t, 200)
	if num(res, "applied") != 2 || num(res, "duplicates") != 1 || num(res, "rejected") != 4 {
		t.Fatalf("outcomes = %v", res)
	}
	reasons := map[string]string{}
	for _, o := range list(res, "outcomes") {
		m := o.(map[string]any)
		reasons[fmt.Sprint(m["signalId"])] += fmt.Sprint(m["status"], "/", m["reason"], " ")
	}
	if reasons["s3"] != "REJECTED/UNKNOWN_PRODUCT " || reasons["s4"] != "REJECTED/INVALID_SIGNAL " {
		t.Fatalf("reasons = %v", reasons)
	}
	// A signal is validated once, by the stream it enters (signal_path.go): s5, whose occurredAt
	// does not parse, was refused there, not by the handler. s4 (no quantity) and s6 (another
	// organization) are REST rows that are not signals: the handler refuses them.
	if got := s.Main.Signals.Stats().Invalid; got != 1 || reasons["s5"] != "REJECTED/INVALID_SIGNAL " {
		t.Fatalf("signals the stream refused = %d (s5: %s), want 1", got, reasons["s5"])
	}
	h := s.Do("GET", "/api/demand/history?skuId=P&locationId=L", s.Key("VIEWER"), nil).Must(t, 200)
	if num(h, "totalActualDemand") != 15 { // 10 imported + 3 + 2 (ALL sums channels); the duplicate adds nothing
		t.Fatalf("history after signals = %v", h)
	}
	// A redelivery of the whole batch changes nothing.
	again := doRequest(t, s.URL, "POST", "/api/demand/signals", map[string]string{"x-api-key": s.Key("import")}, body).Must(t, 200)
	if num(again, "applied") != 0 || num(again, "duplicates") != 3 {
		t.Fatalf("redelivery = %v", again)
	}
	// A signal whose week is more than SignalDedupWeeks before the newest week of the
	// organization's signals is refused (its id may be forgotten already), and one dated more than
	// a day ahead is not a valid signal (it would move the window past today's signals).
	old := wk.AddDate(0, 0, -7*(supplyplan.SignalDedupWeeks+1)).Add(time.Hour)
	edge := map[string]any{"signals": []any{
		map[string]any{"signalId": "late", "skuId": "P", "locationId": "L", "quantity": 7, "occurredAt": old.Format(time.RFC3339)},
		map[string]any{"signalId": "ahead", "skuId": "P", "locationId": "L", "quantity": 7, "occurredAt": time.Now().Add(72 * time.Hour).Format(time.RFC3339)},
		map[string]any{"signalId": "in-window", "skuId": "P", "locationId": "L", "quantity": 0, "occurredAt": old.AddDate(0, 0, 7).Format(time.RFC3339)},
	}}
	er := s.Do("POST", "/api/demand/signals", s.Key("PLANNER"), edge).Must(t, 200)
	got := map[string]string{}
	for _, o := range list(er, "outcomes") {
		m := o.(map[string]any)
		got[fmt.Sprint(m["signalId"])] = fmt.Sprint(m["status"], "/", m["reason"])
	}
	if got["late"] != "REJECTED/LATE_SIGNAL" || got["ahead"] != "REJECTED/INVALID_SIGNAL" || got["in-window"] != "APPLIED/<nil>" {
		t.Fatalf("signals at the edges: %v", got)
	}
	if r := s.Do("POST", "/api/demand/signals", s.Key("VIEWER"), body); r.Status != 403 {
		t.Fatalf("viewer ingests: %d", r.Status)
	}
	if r := s.Do("POST", "/api/demand/signals", s.Key("ADMIN"), map[string]any{"signals": []any{}}); r.Status != 400 {
		t.Fatalf("empty batch: %d", r.Status)
	}
	// Signals survive a restart (they are durable in the demand store).
	s2 := s.Restart()
	if h := s2.Do("GET", "/api/demand/history?skuId=P&locationId=L", s.Key("VIEWER"), nil).Must(t, 200); num(h, "totalActualDemand") != 15 {
		t.Fatalf("after restart = %v", h)
	}
}

func TestSignalsFromKafka(t *testing.T) {
	const topic = "supplyplan.demand-signals"
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, topic, topic+".dlq"), kfake.GroupMinSessionTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	brokers := cluster.ListenAddrs()
	s := MustStart(t, "", func(c *Config) { c.KafkaBrokers = brokers[0] })
	s.SeedCatalog([]string{"P", "Q"}, []string{"L1", "L2"})
	org := s.Creds.Organization.ID
	wk := monday(-2)
	var sigs []supplyplan.DemandSignal
	want := map[string]float64{}
	for i := 0; i < 2000; i++ {
		sku, loc := []string{"P", "Q"}[i%2], []string{"L1", "L2"}[(i/2)%2]
		q := float64(i%5 + 1)
		sigs = append(sigs, supplyplan.DemandSignal{SignalID: fmt.Sprintf("k-%d", i), OrganizationID: org, SKU: sku, Location: loc,
			Quantity: q, OccurredAt: wk.Add(time.Duration(i%7) * 24 * time.Hour)})
		want[sku+"|"+loc] += q
	}
	// Signals of an unknown tenant and of unknown products go to the dead-letter topic.
	sigs = append(sigs, supplyplan.DemandSignal{SignalID: "bad-1", OrganizationID: "org_nobody", SKU: "P", Location: "L1", Quantity: 1, OccurredAt: wk},
		supplyplan.DemandSignal{SignalID: "bad-2", OrganizationID: org, SKU: "NOPE", Location: "L1", Quantity: 1, OccurredAt: wk})
	p := streams.NewSignalProducer(streams.SignalProducerConfig{Brokers: brokers, Topic: topic})
	if err := p.Open(); err != nil {
		t.Fatal(err)
	}
	if err := p.Publish(t.Context(), sigs); err != nil {
		t.Fatal(err)
	}
	_ = p.Close(t.Context())
	// Redelivery (the same signals again) never double counts.
	p2 := streams.NewSignalProducer(streams.SignalProducerConfig{Brokers: brokers, Topic: topic})
	if err := p2.Open(); err != nil {
		t.Fatal(err)
	}
	if err := p2.Publish(t.Context(), sigs[:500]); err != nil {
		t.Fatal(err)
	}
	_ = p2.Close(t.Context())
	v := s.Key("VIEWER")
	eventually(t, 60*time.Second, func() error {
		for key, total := range want {
			sku, loc := key[:1], key[2:]
			h := s.Do("GET", "/api/demand/history?skuId="+sku+"&locationId="+loc, v, nil).Must(t, 200)
			if got := num(h, "totalActualDemand"); got != total {
				return fmt.Errorf("%s: %v, want %v", key, got, total)
			}
		}
		return nil
	})
	var dead []streams.Message
	eventually(t, 30*time.Second, func() error {
		dead = dead[:0]
		for part := 0; part < 4; part++ {
			ms, err := streams.ReadMessages(context.Background(), brokers, topic+".dlq", part, 10, 500*time.Millisecond)
			if err != nil {
				return err
			}
			dead = append(dead, ms...)
		}
		if len(dead) != 2 {
			return fmt.Errorf("%d dead letters", len(dead))
		}
		return nil
	})
	reasons := map[string]bool{}
	for _, m := range dead {
		reasons[m.Headers["dlq-reason"]] = true
	}
	if !reasons[supplyplan.RejectUnknownTenant] || !reasons[supplyplan.RejectUnknownProduct] {
		t.Fatalf("dead-letter reasons = %v", reasons)
	}
}
