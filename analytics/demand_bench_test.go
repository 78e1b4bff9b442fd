package analytics_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/analytics"
	"github.com/supplyplan/supplyplan/analytics/storetest"
)

// Import benchmarks: one iteration imports 1,000,000 rows (6,411 series x 156 weeks) in batches of
// 10,000 rows, as the demand-history import does. rows/s is the figure to read.
//
//	go test ./analytics -run '^$' -bench 'UpsertWeeks' -benchtime 3x
const (
	benchRows  = 1_000_000
	benchBatch = 10_000
	benchWeeks = 156
)

var benchData = sync.OnceValue(func() [][]supplyplan.DemandRow {
	rows := make([]supplyplan.DemandRow, 0, benchRows)
	for i := 0; len(rows) < benchRows; i++ {
		for w := 1; w <= benchWeeks && len(rows) < benchRows; w++ {
			v := float64((i*31 + w*7) % 500)
			rows = append(rows, supplyplan.DemandRow{SKU: fmt.Sprintf("SKU-%06d", i), Location: fmt.Sprintf("DC-%02d", i%20),
				Channel: []string{"WEB", "STORE", "WHOLESALE"}[i%3], Week: storetest.Week(w), Actual: v, Forecasted: v * 1.1,
				Stockout: (i+w)%97 == 0})
		}
	}
	var batches [][]supplyplan.DemandRow
	for i := 0; i < len(rows); i += benchBatch {
		batches = append(batches, rows[i:min(i+benchBatch, len(rows))])
	}
	return batches
})

// runImport imports every batch with the given number of concurrent writers and reports rows/s.
func runImport(b *testing.B, writers int, upsert func(ctx context.Context, rows []supplyplan.DemandRow) error) {
	batches := benchData()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		work := make(chan []supplyplan.DemandRow, len(batches))
		for _, batch := range batches {
			work <- batch
		}
		close(work)
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for batch := range work {
					if err := upsert(ctx, batch); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)*benchRows/elapsed.Seconds(), "rows/s")
}

func BenchmarkEmbeddedUpsertWeeks(b *testing.B) {
	for _, writers := range []int{1, 4} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			s := MustOpenEmbedded(b, analytics.EmbeddedConfig{Dir: filepath.Join(b.TempDir(), "demand")})
			runImport(b, writers, func(ctx context.Context, rows []supplyplan.DemandRow) error {
				return s.UpsertWeeks(ctx, "org", rows)
			})
		})
	}
}

// weekMajorData is the benchrun import section's rows: 5,000 products x 4 locations x 50 weeks, one
// week of every series after the other, in batches of 50,000 rows: each batch brings every series
// two or three weeks, so the series grow batch by batch.
var weekMajorData = sync.OnceValue(func() [][]supplyplan.DemandRow {
	const products, locations, weeks, batch = 5000, 4, 50, 50_000
	rows := make([]supplyplan.DemandRow, 0, products*locations*weeks)
	for i := range products * locations * weeks {
		p, l, w := i%products, (i/products)%locations, i/(products*locations)
		v := float64(10 + i%37)
		rows = append(rows, supplyplan.DemandRow{SKU: fmt.Sprintf("P%05d", p), Location: fmt.Sprintf("L%d", l), Channel: supplyplan.ChannelAll,
			Week: storetest.Week(w + 1), Actual: v, Forecasted: v})
	}
	var batches [][]supplyplan.DemandRow
	for i := 0; i < len(rows); i += batch {
		batches = append(batches, rows[i:min(i+batch, len(rows))])
	}
	return batches
})

