package actors

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/streams"
)

// kafkaJournal opens a Kafka journal of one partition on brokers and acquires it, as a node that
// owns the partition would.
func kafkaJournal(t *testing.T, brokers []string, node string) *streams.KafkaJournal {
	t.Helper()
	j := streams.NewKafkaJournal(streams.KafkaJournalConfig{Brokers: brokers, Partitions: 1, Node: node,
		TxnPrefix: "actors-test", TxnTimeout: 10 * time.Second})
	if err := j.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = j.Close(context.Background()) })
	if _, err := j.Acquire(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	return j
}

// The durable actor runs unchanged on the Kafka journal: acknowledged writes survive a move to
// another node (snapshot + tail), and the node that lost the partition can no longer write.
func TestDurableOnKafkaJournal(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	a := kafkaJournal(t, brokers, "a")
	e, pid := startNotes(t, a, 4)
	ctx := ctxFor(t, 30*time.Second)
	for i := range 10 {
		if _, err := ask(ctx, bareEngine{e}, pid, putNote(fmt.Sprint(i), fmt.Sprint("note ", i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ask(ctx, bareEngine{e}, pid, func(*notes) (struct{}, []supplyplan.Record, error) {
		return struct{}{}, []supplyplan.Record{supplyplan.Del(kindNote, "4")}, nil
	}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	e.Send(pid, drainMsg{done: done}) // the final snapshot
	<-done

	// Node b takes the partition: a is fenced.
	b := kafkaJournal(t, brokers, "b")
	if _, err := ask(ctx, bareEngine{e}, pid, putNote("zombie", "written after losing the partition")); supplyplan.ErrorCode(err) != supplyplan.EUNAVAILABLE {
		t.Fatalf("write on the fenced node: %v, want %s", err, supplyplan.EUNAVAILABLE)
	}
	e2, pid2 := startNotes(t, b, 4)
	m, err := ask(ctx, bareEngine{e2}, pid2, readNotes)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 9 || m["9"] != "note 9" || m["4"] != "" || m["zombie"] != "" {
		t.Fatalf("state rebuilt on the new owner: %v", m)
	}
	if _, err := ask(ctx, bareEngine{e2}, pid2, putNote("10", "note 10")); err != nil {
		t.Fatalf("write on the new owner: %v", err)
	}
}
