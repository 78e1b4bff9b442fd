package streams

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// BenchmarkPartitionReader reads one partition of signals with the partition reader, its
// connection read through fetchReadBuffer ("buffered") or through kafka-go's own 4 KiB reader
// only ("kafka-go"). The in-process broker's work is in the figures too.
func BenchmarkPartitionReader(b *testing.B) {
	const topic, n = "signals-fetch-bench", 200_000
	brokers := MustKafka(b, 1, topic)
	MustProduce(b, brokers, topic, makeSignals("fb", n, 1))
	for _, bc := range []struct {
		name   string
		dialer *kafka.Dialer
	}{{"buffered", fetchDialer}, {"kafka-go", kafka.DefaultDialer}} {
		b.Run(bc.name, func(b *testing.B) {
			saved := fetchDialer
			fetchDialer = bc.dialer
			defer func() { fetchDialer = saved }()
			for i := 0; i < b.N; {
				r := newPartitionReader(context.Background(), brokers, topic, 0, kafka.FirstOffset, 4<<20, 250*time.Millisecond, testLogger())
				r.refresh()
				for j := 0; j < n && i < b.N; j, i = j+1, i+1 {
					if _, err := r.next(time.Time{}); err != nil {
						b.Fatal(err)
					}
				}
				r.Close()
			}
		})
	}
}