// BenchmarkEmbeddedUpsertWeekMajor imports 1,000,000 rows in week order (weekMajorData), as the
// benchrun import section does: the series grow batch by batch.
func BenchmarkEmbeddedUpsertWeekMajor(b *testing.B) {
	batches := weekMajorData()
	ctx := context.Background()
	b.ReportAllocs()
	var rows int
	for b.Loop() {
		b.StopTimer()
		s := MustOpenEmbedded(b, analytics.EmbeddedConfig{Dir: filepath.Join(b.TempDir(), "demand")})
		b.StartTimer()
		for _, batch := range batches {
			if err := s.UpsertWeeks(ctx, "org", batch); err != nil {
				b.Fatal(err)
			}
			rows += len(batch)
		}
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkEmbeddedReadAll reads every series of a tenant of 50,000 series x 156 weeks, as the
// forecast engine does: Keys, then SeriesBatch over all of them.
func BenchmarkEmbeddedReadAll(b *testing.B) {
	const series = 50_000
	s := MustOpenEmbedded(b, analytics.EmbeddedConfig{Dir: filepath.Join(b.TempDir(), "demand")})
	ctx := context.Background()
	rows := make([]supplyplan.DemandRow, 0, benchBatch)
	for i := 0; i < series; i++ {
		for w := 1; w <= benchWeeks; w++ {
			rows = append(rows, supplyplan.DemandRow{SKU: fmt.Sprintf("SKU-%06d", i), Location: "DC", Channel: "WEB",
				Week: storetest.Week(w), Actual: float64(w), Forecasted: float64(w)})
			if len(rows) == cap(rows) {
				if err := s.UpsertWeeks(ctx, "org", rows); err != nil {
					b.Fatal(err)
				}
				rows = rows[:0]
			}
		}
	}
	if err := s.UpsertWeeks(ctx, "org", rows); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		keys, err := s.Keys(ctx, "org")
		if err != nil {
			b.Fatal(err)
		}
		all, err := s.SeriesBatch(ctx, "org", keys, time.Time{}, time.Time{})
		if err != nil {
			b.Fatal(err)
		}
		if len(all) != series {
			b.Fatalf("%d series, want %d", len(all), series)
		}
	}
	b.ReportMetric(float64(b.N)*series*benchWeeks/b.Elapsed().Seconds(), "weeks/s")
}

// BenchmarkClickHouseUpsertWeeks measures, in one run, the store's UpsertWeeks against raw
// clickhouse-go batch inserts of the same rows into a plain MergeTree table: row by row
// (batch.Append) and column by column (batch.Column(i).Append), the driver's fastest path. Every
// execution writes into tables of its own (created empty, dropped after), so that one variant's
// background merges weigh on the others as little as possible. The target is
// store >= 50% of raw.
func BenchmarkClickHouseUpsertWeeks(b *testing.B) {
	const insert = " (org, sku, location, channel, week, actual, forecasted, stockout)"
	rawTable := func(b *testing.B) (driver.Conn, string) {
		cfg := clickhouseStoreConfig(b)
		conn := MustRawConn(b, cfg.Addr)
		ctx := context.Background()
		raw := testDatabase + "." + cfg.TablePrefix + "raw_demand"
		if err := conn.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+testDatabase); err != nil {
			b.Fatal(err)
		}
		if err := conn.Exec(ctx, "CREATE TABLE "+raw+` (org String, sku String, location String, channel String,
			week Date, actual Float64, forecasted Float64, stockout UInt8) ENGINE = MergeTree ORDER BY (org, sku, location, channel, week)`); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = conn.Exec(context.Background(), "DROP TABLE IF EXISTS "+raw) })
		return conn, raw
	}
	b.Run("raw-rows", func(b *testing.B) {
		conn, raw := rawTable(b)
		runImport(b, 1, func(ctx context.Context, rows []supplyplan.DemandRow) error {
			batch, err := conn.PrepareBatch(ctx, "INSERT INTO "+raw+insert)
			if err != nil {
				return err
			}
			defer func() { _ = batch.Abort() }()
			for i := range rows {
				r := &rows[i]
				var so uint8
				if r.Stockout {
					so = 1
				}
				if err := batch.Append("org", r.SKU, r.Location, r.Channel, r.Week, r.Actual, r.Forecasted, so); err != nil {
					return err
				}
			}
			return batch.Send()
		})
	})
	b.Run("raw-columns", func(b *testing.B) {
		conn, raw := rawTable(b)
		runImport(b, 1, func(ctx context.Context, rows []supplyplan.DemandRow) error {
			n := len(rows)
			org, sku, loc, ch := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
			week := make([]time.Time, n)
			actual, forecast, so := make([]float64, n), make([]float64, n), make([]uint8, n)
			for i := range rows {
				r := &rows[i]
				org[i], sku[i], loc[i], ch[i], week[i], actual[i], forecast[i] = "org", r.SKU, r.Location, r.Channel, r.Week, r.Actual, r.Forecasted
				if r.Stockout {
					so[i] = 1
				}
			}
			batch, err := conn.PrepareBatch(ctx, "INSERT INTO "+raw+insert)
			if err != nil {
				return err
			}
			defer func() { _ = batch.Abort() }()
			for i, col := range []any{org, sku, loc, ch, week, actual, forecast, so} {
				if err := batch.Column(i).Append(col); err != nil {
					return err
				}
			}
			return batch.Send()
		})
	})
	for _, writers := range []int{1, 4} {
		b.Run(fmt.Sprintf("store-writers=%d", writers), func(b *testing.B) {
			s := MustOpenClickHouse(b, clickhouseStoreConfig(b))
			runImport(b, writers, func(ctx context.Context, rows []supplyplan.DemandRow) error {
				return s.UpsertWeeks(ctx, "org", rows)
			})
		})
	}
}

