// Package analytics holds demand history and what is computed from it. It implements
// supplyplan.DemandStore twice: EmbeddedStore (files in the data dir, the default) and ClickHouseStore
// (the distributed mode). Both share the validation and normalization in this file, so that they
// answer every query the same way (analytics/storetest runs one suite against both).
package analytics

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/supplyplan/supplyplan"
)

// Semantics shared by both stores (see demand.go in the root package for the contract):
//   - a row's or signal's empty channel is stored as supplyplan.ChannelAll;
//   - a row's Week is bucketed to its ISO Monday (UTC), as is a signal's OccurredAt;
//   - a query key with channel ChannelAll (or "") sums every stored channel of its sku and location,
//     and its week is a stockout when any channel's is;
//   - from and to are cut to their UTC day (a week counts when its Monday lies in [from, to]);
//   - a DemandQuery whose Channels contains ChannelAll does not filter by channel;
//   - Aggregate without GroupBy returns exactly one (possibly all-zero) aggregate; with GroupBy it
//     returns one per non-empty group, sorted by sku, location, channel, week.

const secondsPerDay = 86400

// dayOf returns the Unix day number of t's UTC date.
func dayOf(t time.Time) int32 {
	return int32(math.Floor(float64(t.Unix()) / secondsPerDay))
}

// dayTime returns midnight UTC of Unix day d.
func dayTime(d int32) time.Time { return time.Unix(int64(d)*secondsPerDay, 0).UTC() }

// weekDay returns the Unix day of the ISO Monday of t's week (UTC), as supplyplan.WeekStart
// does, without building times: day 0 (1970-01-01) was a Thursday.
func weekDay(t time.Time) int32 {
	d := int64(dayOf(t))
	return int32(d - ((d+3)%7+7)%7)
}

// normChannel maps the empty channel to ChannelAll.
func normChannel(c string) string {
	if c == "" {
		return supplyplan.ChannelAll
	}
	return c
}

// normKey is the stored form of a query or row key.
func normKey(k supplyplan.DemandKey) supplyplan.DemandKey {
	k.Channel = normChannel(k.Channel)
	return k
}

// dayRange turns a query's [from, to] into inclusive Unix days; zero times are unbounded.
func dayRange(from, to time.Time) (lo, hi int32) {
	lo, hi = math.MinInt32, math.MaxInt32
	if !from.IsZero() {
		lo = dayOf(from)
	}
	if !to.IsZero() {
		hi = dayOf(to)
	}
	return lo, hi
}

// minDay and maxDay bound the weeks a store accepts (years 1900 to 2200): outside that a date is a
// mistake, and ClickHouse's Date type cannot hold it.
var (
	minDay = dayOf(time.Date(1970, 1, 5, 0, 0, 0, 0, time.UTC))
	maxDay = dayOf(time.Date(2105, 12, 31, 0, 0, 0, 0, time.UTC))
)

// numberMsg is the message of a number out of supplyplan.MaxNumber: both stores accept what every
// entry point of the service accepts, so a row or signal that passed validation is never refused.
const numberMsg = "must be a finite number " + supplyplan.NumberRange

// validator collects field errors into one VALIDATION_ERROR.
type validator struct{ err *supplyplan.Error }

func (v *validator) add(field, msg string) {
	if v.err == nil {
		v.err = &supplyplan.Error{Code: supplyplan.EVALIDATION, Message: "Invalid demand data",
			Details: map[string][]string{}}
	}
	if len(v.err.Details) < 20 { // enough to fix the input; a million bad rows would not help
		v.err.Details[field] = append(v.err.Details[field], msg)
	}
}

func (v *validator) result() error {
	if v.err == nil {
		return nil
	}
	return v.err
}

func checkOrg(orgID string) error {
	if orgID == "" {
		return supplyplan.Errorf(supplyplan.EVALIDATION, "organization id is required")
	}
	return nil
}

const weekRangeMsg = "must lie in a week between 1970-01-05 and 2105-12-31"

func weekOK(t time.Time) bool {
	d := weekDay(t)
	return d >= minDay && d <= maxDay
}

