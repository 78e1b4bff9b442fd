package streams

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
)

// Message is a Kafka message read back for inspection (dead letters, tests, tooling).
type Message struct {
	Partition int
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   map[string]string
}

// ReadMessages reads up to max messages of one partition from the start, returning what it read
// when no more arrive within idle.
func ReadMessages(ctx context.Context, brokers []string, topic string, partition, max int, idle time.Duration) ([]Message, error) {
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, Partition: partition, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	var out []Message
	for len(out) < max {
		rctx, cancel := context.WithTimeout(ctx, idle)
		m, err := r.ReadMessage(rctx)
		cancel()
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				return out, nil
			}
			return out, err
		}
		h := make(map[string]string, len(m.Headers))
		for _, x := range m.Headers {
			h[x.Key] = string(x.Value)
		}
		out = append(out, Message{Partition: m.Partition, Offset: m.Offset, Key: m.Key, Value: m.Value, Headers: h})
	}
	return out, nil
}

// RawConsume reads n messages of a topic with one plain kafka.Reader per partition and no
// processing, and returns the time taken: the baseline the benchmark harness compares the signal
// pipeline with.
func RawConsume(ctx context.Context, brokers []string, topic string, partitions, n int) (time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	total := 0
	var end time.Duration
	start := time.Now()
	var wg sync.WaitGroup
	for p := 0; p < partitions; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, Partition: p, MinBytes: 1,
				MaxBytes: 4 << 20, MaxWait: 250 * time.Millisecond, QueueCapacity: 1000})
			defer r.Close()
			for {
				if _, err := r.FetchMessage(ctx); err != nil {
					return
				}
				mu.Lock()
				total++
				if total == n {
					end = time.Since(start)
					cancel()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if total < n {
		return 0, fmt.Errorf("read %d of %d messages", total, n)
	}
	return end, nil
}

// CommittedTotal sums the offsets a consumer group committed on the given partitions of a topic
// (messages consumed and durable, for a topic read from its start); -1 offsets count as zero.
func CommittedTotal(ctx context.Context, brokers []string, group, topic string, partitions int) (int64, error) {
	parts := make([]int, partitions)
	for i := range parts {
		parts[i] = i
	}
	cl := &kafka.Client{Addr: kafka.TCP(brokers...)}
	resp, err := cl.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
	if err != nil {
		return 0, fmt.Errorf("offset fetch: %w", err)
	}
	var total int64
	for _, p := range resp.Topics[topic] {
		if p.CommittedOffset > 0 {
			total += p.CommittedOffset
		}
	}
	return total, nil
}
