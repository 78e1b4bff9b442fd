package streams

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// TestPartitionReader reads a partition from FirstOffset, survives its connection breaking
// mid-fetch (every offset exactly once, in order), reports the end of a batch window, and stops
// a read blocked in a long poll when its context ends.
func TestPartitionReader(t *testing.T) {
	const topic, n = "signals-fetch", 3000
	brokers := MustKafka(t, 1, topic)
	MustProduce(t, brokers, topic, makeSignals("fetch", n, 2))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := newPartitionReader(ctx, brokers, topic, 0, kafka.FirstOffset, 64<<10, 250*time.Millisecond, testLogger())
	defer r.Close()

	next := int64(0)
	read := func(until time.Time) (kafka.Message, error) {
		t.Helper()
		m, err := r.next(until)
		if err == nil {
			if m.Offset != next {
				t.Fatalf("offset %d, want %d", m.Offset, next)
			}
			next++
		}
		return m, err
	}
	r.refresh()
	for next < n/3 {
		if _, err := read(time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	// The connection breaks in the middle of a fetch response: the reader dials again and goes on
	// from the next offset.
	_ = r.conn.Close()
	for next < 2*n/3 {
		if _, err := read(time.Time{}); err != nil {
			t.Fatalf("after a broken connection at offset %d: %v", next, err)
		}
	}
	// A window already over ends at the end of the fetched messages, without fetching.
	r.batch.Close()
	r.batch = nil
	if _, err := read(time.Now().Add(-time.Millisecond)); !errors.Is(err, errWindowOver) {
		t.Fatalf("read after the window: %v, want errWindowOver", err)
	}
	for next < n {
		m, err := read(time.Now().Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if next == n && !caughtUp(m) {
			t.Errorf("last message (offset %d) not caught up: high watermark %d", m.Offset, m.HighWaterMark)
		}
	}
	// Caught up: a window ends after at most its length.
	start := time.Now()
	if _, err := read(time.Now().Add(50 * time.Millisecond)); !errors.Is(err, errWindowOver) {
		t.Fatalf("read past the end within a window: %v, want errWindowOver", err)
	}
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Errorf("a 50ms window took %v", d)
	}
	// A read waiting for new messages ends with its context.
	time.AfterFunc(100*time.Millisecond, cancel)
	start = time.Now()
	if _, err := read(time.Time{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("read after cancel: %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("cancel took %v to end a read", d)
	}
}
