package streams

import (
	"context"
	"errors"
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
