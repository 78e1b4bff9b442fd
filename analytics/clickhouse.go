package analytics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/ext"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/supplyplan/supplyplan"
)

// ClickHouseConfig configures a ClickHouseStore.
type ClickHouseConfig struct {
	// Addr is host:port of the native protocol (ClickHouse's tcp_port, 9000 by default).
	Addr string
	// Database holds the tables; created if missing (default "supplyplan").
	Database string
	// Username and Password authenticate (default user "default", no password).
	Username, Password string
	// TablePrefix is prepended to the table names (tests use a unique one per test).
	TablePrefix string
	// DialTimeout bounds connecting (default 5 s); MaxOpenConns the pool (default 8).
	DialTimeout  time.Duration
	MaxOpenConns int
	Logger       *slog.Logger
}

// ClickHouseStore is the supplyplan.DemandStore of the distributed mode. Imported weeks live in a
// ReplacingMergeTree keyed by (org, sku, location, channel, week) with a version column, so a
// re-import replaces; signals live in a ReplacingMergeTree keyed by (org, signal_id), so a signal
// counts once. Queries read both with FINAL and never rely on background merges; aggregation runs
// in ClickHouse. Written for ClickHouse 18.16 and later (see docs/clickhouse.md).
type ClickHouseStore struct {
	cfg  ClickHouseConfig
	log  *slog.Logger
	conn driver.Conn
	open atomic.Bool

	weeks, signals string // qualified table names

	version atomic.Uint64 // last version handed out

	orgMu    sync.Mutex
	orgLocks map[string]*orgSignals // serializes AddSignals' read-then-write per organization

	quarantined atomic.Int64 // weeks out of bounds found by the check Open starts
	checked     atomic.Bool  // that check finished
	stopCheck   context.CancelFunc
	checks      sync.WaitGroup
}

var identRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// insertChunk caps the rows of one INSERT block.
const insertChunk = 100_000

