package analytics_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/analytics"
	"github.com/supplyplan/supplyplan/analytics/storetest"
	"github.com/supplyplan/supplyplan/internal/testdeps"
	"github.com/supplyplan/supplyplan/internal/wait"
)

// The ClickHouse tests need a real server: `bash scripts/clickhouse.sh start` (make test does it)
// runs one on 127.0.0.1:19000. SUPPLYPLAN_TEST_CLICKHOUSE_ADDR points elsewhere. Without a server
// the tests fail when CI is set and skip otherwise.
const testDatabase = "supplyplan_test"

func clickhouseAddr(tb testing.TB) string {
	tb.Helper()
	addr := testdeps.ClickHouse(tb)
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{addr}, DialTimeout: 2 * time.Second})
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = conn.Ping(ctx)
		cancel()
		_ = conn.Close()
	}
	if err != nil {
		testdeps.Missing(tb, fmt.Sprintf("ClickHouse at %s does not answer: %v", addr, err), "bash scripts/clickhouse.sh start")
	}
	return addr
}

// MustRawConn returns a plain clickhouse-go connection closed in Cleanup.
func MustRawConn(tb testing.TB, addr string) driver.Conn {
	tb.Helper()
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{addr},
		Compression: &clickhouse.Compression{Method: clickhouse.CompressionLZ4}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = conn.Close() })
	return conn
}

// uniquePrefix returns a table prefix of its own for one test.
func uniquePrefix(tb testing.TB) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatal(err)
	}
	return "t" + hex.EncodeToString(b[:]) + "_"
}

// clickhouseStoreConfig prepares tables of their own for one test and drops them in Cleanup.
func clickhouseStoreConfig(tb testing.TB) analytics.ClickHouseConfig {
	tb.Helper()
	addr := clickhouseAddr(tb)
	cfg := analytics.ClickHouseConfig{Addr: addr, Database: testDatabase, TablePrefix: uniquePrefix(tb)}
	conn := MustRawConn(tb, addr)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, table := range []string{"demand_weeks", "demand_signals"} {
			if err := conn.Exec(ctx, "DROP TABLE IF EXISTS "+testDatabase+"."+cfg.TablePrefix+table); err != nil {
				tb.Errorf("drop test table: %v", err)
			}
		}
	})
	return cfg
}

