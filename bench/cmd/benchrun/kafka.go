package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/streams"
)

// benchKafka: demand signals from produce to durable through the service's consumer group, next to
// raw kafka-go consumption of the same topic, on an in-process Kafka-protocol broker (kfake).
func benchKafka(ctx context.Context, e *env) (section, error) {
	const n, partitions = 1_000_000, 8
	const topic, group = "supplyplan.demand-signals", "supplyplan-demand-signals"
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topic, topic+".dlq"),
		kfake.GroupMinSessionTimeout(time.Second))
	if err != nil {
		return section{}, err
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	svc, err := startService(e, "--kafka-brokers", strings.Join(brokers, ","))
	if err != nil {
		return section{}, err
	}
	defer svc.Stop()
	creds, err := readCreds(svc.Data)
	if err != nil {
		return section{}, err
	}
	key := creds.Keys["import"]
	const skus, locs = 40, 4
	if _, err := importAll(svc, key, "catalog", chunked("products", skus, skus, func(i int, b *bytes.Buffer) {
		fmt.Fprintf(b, `{"externalId":"S%02d"}`, i)
	})); err != nil {
		return section{}, err
	}
	if _, err := importAll(svc, key, "inventory", chunked("levels", locs, locs, func(i int, b *bytes.Buffer) {
		fmt.Fprintf(b, `{"skuId":"S00","locationId":"W%d"}`, i)
	})); err != nil {
		return section{}, err
	}
	org := creds.Organization.ID
	base := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	signals := make([]supplyplan.DemandSignal, n)
	for i := range signals {
		signals[i] = supplyplan.DemandSignal{SignalID: fmt.Sprintf("b-%08d", i), OrganizationID: org, SKU: fmt.Sprintf("S%02d", i%skus),
			Location: fmt.Sprintf("W%d", (i/skus)%locs), Channel: "POS", Quantity: 1, OccurredAt: base.Add(time.Duration(i%(70*24)) * time.Hour)}
	}
	// Give the consumer group time to join before the clock starts.
	time.Sleep(3 * time.Second)
	// Batches stay under the broker's 1 MiB record-batch limit.
	prod := streams.NewSignalProducer(streams.SignalProducerConfig{Brokers: brokers, Topic: topic, BatchSize: 2000})
	if err := prod.Open(); err != nil {
		return section{}, err
	}
	start := time.Now()
	var produced time.Duration
	perr := make(chan error, 1)
	go func() {
		for i := 0; i < n; i += 50000 {
			if err := prod.Publish(ctx, signals[i:min(i+50000, n)]); err != nil {
				perr <- err
				return
			}
		}
		produced = time.Since(start)
	}()
	for {
		select {
		case err := <-perr:
			return section{}, fmt.Errorf("produce: %.300s", err)
		default:
		}
		c, err := streams.CommittedTotal(ctx, brokers, group, topic, partitions)
		if err != nil {
			return section{}, err
		}
		if c >= n {
			break
		}
		if time.Since(start) > 5*time.Minute {
			return section{}, fmt.Errorf("only %d of %d signals durable after 5 minutes", c, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	e2e := time.Since(start)

	// Backlog: with the service stopped, n more signals wait in the topic; after a restart the
	// consumer works through them. Timed from the first commit that moves to the last (the group's
	// join is not counted), over the signals committed in between.
	svc.Stop()
	more := make([]supplyplan.DemandSignal, n)
	for i := range more {
		more[i] = signals[i]
		more[i].SignalID = fmt.Sprintf("c-%08d", i)
	}
	for i := 0; i < n; i += 50000 {
		if err := prod.Publish(ctx, more[i:min(i+50000, n)]); err != nil {
			return section{}, fmt.Errorf("produce backlog: %.300s", err)
		}
	}
	_ = prod.Close(ctx)
	svc, err = startServiceOn(e, svc.Data, "--kafka-brokers", strings.Join(brokers, ","))
	if err != nil {
		return section{}, err
	}
	defer svc.Stop()
	var first int64
	var t0 time.Time
	for {
		c, err := streams.CommittedTotal(ctx, brokers, group, topic, partitions)
		if err != nil {
			return section{}, err
		}
		if t0.IsZero() && c > n {
			first, t0 = c, time.Now()
			profile("kafka-backlog")
		}
		if c >= 2*n {
			break
		}
		if time.Since(start) > 10*time.Minute {
			return section{}, fmt.Errorf("backlog: only %d of %d signals durable", c-n, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	backlog := time.Since(t0)
	backlogN := 2*int64(n) - first
	raw, err := streams.RawConsume(ctx, brokers, topic, partitions, n)
	if err != nil {
		return section{}, err
	}
	// The totals are right: every signal counted once.
	st, body, err := call("GET", svc.URL+"/api/demand/history?skuId=S00&locationId=W0", map[string]string{"Authorization": "Bearer " + creds.Keys["VIEWER"]}, nil)
	if err != nil || st != 200 {
		return section{}, fmt.Errorf("history: %d %v", st, err)
	}
	e2eRate, rawRate := n/e2e.Seconds(), n/raw.Seconds()
	backlogRate := float64(backlogN) / backlog.Seconds()
	var b strings.Builder
	fmt.Fprintf(&b, "%d signals (%d SKUs x %d locations, one tenant) on %d partitions of an in-process kfake broker; the service consumes them as its consumer group, applies them through the tenant actor to the embedded demand store (fsync), and commits offsets only after that. End to end is timed from the first produce to the group's committed offsets covering every signal (the producer, in this process, ran for %.2f s). Raw is one plain kafka-go reader per partition reading the same topic without processing.\n\n",
		n, skus, locs, partitions, produced.Seconds())
	b.WriteString("| path | seconds | signals/s |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| live: produce -> durable through the service | %.2f | %.0f |\n", e2e.Seconds(), e2eRate)
	fmt.Fprintf(&b, "| backlog: consume -> durable through the service (%d signals after restart) | %.2f | %.0f |\n", backlogN, backlog.Seconds(), backlogRate)
	fmt.Fprintf(&b, "| raw kafka-go consumption of the same topic (baseline) | %.2f | %.0f |\n\n", raw.Seconds(), rawRate)
	fmt.Fprintf(&b, "- live end to end: %.0f signals/s (target at least 100,000): **%s**\n", e2eRate, verdict(e2eRate >= 100000))
	fmt.Fprintf(&b, "- consumption: the backlog drains at %.0f%% of raw kafka-go consumption (target at least 40%%): **%s**; live end to end is %.0f%% of raw\n",
		100*backlogRate/rawRate, verdict(backlogRate >= 0.4*rawRate), 100*e2eRate/rawRate)
	fmt.Fprintf(&b, "- check: history of S00 at W0 = %s\n", strings.TrimSpace(between(string(body), `"totalActualDemand":`, "}")))
	return section{Title: "Data plane: Kafka demand signals", Command: "go run ./bench/cmd/benchrun -only kafka", Body: b.String()}, nil
}

func between(s, a, b string) string {
	i := strings.Index(s, a)
	if i < 0 {
		return ""
	}
	s = s[i+len(a):]
	if j := strings.IndexAny(s, b+","); j >= 0 {
		return s[:j]
	}
	return s
}