// NewClickHouseStore returns a store for cfg; Open connects and creates the schema.
func NewClickHouseStore(cfg ClickHouseConfig) *ClickHouseStore {
	if cfg.Database == "" {
		cfg.Database = "supplyplan"
	}
	if cfg.Username == "" {
		cfg.Username = "default"
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	if cfg.MaxOpenConns <= 0 {
		cfg.MaxOpenConns = 8
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &ClickHouseStore{cfg: cfg, log: cfg.Logger, orgLocks: map[string]*orgSignals{},
		weeks:   cfg.Database + "." + cfg.TablePrefix + "demand_weeks",
		signals: cfg.Database + "." + cfg.TablePrefix + "demand_signals"}
}

// Schema returns the statements Open runs (CREATE ... IF NOT EXISTS), for docs and operators.
func (s *ClickHouseStore) Schema() []string {
	return []string{
		"CREATE DATABASE IF NOT EXISTS " + s.cfg.Database,
		// version orders re-imports: the row with the highest version of a key wins (FINAL).
		"CREATE TABLE IF NOT EXISTS " + s.weeks + ` (
	org String, sku String, location String, channel String, week Date,
	actual Float64, forecasted Float64, stockout UInt8, version UInt64
) ENGINE = ReplacingMergeTree(version) ORDER BY (org, sku, location, channel, week)`,
		"CREATE TABLE IF NOT EXISTS " + s.signals + ` (
	org String, signal_id String, sku String, location String, channel String, week Date,
	quantity Float64, occurred_at DateTime
) ENGINE = ReplacingMergeTree ORDER BY (org, signal_id)`,
	}
}

// Open connects, checks the server answers and creates the database and tables if needed.
// Ping checks that ClickHouse answers (readiness).
func (s *ClickHouseStore) Ping(ctx context.Context) error {
	if !s.open.Load() {
		return errors.New("clickhouse store is not open")
	}
	if err := s.conn.Ping(ctx); err != nil {
		return fmt.Errorf("ping clickhouse: %w", err)
	}
	return nil
}

func (s *ClickHouseStore) Open() error {
	if s.cfg.Addr == "" {
		return errors.New("open clickhouse: no address configured")
	}
	if !identRe.MatchString(s.cfg.Database) || (s.cfg.TablePrefix != "" && !identRe.MatchString(s.cfg.TablePrefix)) {
		return fmt.Errorf("open clickhouse: database %q and table prefix %q must be identifiers", s.cfg.Database, s.cfg.TablePrefix)
	}
	start := time.Now()
	conn, err := clickhouse.Open(&clickhouse.Options{
		Addr:        []string{s.cfg.Addr},
		Auth:        clickhouse.Auth{Username: s.cfg.Username, Password: s.cfg.Password},
		DialTimeout: s.cfg.DialTimeout,
		// The server sends progress packets while it works, so a silence this long is a hang
		// (clickhouse-go's default is 300 s).
		ReadTimeout:  60 * time.Second,
		MaxOpenConns: s.cfg.MaxOpenConns,
		MaxIdleConns: s.cfg.MaxOpenConns,
		Compression:  &clickhouse.Compression{Method: clickhouse.CompressionLZ4},
		// Filters with long IN lists exceed the default 256 KiB query size.
		Settings: clickhouse.Settings{"max_query_size": 64 << 20},
	})
	if err != nil {
		return fmt.Errorf("open clickhouse: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.DialTimeout+10*time.Second)
	defer cancel()
	if err := conn.Ping(ctx); err != nil {
		_ = conn.Close()
		return fmt.Errorf("ping clickhouse %s: %w", s.cfg.Addr, err)
	}
	for _, q := range s.Schema() {
		if err := conn.Exec(ctx, q); err != nil {
			_ = conn.Close()
			return fmt.Errorf("create clickhouse schema: %w", err)
		}
	}
	s.conn = conn
	s.open.Store(true)
	checkCtx, cancelCheck := context.WithTimeout(context.Background(), 10*time.Minute)
	s.stopCheck = cancelCheck
	s.checks.Add(1)
	go func() {
		defer s.checks.Done()
		defer cancelCheck()
		s.reportQuarantine(checkCtx)
		s.checked.Store(true)
	}()
	if v, err := conn.ServerVersion(); err == nil {
		s.log.Info("clickhouse demand store opened", "addr", s.cfg.Addr, "server", v.String(),
			"weeks", s.weeks, "signals", s.signals, "took", time.Since(start))
	}
	return nil
}

// Close closes the connection pool. It is idempotent.
func (s *ClickHouseStore) Close() error {
	if !s.open.Swap(false) {
		return nil
	}
	s.stopCheck()
	s.checks.Wait()
	if err := s.conn.Close(); err != nil {
		return fmt.Errorf("close clickhouse: %w", err)
	}
	return nil
}

func (s *ClickHouseStore) ready() error {
	if !s.open.Load() {
		return ErrStoreClosed
	}
	return nil
}

// versions reserves n increasing versions: wall-clock nanoseconds, never less than the last
// handed out, so that a later import (also from a new process) wins over an earlier one.
func (s *ClickHouseStore) versions(n int) uint64 {
	for {
		last := s.version.Load()
		v := max(uint64(time.Now().UnixNano()), last+1)
		if s.version.CompareAndSwap(last, v+uint64(n)-1) {
			return v
		}
	}
}

// UpsertWeeks inserts the rows with new versions; the newest version of a week is the one read.
func (s *ClickHouseStore) UpsertWeeks(ctx context.Context, orgID string, rows []supplyplan.DemandRow) error {
	if err := validateRows(orgID, rows); err != nil {
		return err
	}
	if err := s.ready(); err != nil {
		return err
	}
	if len(rows) == 0 {
		return nil
	}
	version := s.versions(len(rows))
	for len(rows) > 0 {
		n := min(len(rows), insertChunk)
		if err := s.insertWeeks(ctx, orgID, rows[:n], version); err != nil {
			return err
		}
		rows, version = rows[n:], version+uint64(n)
	}
	return nil
}

// insertBlock is the rows of one data block of an INSERT: a chunk goes to the server as blocks of
// this size in one INSERT (the server squashes them into one part), so that the client's column
// buffers stay small and are reused from block to block instead of growing to the whole chunk.
const insertBlock = 8192

// weekColumns is the scratch space of insertWeeks' blocks, reused through weekScratch.
type weekColumns struct {
	org, sku, loc, ch []string
	week              []time.Time
	actual, forecast  []float64
	stockout          []uint8
	ver               []uint64
}

var weekScratch = sync.Pool{New: func() any {
	return &weekColumns{org: make([]string, 0, insertBlock), sku: make([]string, 0, insertBlock),
		loc: make([]string, 0, insertBlock), ch: make([]string, 0, insertBlock), week: make([]time.Time, 0, insertBlock),
		actual: make([]float64, 0, insertBlock), forecast: make([]float64, 0, insertBlock),
		stockout: make([]uint8, 0, insertBlock), ver: make([]uint64, 0, insertBlock)}
}}

func (c *weekColumns) reset() {
	clear(c.org[:cap(c.org)])
	clear(c.sku[:cap(c.sku)])
	clear(c.loc[:cap(c.loc)])
	clear(c.ch[:cap(c.ch)])
	c.org, c.sku, c.loc, c.ch = c.org[:0], c.sku[:0], c.loc[:0], c.ch[:0]
	c.week, c.actual, c.forecast, c.stockout, c.ver = c.week[:0], c.actual[:0], c.forecast[:0], c.stockout[:0], c.ver[:0]
}

func (s *ClickHouseStore) insertWeeks(ctx context.Context, orgID string, rows []supplyplan.DemandRow, version uint64) error {
	const action = "insert demand weeks"
	batch, err := s.conn.PrepareBatch(ctx, "INSERT INTO "+s.weeks+
		" (org, sku, location, channel, week, actual, forecasted, stockout, version)")
	if err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	// An unsent batch keeps its INSERT open on the server, which blocks DROP TABLE until
	// receive_timeout: always abort (a no-op after Send).
	defer func() { _ = batch.Abort() }()
	c := weekScratch.Get().(*weekColumns)
	defer func() {
		c.reset()
		weekScratch.Put(c)
	}()
	for lo := 0; lo < len(rows); lo += insertBlock {
		c.reset()
		for i := lo; i < min(lo+insertBlock, len(rows)); i++ {
			r := &rows[i]
			c.org, c.sku, c.loc, c.ch = append(c.org, orgID), append(c.sku, r.SKU), append(c.loc, r.Location), append(c.ch, normChannel(r.Channel))
			c.week = append(c.week, dayTime(weekDay(r.Week)))
			c.actual, c.forecast = append(c.actual, r.Actual), append(c.forecast, r.Forecasted)
			var so uint8
			if r.Stockout {
				so = 1
			}
			c.stockout, c.ver = append(c.stockout, so), append(c.ver, version+uint64(i))
		}
		for i, col := range []any{c.org, c.sku, c.loc, c.ch, c.week, c.actual, c.forecast, c.stockout, c.ver} {
			if err := batch.Column(i).Append(col); err != nil {
				return fmt.Errorf("%s: column %d: %w", action, i, err)
			}
		}
		if lo+insertBlock < len(rows) {
			// Sends this block and empties the batch's columns, keeping their capacity.
			if err := batch.Flush(); err != nil {
				return fmt.Errorf("%s: %w", action, err)
			}
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	return nil
}

// insertColumns sends one block, column by column (faster than row appends).
func (s *ClickHouseStore) insertColumns(ctx context.Context, query, action string, columns ...any) error {
	batch, err := s.conn.PrepareBatch(ctx, query)
	if err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	// An unsent batch keeps its INSERT open on the server, which blocks DROP TABLE until
	// receive_timeout: always abort (a no-op after Send).
	defer func() { _ = batch.Abort() }()
	for i, col := range columns {
		if err := batch.Column(i).Append(col); err != nil {
			return fmt.Errorf("%s: column %d: %w", action, i, err)
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	return nil
}

// orgSignals is an organization's signal writer: its lock, and the newest week of its applied
// signals (the end of its dedup window, supplyplan.SignalDedupWeeks), read from the table once.
type orgSignals struct {
	mu     sync.Mutex
	loaded bool // newest and has were read
	has    bool
	newest int32 // Unix day of the newest week
}

func (s *ClickHouseStore) orgLock(orgID string) *orgSignals {
	s.orgMu.Lock()
	defer s.orgMu.Unlock()
	m := s.orgLocks[orgID]
	if m == nil {
		m = new(orgSignals)
		s.orgLocks[orgID] = m
	}
	return m
}

// AddSignals inserts the signals whose ids the organization has not seen and whose week is within
// its dedup window, judged record by record as the embedded store does (maxRecordItems signals;
// each against the window in force when it starts). The service has one writer per organization;
// within this process the check and the insert are serialized per organization, and FINAL on
// (org, signal_id) keeps a signal from counting twice even if two writers raced. The ids stay on
// disk, so the window here bounds nothing: it is there so that both stores refuse the same
// signals.
func (s *ClickHouseStore) AddSignals(ctx context.Context, orgID string, signals []supplyplan.DemandSignal) ([]supplyplan.SignalWrite, error) {
	if err := validateSignals(orgID, signals); err != nil {
		return nil, err
	}
	if err := s.ready(); err != nil {
		return nil, err
	}
	writes := make([]supplyplan.SignalWrite, len(signals))
	if len(signals) == 0 {
		return writes, nil
	}
	o := s.orgLock(orgID)
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.loaded {
		var n uint64
		var newest time.Time
		if err := s.conn.QueryRow(ctx, "SELECT count(), max(week) FROM "+s.signals+" WHERE org = @org",
			clickhouse.Named("org", orgID)).Scan(&n, &newest); err != nil {
			return nil, fmt.Errorf("read the newest signal week: %w", err)
		}
		o.has, o.newest, o.loaded = n > 0, weekDay(newest), true
	}
	for start := 0; start < len(signals); start += maxRecordItems {
		end := min(len(signals), start+maxRecordItems)
		if err := s.addSignalRecord(ctx, orgID, o, signals[start:end], writes[start:end]); err != nil {
			return nil, err
		}
	}
	return writes, nil
}

// addSignalRecord writes what the embedded store writes as one record: every signal judged against
// the window in force when it starts, which then moves to the newest week written.
func (s *ClickHouseStore) addSignalRecord(ctx context.Context, orgID string, o *orgSignals, signals []supplyplan.DemandSignal, writes []supplyplan.SignalWrite) error {
	floor := signalFloor(o.newest)
	ids, err := ext.NewTable("wanted_ids", ext.Column("id", "String"))
	if err != nil {
		return fmt.Errorf("check signal ids: %w", err)
	}
	seen := make(map[string]bool, len(signals))
	for i := range signals {
		if o.has && weekDay(signals[i].OccurredAt) < floor {
			writes[i] = supplyplan.SignalTooLate
			continue
		}
		if _, ok := seen[signals[i].SignalID]; !ok {
			seen[signals[i].SignalID] = false
			if err := ids.Append(signals[i].SignalID); err != nil {
				return fmt.Errorf("check signal ids: %w", err)
			}
		}
	}
	if len(seen) > 0 {
		rows, err := s.conn.Query(clickhouse.Context(ctx, clickhouse.WithExternalTable(ids)),
			"SELECT signal_id FROM "+s.signals+" WHERE org = @org AND signal_id IN (SELECT id FROM wanted_ids)",
			clickhouse.Named("org", orgID))
		if err != nil {
			return fmt.Errorf("check signal ids: %w", err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return fmt.Errorf("check signal ids: %w", err)
			}
			seen[id] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("check signal ids: %w", err)
		}
	}

	var org, id, sku, loc, ch []string
	var week, at []time.Time
	var qty []float64
	newest, has := o.newest, o.has
	for i := range signals {
		sg := &signals[i]
		if writes[i] == supplyplan.SignalTooLate {
			continue
		}
		if seen[sg.SignalID] {
			writes[i] = supplyplan.SignalSeen // applied before, or earlier in this call
			continue
		}
		seen[sg.SignalID] = true
		writes[i] = supplyplan.SignalWritten
		org, id, sku, loc, ch = append(org, orgID), append(id, sg.SignalID), append(sku, sg.SKU), append(loc, sg.Location),
			append(ch, normChannel(sg.Channel))
		wd := weekDay(sg.OccurredAt)
		week = append(week, dayTime(wd))
		at = append(at, sg.OccurredAt.UTC())
		qty = append(qty, sg.Quantity)
		if !has || wd > newest {
			newest, has = wd, true
		}
	}
	if len(id) == 0 {
		return nil
	}
	err = s.insertColumns(ctx, "INSERT INTO "+s.signals+
		" (org, signal_id, sku, location, channel, week, quantity, occurred_at)",
		"insert demand signals", org, id, sku, loc, ch, week, qty, at)
	if err != nil {
		return err
	}
	o.newest, o.has = newest, has
	return nil
}

// cellsSQL selects the cells of @org that match cond, one row per (series, week), as
// (sku, location, channel, week, a, f, so): a is the imported actual plus the week's signals, f the
// imported forecast, so the stockout flag. The imports (FINAL: the newest version) are joined with
// the signals summed per cell (FINAL: each id once); the FULL JOIN keeps the weeks that have only
// one of them (the other side's columns are then 0). Both sides are unique per cell, so this is
// one row per cell with no GROUP BY over the imports: on 18.16 grouping millions of cells by
// (sku, location, channel, week) is several times slower than the join.
//
// cond filters key columns only: FINAL and a filter on a column that differs between versions would
// not mix on old servers (PREWHERE), and these never do.
//
// A cell out of bounds (written by an earlier version that did not bound numbers) is quarantined:
// the outer WHERE leaves it out of every read, as the embedded store does.
func (s *ClickHouseStore) cellsSQL(cond string) string {
	return "SELECT sku, location, channel, week, actual + sq AS a, forecasted AS f, stockout AS so FROM (" +
		"SELECT sku, location, channel, week, actual, forecasted, stockout FROM " + s.weeks +
		" FINAL WHERE org = @org" + cond + ") ANY FULL OUTER JOIN (" +
		"SELECT sku, location, channel, week, sum(quantity) AS sq FROM " + s.signals + " FINAL WHERE org = @org" + cond +
		" GROUP BY sku, location, channel, week) USING (sku, location, channel, week)" + servedCond
}

// servedCond keeps the cells whose actual (a) and forecast (f) are within supplyplan.MaxStored;
// NaN fails every comparison, so it is left out too.
var servedCond = " WHERE abs(a) <= " + storedBound + " AND abs(f) <= " + storedBound

var storedBound = strconv.FormatFloat(supplyplan.MaxStored, 'g', -1, 64)

// reportQuarantine counts, per organization, the cells out of bounds (left out of every read) and
// logs them. It runs in the background from Open: it reads every cell once.
func (s *ClickHouseStore) reportQuarantine(ctx context.Context) {
	q := "SELECT org, count() FROM (SELECT org, sku, location, channel, week, actual, forecasted FROM " + s.weeks +
		" FINAL) ANY FULL OUTER JOIN (SELECT org, sku, location, channel, week, sum(quantity) AS sq FROM " + s.signals +
		" FINAL GROUP BY org, sku, location, channel, week) USING (org, sku, location, channel, week)" +
		" WHERE NOT (abs(actual + sq) <= " + storedBound + " AND abs(forecasted) <= " + storedBound + ") GROUP BY org"
	rows, err := s.conn.Query(ctx, q)
	if err != nil {
		s.log.Warn("demand store: cannot check for weeks out of bounds", "err", err)
		return
	}
	defer rows.Close()
	var total int64
	for rows.Next() {
		var org string
		var n uint64
		if err := rows.Scan(&org, &n); err != nil {
			s.log.Warn("demand store: cannot check for weeks out of bounds", "err", err)
			return
		}
		total += int64(n)
		s.log.Warn("demand store: quarantined weeks out of bounds; they are left out of every read",
			"org", org, "weeks", n, "bound", supplyplan.MaxStored)
	}
	if err := rows.Err(); err != nil {
		s.log.Warn("demand store: cannot check for weeks out of bounds", "err", err)
		return
	}
	s.quarantined.Store(total)
}

// Quarantined returns the number of weeks found out of bounds by the check Open starts (0 until it
// finished); QuarantineChecked reports whether it did.
func (s *ClickHouseStore) Quarantined() int64 { return s.quarantined.Load() }

// QuarantineChecked reports whether the check Open starts has finished.
func (s *ClickHouseStore) QuarantineChecked() bool { return s.checked.Load() }

// weekCond returns the condition and parameters of a [from, to] range; empty reports that no
// stored week can match.
func weekCond(from, to time.Time) (cond string, args []any, empty bool) {
	lo, hi := dayRange(from, to)
	if lo > hi || hi < minDay || lo > maxDay {
		return "", nil, true
	}
	if lo > minDay {
		cond += " AND week >= toDate(@from)"
		args = append(args, clickhouse.Named("from", dayTime(lo).Format(time.DateOnly)))
	}
	if hi < maxDay {
		cond += " AND week <= toDate(@to)"
		args = append(args, clickhouse.Named("to", dayTime(hi).Format(time.DateOnly)))
	}
	return cond, args, false
}

// Series returns the weeks of one series in [from, to], oldest first.
func (s *ClickHouseStore) Series(ctx context.Context, orgID string, key supplyplan.DemandKey, from, to time.Time) ([]supplyplan.WeekValue, error) {
	if err := checkOrg(orgID); err != nil {
		return nil, err
	}
	if err := s.ready(); err != nil {
		return nil, err
	}
	key = normKey(key)
	cond, args, empty := weekCond(from, to)
	if empty {
		return nil, nil
	}
	cond += " AND sku = @sku AND location = @location"
	args = append(args, clickhouse.Named("org", orgID), clickhouse.Named("sku", key.SKU), clickhouse.Named("location", key.Location))
	if key.Channel != supplyplan.ChannelAll {
		cond += " AND channel = @channel"
		args = append(args, clickhouse.Named("channel", key.Channel))
	}
	rows, err := s.conn.Query(ctx, "SELECT week, sum(a), sum(f), max(so) FROM ("+s.cellsSQL(cond)+
		") GROUP BY week ORDER BY week", args...)
	if err != nil {
		return nil, fmt.Errorf("query demand series: %w", err)
	}
	defer rows.Close()
	var out []supplyplan.WeekValue
	for rows.Next() {
		var v supplyplan.WeekValue
		var so uint8
		if err := rows.Scan(&v.Week, &v.Actual, &v.Forecasted, &so); err != nil {
			return nil, fmt.Errorf("query demand series: %w", err)
		}
		v.Week, v.Stockout = v.Week.UTC(), so != 0
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("query demand series: %w", err)
	}
	return out, nil
}

// SeriesBatch returns Series for every key that has data in [from, to]: one query for the keys of
// a single channel and one for the ALL keys, the keys sent as external tables.
func (s *ClickHouseStore) SeriesBatch(ctx context.Context, orgID string, keys []supplyplan.DemandKey, from, to time.Time) (map[supplyplan.DemandKey][]supplyplan.WeekValue, error) {
	if err := checkOrg(orgID); err != nil {
		return nil, err
	}
	if err := s.ready(); err != nil {
		return nil, err
	}
	out := make(map[supplyplan.DemandKey][]supplyplan.WeekValue, len(keys))
	cond, args, empty := weekCond(from, to)
	if empty || len(keys) == 0 {
		return out, nil
	}
	args = append(args, clickhouse.Named("org", orgID))
	exact, err := ext.NewTable("wanted_keys", ext.Column("sku", "String"), ext.Column("location", "String"), ext.Column("channel", "String"))
	if err != nil {
		return nil, fmt.Errorf("query demand series: %w", err)
	}
	items, err := ext.NewTable("wanted_items", ext.Column("sku", "String"), ext.Column("location", "String"))
	if err != nil {
		return nil, fmt.Errorf("query demand series: %w", err)
	}
	byNorm := map[supplyplan.DemandKey][]supplyplan.DemandKey{} // stored form -> keys as asked
	nExact, nItems := 0, 0
	for _, k := range keys {
		nk := normKey(k)
		if _, dup := byNorm[nk]; !dup {
			if nk.Channel == supplyplan.ChannelAll {
				err, nItems = items.Append(nk.SKU, nk.Location), nItems+1
			} else {
				err, nExact = exact.Append(nk.SKU, nk.Location, nk.Channel), nExact+1
			}
			if err != nil {
				return nil, fmt.Errorf("query demand series: %w", err)
			}
		}
		if !slices.Contains(byNorm[nk], k) {
			byNorm[nk] = append(byNorm[nk], k)
		}
	}
	collect := func(table *ext.Table, query string, channel bool) error {
		rows, err := s.conn.Query(clickhouse.Context(ctx, clickhouse.WithExternalTable(table)), query, args...)
		if err != nil {
			return fmt.Errorf("query demand series: %w", err)
		}
		defer rows.Close()
		var k, prev supplyplan.DemandKey
		var asked []supplyplan.DemandKey
		for rows.Next() {
			var v supplyplan.WeekValue
			var so uint8
			dest := []any{&k.SKU, &k.Location}
			if channel {
				dest = append(dest, &k.Channel)
			} else {
				k.Channel = supplyplan.ChannelAll
			}
			if err := rows.Scan(append(dest, &v.Week, &v.Actual, &v.Forecasted, &so)...); err != nil {
				return fmt.Errorf("query demand series: %w", err)
			}
			v.Week, v.Stockout = v.Week.UTC(), so != 0
			if k != prev || asked == nil {
				asked, prev = byNorm[k], k
			}
			for _, a := range asked {
				out[a] = append(out[a], v)
			}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("query demand series: %w", err)
		}
		return nil
	}
	// Rows come in no particular order (an ORDER BY over every cell costs the server more than
	// sorting each series here); a series is mostly in order already.
	if nExact > 0 {
		q := "SELECT sku, location, channel, week, a, f, so FROM (" +
			s.cellsSQL(cond+" AND (sku, location, channel) IN (SELECT sku, location, channel FROM wanted_keys)") + ")"
		if err := collect(exact, q, true); err != nil {
			return nil, err
		}
	}
	if nItems > 0 {
		q := "SELECT sku, location, week, sum(a), sum(f), max(so) FROM (" +
			s.cellsSQL(cond+" AND (sku, location) IN (SELECT sku, location FROM wanted_items)") +
			") GROUP BY sku, location, week"
		if err := collect(items, q, false); err != nil {
			return nil, err
		}
	}
	for _, weeks := range out {
		if !slices.IsSortedFunc(weeks, compareWeeks) {
			slices.SortFunc(weeks, compareWeeks)
		}
	}
	return out, nil
}

func compareWeeks(a, b supplyplan.WeekValue) int { return a.Week.Compare(b.Week) }

// Keys lists the organization's series, sorted by sku, location, channel (byte order, as Go sorts).
func (s *ClickHouseStore) Keys(ctx context.Context, orgID string) ([]supplyplan.DemandKey, error) {
	if err := checkOrg(orgID); err != nil {
		return nil, err
	}
	if err := s.ready(); err != nil {
		return nil, err
	}
	rows, err := s.conn.Query(ctx, "SELECT sku, location, channel FROM ("+
		"SELECT sku, location, channel FROM "+s.weeks+" WHERE org = @org GROUP BY sku, location, channel"+
		" UNION ALL SELECT sku, location, channel FROM "+s.signals+" WHERE org = @org GROUP BY sku, location, channel"+
		") GROUP BY sku, location, channel ORDER BY sku, location, channel", clickhouse.Named("org", orgID))
	if err != nil {
		return nil, fmt.Errorf("query demand keys: %w", err)
	}
	defer rows.Close()
	var out []supplyplan.DemandKey
	for rows.Next() {
		var k supplyplan.DemandKey
		if err := rows.Scan(&k.SKU, &k.Location, &k.Channel); err != nil {
			return nil, fmt.Errorf("query demand keys: %w", err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("query demand keys: %w", err)
	}
	return out, nil
}

// KeyPage pages the keys of Keys (the query lists them all; ClickHouse answers it from its sorted
// parts).
func (s *ClickHouseStore) KeyPage(ctx context.Context, orgID string, f supplyplan.DemandKeyFilter, offset, limit int) ([]supplyplan.DemandKey, int, error) {
	keys, err := s.Keys(ctx, orgID)
	if err != nil {
		return nil, 0, err
	}
	out, total := supplyplan.PageDemandKeys(keys, f, offset, limit)
	return out, total, nil
}

// Aggregate sums actual and forecasted demand in ClickHouse over the cells of cellsSQL, grouped
// as asked.
func (s *ClickHouseStore) Aggregate(ctx context.Context, orgID string, q supplyplan.DemandQuery) ([]supplyplan.DemandAggregate, error) {
	group, err := parseGroupBy(q.GroupBy)
	if err != nil {
		return nil, err
	}
	if err := checkOrg(orgID); err != nil {
		return nil, err
	}
	if err := s.ready(); err != nil {
		return nil, err
	}
	cond, args, empty := weekCond(q.From, q.To)
	if empty {
		if group == 0 {
			return []supplyplan.DemandAggregate{{}}, nil
		}
		return []supplyplan.DemandAggregate{}, nil
	}
	args = append(args, clickhouse.Named("org", orgID))
	filter := func(column string, values []string) {
		if len(values) == 0 {
			return
		}
		set := make([]any, len(values))
		for i, v := range values {
			set[i] = v
		}
		cond += " AND " + column + " IN @" + column + "s"
		args = append(args, clickhouse.Named(column+"s", clickhouse.GroupSet{Value: set}))
	}
	filter("sku", q.SKUs)
	filter("location", q.Locations)
	filter("channel", channelFilter(q.Channels))

	var cols []string
	for _, g := range []struct {
		bit    int
		column string
	}{{groupSKU, "sku"}, {groupLocation, "location"}, {groupChannel, "channel"}, {groupWeek, "week"}} {
		if group&g.bit != 0 {
			cols = append(cols, g.column)
		}
	}
	sel, tail := "", ""
	if len(cols) > 0 {
		list := strings.Join(cols, ", ")
		sel, tail = list+", ", " GROUP BY "+list+" ORDER BY "+list
	}
	// cellsSQL has one row per cell, so count() counts cells.
	query := "SELECT " + sel + "sum(a), sum(f), count() FROM (" + s.cellsSQL(cond) + ")" + tail
	rows, err := s.conn.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("query demand aggregate: %w", err)
	}
	defer rows.Close()
	out := []supplyplan.DemandAggregate{}
	for rows.Next() {
		var a supplyplan.DemandAggregate
		var weeks uint64
		dest := make([]any, 0, 7)
		for _, c := range cols {
			switch c {
			case "sku":
				dest = append(dest, &a.SKU)
			case "location":
				dest = append(dest, &a.Location)
			case "channel":
				dest = append(dest, &a.Channel)
			case "week":
				dest = append(dest, &a.Week)
			}
		}
		if err := rows.Scan(append(dest, &a.Actual, &a.Forecasted, &weeks)...); err != nil {
			return nil, fmt.Errorf("query demand aggregate: %w", err)
		}
		if !a.Week.IsZero() {
			a.Week = a.Week.UTC()
		}
		a.Weeks = int(weeks)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("query demand aggregate: %w", err)
	}
	return out, nil
}

var _ supplyplan.DemandStore = (*ClickHouseStore)(nil)