// MustOpenClickHouse opens a ClickHouse store and closes it in Cleanup.
func MustOpenClickHouse(tb testing.TB, cfg analytics.ClickHouseConfig) *analytics.ClickHouseStore {
	tb.Helper()
	s := analytics.NewClickHouseStore(cfg)
	if err := s.Open(); err != nil {
		tb.Fatalf("open clickhouse store: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

func TestClickHouseStore(t *testing.T) {
	clickhouseAddr(t)
	storetest.Run(t, func(t *testing.T) func() supplyplan.DemandStore {
		cfg := clickhouseStoreConfig(t)
		// Every open is a new store instance (a new connection pool) on the same tables.
		return func() supplyplan.DemandStore { return MustOpenClickHouse(t, cfg) }
	})
}

// Queries must be right before any background merge: stop merges on the tables, write the same
// week three times and the same signal twice (bypassing the store's id check, as two racing
// writers could), and read.
func TestClickHouseCorrectWithoutMerges(t *testing.T) {
	cfg := clickhouseStoreConfig(t)
	s := MustOpenClickHouse(t, cfg)
	conn := MustRawConn(t, cfg.Addr)
	ctx := context.Background()
	weeks, signals := testDatabase+"."+cfg.TablePrefix+"demand_weeks", testDatabase+"."+cfg.TablePrefix+"demand_signals"
	for _, table := range []string{weeks, signals} {
		if err := conn.Exec(ctx, "SYSTEM STOP MERGES "+table); err != nil {
			t.Fatalf("stop merges: %v", err)
		}
	}
	k := supplyplan.DemandKey{SKU: "S", Location: "L", Channel: "WEB"}
	for _, v := range []float64{1, 2, 3} {
		storetest.MustUpsert(t, s, "org", supplyplan.DemandRow{SKU: "S", Location: "L", Channel: "WEB", Week: storetest.Week(1), Actual: v, Forecasted: v})
	}
	storetest.MustSignals(t, s, "org", supplyplan.DemandSignal{SignalID: "x", SKU: "S", Location: "L", Channel: "WEB", OccurredAt: storetest.Week(1), Quantity: 10})
	// (INSERT ... VALUES through Exec hangs on 18.16; INSERT ... SELECT works.)
	err := conn.Exec(ctx, "INSERT INTO "+signals+" (org, signal_id, sku, location, channel, week, quantity, occurred_at)"+
		" SELECT 'org', 'x', 'S', 'L', 'WEB', toDate('2024-01-01'), toFloat64(10), toDateTime('2024-01-01 00:00:00')")
	if err != nil {
		t.Fatal(err)
	}
	var parts uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM system.parts WHERE active AND database = ? AND table = ?",
		testDatabase, cfg.TablePrefix+"demand_weeks").Scan(&parts); err != nil {
		t.Fatal(err)
	}
	if parts != 3 {
		t.Fatalf("%d active parts, want 3 unmerged ones", parts)
	}
	got := storetest.MustSeries(t, s, "org", k, time.Time{}, time.Time{})
	if len(got) != 1 || got[0].Actual != 13 || got[0].Forecasted != 3 {
		t.Errorf("Series = %+v, want actual 13 (latest import 3 + signal 10 once), forecasted 3", got)
	}
	agg, err := s.Aggregate(ctx, "org", supplyplan.DemandQuery{GroupBy: []string{"week"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(agg) != 1 || agg[0].Actual != 13 || agg[0].Weeks != 1 {
		t.Errorf("Aggregate = %+v, want actual 13 over 1 week", agg)
	}
}

func TestClickHouseOpenErrors(t *testing.T) {
	for _, cfg := range []analytics.ClickHouseConfig{
		{},
		{Addr: "127.0.0.1:1", DialTimeout: 500 * time.Millisecond},
		{Addr: "127.0.0.1:19000", Database: "bad-name"},
		{Addr: "127.0.0.1:19000", TablePrefix: "x; DROP TABLE y"},
	} {
		s := analytics.NewClickHouseStore(cfg)
		if err := s.Open(); err == nil {
			_ = s.Close()
			t.Errorf("Open(%+v) succeeded", cfg)
		}
	}
	s := analytics.NewClickHouseStore(analytics.ClickHouseConfig{Addr: "127.0.0.1:1"})
	if _, err := s.Keys(context.Background(), "org"); err != analytics.ErrStoreClosed {
		t.Errorf("Keys before Open: %v, want ErrStoreClosed", err)
	}
}

// Cells an earlier version stored out of bounds (an import of 1e308, two signals of 1.7e308 whose
// sum is +Inf) are left out of every read and counted by the check the store starts when it opens.
func TestClickHouseQuarantinesWeeksOutOfBounds(t *testing.T) {
	cfg := clickhouseStoreConfig(t)
	s := MustOpenClickHouse(t, cfg)
	conn := MustRawConn(t, cfg.Addr)
	ctx := context.Background()
	weeks, signals := testDatabase+"."+cfg.TablePrefix+"demand_weeks", testDatabase+"."+cfg.TablePrefix+"demand_signals"
	storetest.MustUpsert(t, s, "org", supplyplan.DemandRow{SKU: "S", Location: "L", Week: storetest.Week(0), Actual: 5, Forecasted: 5},
		supplyplan.DemandRow{SKU: "S", Location: "L", Week: storetest.Week(3), Actual: 7, Forecasted: 7})
	// As an earlier version wrote them (INSERT ... SELECT: see TestClickHouseCorrectWithoutMerges).
	for _, q := range []string{
		"INSERT INTO " + weeks + " (org, sku, location, channel, week, actual, forecasted, stockout, version)" +
			" SELECT 'org', 'S', 'L', 'ALL', toDate('" + storetest.Week(1).Format(time.DateOnly) + "'), toFloat64(1e308), toFloat64(1), 0, 1",
		"INSERT INTO " + signals + " (org, signal_id, sku, location, channel, week, quantity, occurred_at)" +
			" SELECT 'org', concat('sig', toString(number)), 'S', 'L', 'WEB', toDate('" + storetest.Week(2).Format(time.DateOnly) + "')," +
			" toFloat64(1.7e308), toDateTime('" + storetest.Week(2).Format(time.DateTime) + "') FROM system.numbers LIMIT 2",
	} {
		if err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	check := func(s *analytics.ClickHouseStore) {
		t.Helper()
		got := storetest.MustSeries(t, s, "org", supplyplan.DemandKey{SKU: "S", Location: "L", Channel: "ALL"}, time.Time{}, time.Time{})
		if len(got) != 2 || got[0].Actual != 5 || got[1].Actual != 7 {
			t.Fatalf("Series = %+v, want weeks 0 and 3 only", got)
		}
		batch, err := s.SeriesBatch(ctx, "org", []supplyplan.DemandKey{{SKU: "S", Location: "L", Channel: "WEB"}, {SKU: "S", Location: "L"}}, time.Time{}, time.Time{})
		if err != nil || len(batch) != 1 || len(batch[supplyplan.DemandKey{SKU: "S", Location: "L"}]) != 2 {
			t.Fatalf("SeriesBatch = %+v, %v", batch, err)
		}
		agg, err := s.Aggregate(ctx, "org", supplyplan.DemandQuery{})
		if err != nil || len(agg) != 1 || agg[0].Actual != 12 || agg[0].Weeks != 2 {
			t.Fatalf("Aggregate = %+v, %v; want 12 over 2 weeks", agg, err)
		}
	}
	check(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := MustOpenClickHouse(t, cfg)
	wait.Eventually(t, 30*time.Second, func() error {
		if !s2.QuarantineChecked() {
			return errors.New("the stored values were not checked yet")
		}
		return nil
	})
	if got := s2.Quarantined(); got != 2 {
		t.Fatalf("Quarantined() = %d, want 2 (the 1e308 week, the +Inf week)", got)
	}
	check(s2)
}