// validateRows checks rows for storage; both stores accept exactly the same input.
func validateRows(orgID string, rows []supplyplan.DemandRow) error {
	if err := checkOrg(orgID); err != nil {
		return err
	}
	var v validator
	for i := range rows {
		r := &rows[i]
		if r.SKU != "" && r.Location != "" && !r.Week.IsZero() && weekOK(r.Week) && supplyplan.NumberOK(r.Actual) && supplyplan.NumberOK(r.Forecasted) {
			continue // the common case, without building field names
		}
		p := "rows[" + strconv.Itoa(i) + "]."
		if r.SKU == "" {
			v.add(p+"skuId", "is required")
		}
		if r.Location == "" {
			v.add(p+"locationId", "is required")
		}
		if r.Week.IsZero() {
			v.add(p+"weekStarting", "is required")
		} else if !weekOK(r.Week) {
			v.add(p+"weekStarting", weekRangeMsg)
		}
		if !supplyplan.NumberOK(r.Actual) {
			v.add(p+"actualDemand", numberMsg)
		}
		if !supplyplan.NumberOK(r.Forecasted) {
			v.add(p+"forecastedDemand", numberMsg)
		}
	}
	return v.result()
}

// validateSignals checks signals for storage.
func validateSignals(orgID string, signals []supplyplan.DemandSignal) error {
	if err := checkOrg(orgID); err != nil {
		return err
	}
	var v validator
	for i := range signals {
		s := &signals[i]
		if s.SignalID != "" && (s.OrganizationID == "" || s.OrganizationID == orgID) && s.SKU != "" && s.Location != "" &&
			!s.OccurredAt.IsZero() && weekOK(s.OccurredAt) && supplyplan.NumberOK(s.Quantity) {
			continue
		}
		p := "signals[" + strconv.Itoa(i) + "]."
		if s.SignalID == "" {
			v.add(p+"signalId", "is required")
		}
		if s.OrganizationID != "" && s.OrganizationID != orgID {
			v.add(p+"organizationId", "does not match the organization")
		}
		if s.SKU == "" {
			v.add(p+"skuId", "is required")
		}
		if s.Location == "" {
			v.add(p+"locationId", "is required")
		}
		if s.OccurredAt.IsZero() {
			v.add(p+"occurredAt", "is required")
		} else if !weekOK(s.OccurredAt) {
			v.add(p+"occurredAt", weekRangeMsg)
		}
		if !supplyplan.NumberOK(s.Quantity) {
			v.add(p+"quantity", numberMsg)
		}
	}
	return v.result()
}

// Group-by fields of a DemandQuery.
const (
	groupSKU = 1 << iota
	groupLocation
	groupChannel
	groupWeek
)

// parseGroupBy validates q.GroupBy into a bit set.
func parseGroupBy(groupBy []string) (int, error) {
	g := 0
	for _, f := range groupBy {
		switch f {
		case "sku":
			g |= groupSKU
		case "location":
			g |= groupLocation
		case "channel":
			g |= groupChannel
		case "week":
			g |= groupWeek
		default:
			return 0, &supplyplan.Error{Code: supplyplan.EVALIDATION, Message: "Invalid aggregate",
				Details: map[string][]string{"groupBy": {"unknown field " + strconv.Quote(f) +
					" (allowed: sku, location, channel, week)"}}}
		}
	}
	return g, nil
}

// channelFilter returns the channels a query selects, nil meaning every channel.
func channelFilter(channels []string) []string {
	if len(channels) == 0 || slices.Contains(channels, supplyplan.ChannelAll) || slices.Contains(channels, "") {
		return nil
	}
	return channels
}

// sortAggregates orders groups by sku, location, channel, week.
func sortAggregates(out []supplyplan.DemandAggregate) {
	slices.SortFunc(out, func(a, b supplyplan.DemandAggregate) int {
		return cmp.Or(cmp.Compare(a.SKU, b.SKU), cmp.Compare(a.Location, b.Location),
			cmp.Compare(a.Channel, b.Channel), a.Week.Compare(b.Week))
	})
}

// compareKeys orders keys by sku, location, channel.
func compareKeys(a, b supplyplan.DemandKey) int {
	return cmp.Or(cmp.Compare(a.SKU, b.SKU), cmp.Compare(a.Location, b.Location), cmp.Compare(a.Channel, b.Channel))
}
