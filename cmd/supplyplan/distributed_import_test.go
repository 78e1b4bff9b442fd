package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/supplyplan/supplyplan/streams"
)

// startDistNode opens an in-process `serve --mode distributed` node on brokers.
func startDistNode(t *testing.T, brokers, name string, partitions int) *distNode {
	t.Helper()
	n := &distNode{data: t.TempDir()}
	cfg := DefaultConfig()
	cfg.DataDir = n.data
	cfg.APIAddr = freeAddr(t)
	cfg.RegistryAddr, cfg.ToolsAddr, cfg.LoopCatalogAddr, cfg.LoopRuntimeAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.ConsoleAddr = ""
	cfg.RequestTimeout = 60 * time.Second
	cfg.Mode, cfg.KafkaBrokers, cfg.JournalPartitions, cfg.NodeID = "distributed", brokers, partitions, name
	cfg.ClickHouseAddr, cfg.ClickHouseDatabase = distClickHouse(t)
	n.m = NewMain(cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), io.Discard)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := n.m.Open(ctx); err != nil {
		_ = n.m.Close(ctx)
		t.Fatalf("open %s: %v", name, err)
	}
	n.url = "http://" + n.m.API.Addr()
	t.Cleanup(func() { n.stop(t) })
	return n
}

// An import chunk of 5,000 orders is a journal entry of several MB, over the broker's default
// 1 MiB message limit (kfake's default here): in distributed mode it is journaled as ordered
// part records, and a new node restoring the organization from the journal reads every order.
func TestDistributedOrderImportLargeEntries(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "supplyplan.demand-signals"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers := strings.Join(c.ListenAddrs(), ",")
	a := startDistNode(t, brokers, "a", 4)
	eventually(t, 60*time.Second, func() error {
		_, err := os.Stat(filepath.Join(a.data, "credentials.json"))
		return err
	})
	cr := mustReadCreds(t, a.data)
	org := cr.Organization.ID
	imp := map[string]string{"x-api-key": cr.Keys["import"]}
	admin := map[string]string{"Authorization": bearerOf(cr.Keys["ADMIN"])}
	served := func(n *distNode) func() error {
		return func() error {
			if _, local, restoring, err := n.m.Owners.Owner(org); err != nil || !local || restoring {
				return fmt.Errorf("local %v restoring %v err %v", local, restoring, err)
			}
			return nil
		}
	}
	eventually(t, 60*time.Second, served(a))
	importJob := func(n *distNode, kind string, body []byte) map[string]any {
		t.Helper()
		var acc map[string]any
		eventually(t, 30*time.Second, func() error { // the key is known once the replica read it
			r := doRequest(t, n.url, "POST", "/api/import/"+kind, imp, body)
			if r.Status != 202 {
				return fmt.Errorf("import %s: %d %.300s", kind, r.Status, r.Body)
			}
			acc = r.Must(t, 202)
			return nil
		})
		var job map[string]any
		eventually(t, 120*time.Second, func() error {
			job = doRequest(t, n.url, "GET", "/api/import/status/"+str(acc, "jobId"), imp, nil).Must(t, 200)
			if st := str(job, "status"); st != "COMPLETED" && st != "FAILED" {
				return fmt.Errorf("job is %s", st)
			}
			return nil
		})
		return job
	}
	var b bytes.Buffer
	b.WriteString(`{"products":[`)
	for i := range 50 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"externalId":"P%02d","name":"Product %02d"}`, i, i)
	}
	b.WriteString(`]}`)
	checkCounts(t, importJob(a, "catalog", b.Bytes()), 50, 0)
	b.Reset()
	b.WriteString(`{"levels":[`)
	for i := range 50 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"skuId":"P%02d","locationId":"L%d","quantityOnHand":1000000}`, i, i%4)
	}
	b.WriteString(`]}`)
	checkCounts(t, importJob(a, "inventory", b.Bytes()), 50, 0)

	const orders = 5200
	b.Reset()
	b.WriteString(`{"orders":[`)
	for i := range orders {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"externalOrderId":"SO-%05d","channel":"web","lines":[{"skuId":"P%02d","quantity":%d,"locationId":"L%d"},{"skuId":"P%02d","quantity":1,"locationId":"L%d"}]}`,
			i, i%50, 1+i%5, (i%50)%4, (i+1)%50, ((i+1)%50)%4)
	}
	b.WriteString(`]}`)
	checkCounts(t, importJob(a, "orders", b.Bytes()), orders, 0)
	total := func(n *distNode) float64 {
		return num(doRequest(t, n.url, "GET", "/api/orders?limit=1", admin, nil).Must(t, 200), "total")
	}
	if got := total(a); got != orders {
		t.Fatalf("%v orders on the node that imported them, want %d", got, orders)
	}

	// The journal holds split entries: parts under the limit, the largest entry over it.
	parts, largest := journalParts(t, c.ListenAddrs())
	if parts == 0 || largest <= 1<<20 {
		t.Fatalf("%d part records, largest entry %d bytes: the import did not need splitting", parts, largest)
	}
	t.Logf("%d part records, largest entry %.1f MB", parts, float64(largest)/1e6)

	// Another node restores the organization from the journal once this one leaves.
	bn := startDistNode(t, brokers, "b", 4)
	a.stop(t)
	eventually(t, 60*time.Second, served(bn))
	if got := total(bn); got != orders {
		t.Fatalf("%v orders after the restore on another node, want %d", got, orders)
	}
	last := doRequest(t, bn.url, "GET", fmt.Sprintf("/api/orders/SO-%05d", orders-1), admin, nil).Must(t, 200)
	if o, _ := last["order"].(map[string]any); o == nil || len(list(o, "lines")) != 2 {
		t.Fatalf("last order after the restore: %v", last)
	}
}

// journalParts reads the journal topic and returns the number of part records and the size of
// the largest entry (whole or rebuilt from its parts).
func journalParts(t *testing.T, brokers []string) (parts, largest int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(streams.DefaultJournalTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	sizes := map[string]int{} // stream/seq -> bytes
	for ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			var seq string
			for _, h := range r.Headers {
				switch h.Key {
				case "part":
					parts++
				case "seq":
					seq = string(h.Value)
				}
			}
			k := string(r.Key) + "/" + seq
			sizes[k] += len(r.Value)
			largest = max(largest, sizes[k])
		})
	}
	return parts, largest
}
