package analytics

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/supplyplan/supplyplan"
)

// RawInsertBaseline inserts rows with plain clickhouse-go batch inserts (row appends, batches of
// batchRows) into a fresh table shaped like the store's (same columns, ReplacingMergeTree(version),
// same sort key), and returns the time taken. It is the baseline the benchmark harness compares the
// service's ClickHouse import with: the same rows into the same kind of table, without the service.
// The table is dropped afterwards.
func RawInsertBaseline(ctx context.Context, addr, database string, rows []supplyplan.DemandRow, batchRows int) (time.Duration, error) {
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{addr}, Auth: clickhouse.Auth{Username: "default"},
		DialTimeout: 5 * time.Second, ReadTimeout: 5 * time.Minute, Compression: &clickhouse.Compression{Method: clickhouse.CompressionLZ4}})
	if err != nil {
		return 0, fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()
	table := fmt.Sprintf("%s.raw_baseline_%d", database, time.Now().UnixNano())
	if err := conn.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+database); err != nil {
		return 0, fmt.Errorf("create database: %w", err)
	}
	if err := conn.Exec(ctx, "CREATE TABLE "+table+` (org String, sku String, location String, channel String,
		week Date, actual Float64, forecasted Float64, stockout UInt8, version UInt64)
		ENGINE = ReplacingMergeTree(version) ORDER BY (org, sku, location, channel, week)`); err != nil {
		return 0, fmt.Errorf("create table: %w", err)
	}
	defer func() { _ = conn.Exec(context.Background(), "DROP TABLE IF EXISTS "+table) }()
	start := time.Now()
	for i := 0; i < len(rows); i += batchRows {
		batch, err := conn.PrepareBatch(ctx, "INSERT INTO "+table+" (org, sku, location, channel, week, actual, forecasted, stockout, version)")
		if err != nil {
			return 0, fmt.Errorf("prepare batch: %w", err)
		}
		for j, r := range rows[i:min(i+batchRows, len(rows))] {
			var so uint8
			if r.Stockout {
				so = 1
			}
			if err := batch.Append("baseline", r.SKU, r.Location, r.Channel, r.Week, r.Actual, r.Forecasted, so, uint64(i+j)); err != nil {
				_ = batch.Abort()
				return 0, fmt.Errorf("append: %w", err)
			}
		}
		if err := batch.Send(); err != nil {
			return 0, fmt.Errorf("send batch: %w", err)
		}
	}
	return time.Since(start), nil
}

// DropDatabase drops a database the benchmark harness created (the service's tables and the
// baseline's), so that repeated runs do not pile up rows on the ClickHouse server.
func DropDatabase(ctx context.Context, addr, database string) error {
	if !identRe.MatchString(database) {
		return fmt.Errorf("drop database: %q is not an identifier", database)
	}
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{addr}, Auth: clickhouse.Auth{Username: "default"},
		DialTimeout: 5 * time.Second, ReadTimeout: 5 * time.Minute})
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()
	if err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+database); err != nil {
		return fmt.Errorf("drop database: %w", err)
	}
	return nil
}
