package supplyplan

import (
	"context"
	"encoding/json"
	"time"
)

// ChannelAll is the default channel of demand records. As a query key it means the total over every
// channel of the product and location (rows stored under "ALL" count as one more channel).
const ChannelAll = "ALL"

// DemandKey identifies one weekly demand series.
type DemandKey struct {
	SKU      string `json:"skuId"`
	Location string `json:"locationId"`
	Channel  string `json:"channel"`
}

// DemandRow is one imported week of a series. Importing the same (SKU, Location, Channel, Week)
// again replaces the imported values; it never adds.
type DemandRow struct {
	SKU        string
	Location   string
	Channel    string
	Week       time.Time // Monday 00:00 UTC of the ISO week
	Actual     float64
	Forecasted float64
	// Stockout marks a week whose demand was censored by zero stock on hand: the forecast engine
	// treats it as missing, not as zero demand.
	Stockout bool
}

// DemandSignal is one live demand event (from Kafka or POST /api/demand/signals). Its quantity adds
// to the actual demand of the week containing OccurredAt. A SignalID seen before is ignored.
type DemandSignal struct {
	SignalID       string    `json:"signalId"`
	OrganizationID string    `json:"organizationId"`
	SKU            string    `json:"skuId"`
	Location       string    `json:"locationId"`
	Channel        string    `json:"channel"`
	Quantity       float64   `json:"quantity"`
	OccurredAt     time.Time `json:"occurredAt"`
}

// WeekValue is one week of a series as read back: Actual is the imported actual plus every distinct
// signal of that week.
type WeekValue struct {
	Week       time.Time `json:"weekStarting"`
	Actual     float64   `json:"actualDemand"`
	Forecasted float64   `json:"forecastedDemand"`
	Stockout   bool      `json:"stockout,omitempty"`
}

// MarshalJSON renders the week with its quantities rounded to QuantityDecimals (an actual is a
// sum of an import and signals: 0.1 + 0.2 would read 0.30000000000000004).
func (w WeekValue) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Week       time.Time `json:"weekStarting"`
		Actual     Quantity  `json:"actualDemand"`
		Forecasted Quantity  `json:"forecastedDemand"`
		Stockout   bool      `json:"stockout,omitempty"`
	}{w.Week, Quantity(w.Actual), Quantity(w.Forecasted), w.Stockout})
}

// DemandKeyFilter selects the series of an organization: of one product and/or location (empty:
// any), of one channel, or with Channel ChannelAll every (sku, location) once, named with channel
// ChannelAll.
type DemandKeyFilter struct {
	SKU, Location, Channel string
}

// PageDemandKeys applies a DemandKeyFilter and a window to keys sorted by sku, location, channel
// (a store without an index of its own lists its keys and pages them with this).
func PageDemandKeys(keys []DemandKey, f DemandKeyFilter, offset, limit int) ([]DemandKey, int) {
	out, total := []DemandKey{}, 0
	var prev DemandKey
	for _, k := range keys {
		if (f.SKU != "" && k.SKU != f.SKU) || (f.Location != "" && k.Location != f.Location) {
			continue
		}
		if f.Channel == ChannelAll {
			k.Channel = ChannelAll
			if total > 0 && k == prev {
				continue
			}
			prev = k
		} else if k.Channel != f.Channel {
			continue
		}
		if total >= offset && total < offset+limit {
			out = append(out, k)
		}
		total++
	}
	return out, total
}

// DemandQuery selects rows for an aggregate. Empty lists mean "all"; zero times mean unbounded
// (From and To are inclusive week starts). GroupBy holds any of "sku", "location", "channel", "week".
type DemandQuery struct {
	SKUs      []string
	Locations []string
	Channels  []string
	From, To  time.Time
	GroupBy   []string
}

// DemandAggregate is one group of an aggregate; the fields not grouped by are empty.
type DemandAggregate struct {
	SKU        string    `json:"skuId,omitempty"`
	Location   string    `json:"locationId,omitempty"`
	Channel    string    `json:"channel,omitempty"`
	Week       time.Time `json:"weekStarting,omitzero"`
	Actual     float64   `json:"actualDemand"`
	Forecasted float64   `json:"forecastedDemand"`
	Weeks      int       `json:"weeks"` // number of (series, week) cells summed
}

// DemandStore holds weekly demand history per organization. Implementations: the embedded store
// (default, in the data dir) and ClickHouse. Every write returns only once it is durable.
type DemandStore interface {
	// UpsertWeeks replaces the imported values of the given weeks (last write wins).
	UpsertWeeks(ctx context.Context, orgID string, rows []DemandRow) error
	// AddSignals adds each signal's quantity to its week and says what became of each (in order):
	// SignalWritten, SignalSeen when its SignalID was applied before, SignalTooLate when its week is
	// more than SignalDedupWeeks before the newest week of the organization's signals applied before
	// the call (SignalFloor); nothing changes for the last two.
	AddSignals(ctx context.Context, orgID string, signals []DemandSignal) ([]SignalWrite, error)
	// Series returns the weeks of one series in [from, to] (zero = unbounded), oldest first. Weeks
	// without data are absent. Channel ChannelAll sums every channel.
	Series(ctx context.Context, orgID string, key DemandKey, from, to time.Time) ([]WeekValue, error)
	// SeriesBatch is Series for many keys in one round trip.
	SeriesBatch(ctx context.Context, orgID string, keys []DemandKey, from, to time.Time) (map[DemandKey][]WeekValue, error)
	// Keys lists every stored (sku, location, channel) of an organization, sorted, in a new slice
	// the caller owns.
	Keys(ctx context.Context, orgID string) ([]DemandKey, error)
	// KeyPage is the window [offset, offset+limit) of the keys that pass f, in the order of Keys,
	// and how many pass: a page of the series search without listing every key.
	KeyPage(ctx context.Context, orgID string, f DemandKeyFilter, offset, limit int) (keys []DemandKey, total int, err error)
	// Aggregate sums actual and forecasted demand over the query's rows, grouped as asked.
	Aggregate(ctx context.Context, orgID string, q DemandQuery) ([]DemandAggregate, error)
	Close() error
}

// SignalWrite is what a demand store did with one signal (DemandStore.AddSignals).
type SignalWrite uint8

// What a demand store did with a signal. The zero value is invalid.
const (
	SignalWritten SignalWrite = iota + 1 // added to its week
	SignalSeen                           // its SignalID was applied before: nothing changed
	SignalTooLate                        // its week is before SignalFloor: refused, nothing changed
)

// SignalDedupWeeks is how many weeks before the newest week of an organization's signals a signal
// is still accepted. A demand store remembers the ids of the signals of those weeks only (so that
// its memory grows with the signal rate times the window, not with every signal ever applied) and
// refuses an older signal rather than apply it without knowing whether it was applied before.
// Both stores decide by the same rule, from the signals they applied (never the clock), so a
// replay decides what the live write decided.
const SignalDedupWeeks = 13

// SignalFloor returns the Monday of the oldest week a signal may fall in when newestWeek is the
// Monday of the newest week of the organization's applied signals.
func SignalFloor(newestWeek time.Time) time.Time {
	return newestWeek.AddDate(0, 0, -7*SignalDedupWeeks)
}
