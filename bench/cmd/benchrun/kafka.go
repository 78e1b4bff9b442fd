package main

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/streams"
)

// benchKafka: demand signals from produce to durable through the service's consumer group, next to
// raw kafka-go consumption of the same topic, on an in-process Kafka-protocol broker (kfake).
func benchKafka(ctx context.Context, e *env) (section, error) {
	const n, partitions, rounds = 1_000_000, 8, 3
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
	_ = prod.Close(ctx)

	// Backlog, in three rounds interleaved with raw consumption (service, raw, service, raw, ...):
	// with the service stopped, n more signals wait in the topic; after a restart the consumer works
	// through them. Timed from the first commit that moves to the last (the group's join is not
	// counted), over the signals committed in between. Then, with the service stopped again, plain
	// kafka-go readers consume n messages of the same topic.
	type round struct {
		n          int64
		drain, raw time.Duration
	}
	var rs []round
	for r := range rounds {
		svc.Stop()
		more := make([]supplyplan.DemandSignal, n)
		for i := range more {
			more[i] = signals[i]
			more[i].SignalID = fmt.Sprintf("r%d-%08d", r, i)
		}
		bp := streams.NewSignalProducer(streams.SignalProducerConfig{Brokers: brokers, Topic: topic, BatchSize: 2000})
		if err := bp.Open(); err != nil {
			return section{}, err
		}
		for i := 0; i < n; i += 50000 {
			if err := bp.Publish(ctx, more[i:min(i+50000, n)]); err != nil {
				return section{}, fmt.Errorf("produce backlog: %.300s", err)
			}
		}
		_ = bp.Close(ctx)
		// This process holds the broker: a collection of its heap (the topic's records, the signals)
		// landing in a timed phase costs the broker CPU that either side's figure would carry. Each
		// timed phase starts on a freshly collected heap.
		more = nil
		runtime.GC()
		base := int64(r+1) * n
		svc, err = startServiceOn(e, svc.Data, "--kafka-brokers", strings.Join(brokers, ","))
		if err != nil {
			return section{}, err
		}
		defer svc.Stop()
		var first int64
		var t0 time.Time
		var m *cpuMeter
		waitFrom := time.Now()
		for {
			c, err := streams.CommittedTotal(ctx, brokers, group, topic, partitions)
			if err != nil {
				return section{}, err
			}
			if t0.IsZero() && c > base {
				first, t0 = c, time.Now()
				m = meterCPU("kafka backlog", svc)
				profile(fmt.Sprintf("kafka-backlog-%d", r+1))
			}
			if c >= base+n {
				break
			}
			if time.Since(waitFrom) > 5*time.Minute {
				return section{}, fmt.Errorf("backlog round %d: only %d of %d signals durable", r+1, c-base, n)
			}
			time.Sleep(5 * time.Millisecond)
		}
		drain := time.Since(t0)
		m.done()
		svc.Stop()
		runtime.GC()
		m = meterCPU("kafka raw", nil)
		raw, err := streams.RawConsume(ctx, brokers, topic, partitions, n)
		m.done()
		if err != nil {
			return section{}, err
		}
		rs = append(rs, round{n: base + n - first, drain: drain, raw: raw})
	}
	svc, err = startServiceOn(e, svc.Data, "--kafka-brokers", strings.Join(brokers, ","))
	if err != nil {
		return section{}, err
	}
	defer svc.Stop()
	// The totals are right: every signal counted once.
	st, body, err := call("GET", svc.URL+"/api/demand/history?skuId=S00&locationId=W0", map[string]string{"Authorization": "Bearer " + creds.Keys["VIEWER"]}, nil)
	if err != nil || st != 200 {
		return section{}, fmt.Errorf("history: %d %v", st, err)
	}
	e2eRate := n / e2e.Seconds()
	ratios := make([]float64, len(rs))
	var rawRates []float64
	var b strings.Builder
	fmt.Fprintf(&b, "%d signals (%d SKUs x %d locations, one tenant) on %d partitions of an in-process kfake broker; the service consumes them as its consumer group, resolves them against the tenant's state, writes them to the embedded demand store (fsync), and commits offsets only after that. End to end is timed from the first produce to the group's committed offsets covering every signal (the producer, in this process, ran for %.2f s). The backlog (%d more signals produced while the service is stopped, drained after its restart) runs in %d rounds interleaved with raw consumption (service, raw, service, raw, ...): raw is one plain kafka-go reader per partition reading %d messages of the same topic without processing, with the service stopped. The ratio is the median of the rounds' ratios.\n\n",
		n, skus, locs, partitions, produced.Seconds(), n, rounds, n)
	b.WriteString("| path | seconds | signals/s |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| live: produce -> durable through the service | %.2f | %.0f |\n", e2e.Seconds(), e2eRate)
	for i, r := range rs {
		drainRate, rawRate := float64(r.n)/r.drain.Seconds(), float64(n)/r.raw.Seconds()
		ratios[i] = drainRate / rawRate
		rawRates = append(rawRates, rawRate)
		fmt.Fprintf(&b, "| round %d: backlog: consume -> durable through the service (%d signals after restart) | %.2f | %.0f |\n", i+1, r.n, r.drain.Seconds(), drainRate)
		fmt.Fprintf(&b, "| round %d: raw kafka-go consumption of the same topic (baseline) | %.2f | %.0f |\n", i+1, r.raw.Seconds(), rawRate)
	}
	med := median(ratios)
	rawMed := median(rawRates)
	fmt.Fprintf(&b, "\n- live end to end: %.0f signals/s (target at least 100,000): **%s**; %.0f%% of the median raw consumption\n", e2eRate, verdict(e2eRate >= 100000), 100*e2eRate/rawMed)
	fmt.Fprintf(&b, "- consumption: the backlog drains at %s of raw kafka-go consumption in the three rounds, median %.0f%% (target at least 60%%): **%s**\n",
		percents(ratios), 100*med, verdict(med >= 0.6))
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
