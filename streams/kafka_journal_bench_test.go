package streams

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// BenchmarkKafkaJournalAppend measures acknowledged appends/s of the Kafka journal on kfake (in
// the same process): 8 partitions, 64 streams each appending 256-byte entries without waiting
// for the previous acknowledgement (as actors do), every append acknowledged only after its
// transaction committed. It reports appends/s, appends per transaction and process CPU per
// append (kfake included; steadier than the rate on a shared machine).
func BenchmarkKafkaJournalAppend(b *testing.B) {
	for _, cfg := range []struct{ partitions, streams int }{{1, 16}, {8, 64}} {
		b.Run(fmt.Sprintf("partitions=%d/streams=%d", cfg.partitions, cfg.streams), func(b *testing.B) {
			brokers := MustKafka(b, 1)
			j := MustKafkaJournal(b, brokers, cfg.partitions, "bench", allPartitions(cfg.partitions))
			payload := make([]byte, 256)
			b.ReportAllocs()
			s0 := j.Stats()
			c0 := cpuTime()
			start := time.Now()
			b.ResetTimer()
			var wg sync.WaitGroup
			var failed sync.Once
			per := (b.N + cfg.streams - 1) / cfg.streams
			for s := range cfg.streams {
				stream := fmt.Sprintf("tenant-bench%03d", s)
				wg.Add(per)
				go func() {
					for seq := uint64(1); seq <= uint64(per); seq++ {
						j.Append(stream, seq, payload, func(err error) {
							if err != nil {
								failed.Do(func() { b.Error(err) })
							}
							wg.Done()
						})
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			elapsed, cpu := time.Since(start), cpuTime()-c0
			s1 := j.Stats()
			n := float64(s1.Appends - s0.Appends)
			b.ReportMetric(n/elapsed.Seconds(), "appends/s")
			b.ReportMetric(n/float64(max(1, s1.Transactions-s0.Transactions)), "appends/txn")
			b.ReportMetric(float64(cpu.Microseconds())/n, "cpu-µs/append")
			_ = j.Close(context.Background())
		})
	}
}