// BenchmarkClickHouseReadAll is BenchmarkEmbeddedReadAll against ClickHouse (Keys, then one
// SeriesBatch over every key: FINAL reads, grouping in SQL). Loading its 7.8 million rows takes a
// while; it is not part of the import comparison.
func BenchmarkClickHouseReadAll(b *testing.B) {
	const series = 50_000
	s := MustOpenClickHouse(b, clickhouseStoreConfig(b))
	ctx := context.Background()
	rows := make([]supplyplan.DemandRow, 0, 100_000)
	for i := 0; i < series; i++ {
		for w := 1; w <= benchWeeks; w++ {
			rows = append(rows, supplyplan.DemandRow{SKU: fmt.Sprintf("SKU-%06d", i), Location: "DC", Channel: "WEB",
				Week: storetest.Week(w), Actual: float64(w), Forecasted: float64(w)})
			if len(rows) == cap(rows) {
				if err := s.UpsertWeeks(ctx, "org", rows); err != nil {
					b.Fatal(err)
				}
				rows = rows[:0]
			}
		}
	}
	if err := s.UpsertWeeks(ctx, "org", rows); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		keys, err := s.Keys(ctx, "org")
		if err != nil {
			b.Fatal(err)
		}
		all, err := s.SeriesBatch(ctx, "org", keys, time.Time{}, time.Time{})
		if err != nil {
			b.Fatal(err)
		}
		if len(all) != series {
			b.Fatalf("%d series, want %d", len(all), series)
		}
	}
	b.ReportMetric(float64(b.N)*series*benchWeeks/b.Elapsed().Seconds(), "weeks/s")
}

// BenchmarkEmbeddedAddSignals sends one signal per call from many goroutines (the live signal
// path): every call waits for its fsync, so throughput comes from group commit.
func BenchmarkEmbeddedAddSignals(b *testing.B) {
	s := MustOpenEmbedded(b, analytics.EmbeddedConfig{Dir: filepath.Join(b.TempDir(), "demand")})
	var seq atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(32) // 64 callers on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			n := seq.Add(1)
			sig := supplyplan.DemandSignal{SignalID: fmt.Sprint("sig-", n), SKU: fmt.Sprintf("SKU-%04d", n%5000), Location: "DC",
				Channel: "WEB", OccurredAt: storetest.Week(1 + int(n%156)), Quantity: 1}
			if _, err := s.AddSignals(ctx, "org", []supplyplan.DemandSignal{sig}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "signals/s")
}
