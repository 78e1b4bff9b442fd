package forecast

import (
	"math"
	"time"

	"github.com/supplyplan/supplyplan"
)

// Event scopes (informational: the caller decides which events apply to a series, for instance
// with supplyplan.ExternalEvent.AppliesTo).
const (
	ScopeSeries   = "series"
	ScopeProduct  = "product"
	ScopeLocation = "location"
	ScopeOrg      = "org"
	ScopeGlobal   = "global"
)

const week = 7 * 24 * time.Hour

// EventOccurrence is one event that applies to the series being forecast, past or planned.
type EventOccurrence struct {
	ID   string `json:"id"`
	Type string `json:"type"` // supplyplan.EventType: PROMOTION, PRICE_CHANGE, HOLIDAY, ...
	// Mechanic refines the type for learning: events of the same Type and Mechanic share one
	// learned lift (a promotion's DEAL, FEATURE, DISPLAY; a holiday's name). Optional.
	Mechanic   string `json:"mechanic,omitempty"`
	Scope      string `json:"scope,omitempty"`
	ProductID  string `json:"productId,omitempty"`
	LocationID string `json:"locationId,omitempty"`
	// Start and End bound the event as a half-open time interval [Start, End): an event on the
	// whole of Monday to Sunday ends at the next Monday 00:00.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// LiftPct is the relative demand change of a full week (0.35 = +35%); nil: learned.
	LiftPct *float64 `json:"liftPct,omitempty"`
	// Stacking is MULTIPLICATIVE (default) or ADDITIVE.
	Stacking string `json:"stacking,omitempty"`
	// PriceChangePct is the relative price change of a PRICE_CHANGE event (-0.1 = 10% cheaper)
	// against the reference price; without LiftPct the lift is (1+PriceChangePct)^elasticity - 1
	// with a learned elasticity.
	PriceChangePct *float64 `json:"priceChangePct,omitempty"`
	// Intensity in [0, 1] scales the event like proration does (a feature ad in half the
	// store's circulars: 0.5). nil means 1.
	Intensity *float64 `json:"intensity,omitempty"`
}

// FromExternalEvent converts a stored event of the root package.
func FromExternalEvent(e supplyplan.ExternalEvent) EventOccurrence {
	o := EventOccurrence{ID: e.ID, Type: string(e.Type), Start: e.StartsAt, End: e.EndsAt,
		ProductID: e.ProductMasterID, LocationID: e.LocationID, Stacking: string(e.Stacking())}
	switch {
	case e.IsGlobal:
		o.Scope = ScopeGlobal
	case e.IsOrgWide:
		o.Scope = ScopeOrg
	case e.ProductMasterID != "" && e.LocationID != "":
		o.Scope = ScopeSeries
	case e.ProductMasterID != "":
		o.Scope = ScopeProduct
	default:
		o.Scope = ScopeLocation
	}
	if v := e.Value; v != nil {
		o.LiftPct, o.PriceChangePct = v.LiftPct, v.PriceChangePct
		o.Mechanic, o.Intensity = v.Mechanic, v.Intensity
	}
	return o
}

// weight is the share of the event in week [ws, ws+7d): the rule of supplyplan.EventWeight.
func (e *EventOccurrence) weight(ws time.Time) float64 {
	return supplyplan.EventWeight(e.Start, e.End, e.Intensity, ws)
}

// weeks returns the indexes [first, last] of the weeks (from start) the event overlaps, clipped
// to [0, n); first > last when none.
func (e *EventOccurrence) weeks(start time.Time, n int) (int, int) {
	if !e.End.After(e.Start) {
		return 0, -1
	}
	first := int(math.Floor(float64(e.Start.Sub(start)) / float64(week)))
	last := int(math.Ceil(float64(e.End.Sub(start))/float64(week))) - 1
	return max(first, 0), min(last, n-1)
}

func (e *EventOccurrence) additive() bool { return e.Stacking == string(supplyplan.StackAdditive) }

// elastic reports whether the event's lift comes from a price elasticity.
func (e *EventOccurrence) elastic() bool {
	return e.LiftPct == nil && e.PriceChangePct != nil
}

// priceTerm is log(1 + PriceChangePct), the regressor of an elasticity.
func (e *EventOccurrence) priceTerm() float64 {
	return math.Log1p(max(*e.PriceChangePct, -0.99))
}

// resolved is an event's lift for one series: given or learned.
type resolved struct {
	lift    float64
	learned bool
	active  bool   // false: no lift given and no lift model to learn it from
	level   string // LiftEstimate.Level of a learned lift
}

// resolve returns the full-week lift of each event for the series.
func resolve(events []EventOccurrence, lm *LiftModel, key SeriesKey, dst []resolved) []resolved {
	dst = dst[:0]
	for i := range events {
		e := &events[i]
		var r resolved
		switch {
		case e.LiftPct != nil:
			r = resolved{lift: *e.LiftPct, active: true}
		case lm != nil:
			est := lm.Estimate(e, key)
			r = resolved{lift: est.LiftPct, learned: true, active: true, level: est.Level}
		}
		dst = append(dst, r)
	}
	return dst
}

// multipliers writes the combined event multiplier of weeks [0, n) from start into dst, the lifts
// of each week stacked by the domain's rule (supplyplan.LiftStack).
func multipliers(start time.Time, n int, events []EventOccurrence, res []resolved, dst []float64, stacks []supplyplan.LiftStack) {
	for i := range n {
		stacks[i] = supplyplan.LiftStack{}
	}
	for i := range events {
		if !res[i].active {
			continue
		}
		e := &events[i]
		first, last := e.weeks(start, n)
		for t := first; t <= last; t++ {
			if w := e.weight(start.Add(time.Duration(t) * week)); w > 0 {
				stacks[t].Push(res[i].lift, w, e.additive())
			}
		}
	}
	for i := range n {
		dst[i] = stacks[i].Multiplier()
	}
}
