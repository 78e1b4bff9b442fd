package forecast

import (
	"math"
	"time"

	"github.com/supplyplan/supplyplan"
)

// LiftReport compares the lift planned for an event with the lift realised once its weeks have
// actuals.
type LiftReport struct {
	EventID string `json:"eventId"`
	// PlannedLiftPct is the event's full-week lift used for planning: given, or learned.
	PlannedLiftPct float64 `json:"plannedLiftPct"`
	Learned        bool    `json:"learned"`
	// PlannedEffectPct is the planned lift over the scored weeks: Σ base·(1+w·lift) / Σ base - 1,
	// where w is each week's proration × intensity.
	PlannedEffectPct float64 `json:"plannedEffectPct"`
	// RealisedLiftPct is Σ actual / Σ base - 1 over the scored weeks.
	RealisedLiftPct float64    `json:"realisedLiftPct"`
	Weeks           []LiftWeek `json:"weeks"`
}

// LiftWeek is one week of an event's report.
type LiftWeek struct {
	WeekStart time.Time `json:"weekStart"`
	Weight    float64   `json:"weight"` // proration × intensity
	// Base is the de-lifted baseline: the forecast made before the event started, with every
	// other event of the week applied but not this one.
	Base    float64 `json:"base"`
	Planned float64 `json:"planned"` // Base × (1 + Weight × PlannedLiftPct)
	Actual  float64 `json:"actual"`
}

// RealisedLift reports planned against realised lift for the event eventID of events. The base
// of each event week is forecast from the history before the event's first week (so the event
// cannot inflate it), with the other events applied; weeks without an actual (missing,
// stockout, or not yet in s) are left out. For a clean comparison pass lifts learned before the
// event (nil learns them from s's history before the event).
func RealisedLift(s Series, eventID string, events []EventOccurrence, lifts *LiftModel, opts Options) (LiftReport, error) {
	idx := -1
	for i := range events {
		if events[i].ID == eventID {
			idx = i
		}
	}
	if idx < 0 {
		return LiftReport{}, supplyplan.NotFound("event")
	}
	ev := events[idx]
	start := s.start()
	first, last := ev.weeks(start, math.MaxInt32)
	if first > last || first >= len(s.Values) {
		return LiftReport{}, supplyplan.Invalid("eventId", "the event has no week with history in the series")
	}
	if first == 0 {
		return LiftReport{}, supplyplan.Invalid("eventId", "the series has no history before the event")
	}
	others := make([]EventOccurrence, 0, len(events)-1)
	others = append(others, events[:idx]...)
	others = append(others, events[idx+1:]...)
	hist := s
	hist.Values = s.Values[:first]
	if s.Stockout != nil {
		hist.Stockout = s.Stockout[:first]
	}
	if lifts == nil && hasUnknownLift(events) {
		lifts = LearnLifts([]SeriesHistory{{Series: hist, Events: events}}, LiftOptions{})
	}
	opts.Horizon = last - first + 1
	fc, err := Forecast(hist, others, lifts, opts)
	if err != nil {
		return LiftReport{}, err
	}
	res := resolve(events[idx:idx+1], lifts, s.key(), nil)[0]
	rep := LiftReport{EventID: ev.ID, PlannedLiftPct: res.lift, Learned: res.learned}
	var sumBase, sumPlanned, sumActual float64
	for t := first; t <= last && t < len(s.Values); t++ {
		if s.missing(t) {
			continue
		}
		p := fc.Periods[t-first]
		w := ev.weight(p.WeekStart)
		lw := LiftWeek{WeekStart: p.WeekStart, Weight: w, Base: p.Quantity,
			Planned: p.Quantity * (1 + w*res.lift), Actual: s.Values[t]}
		rep.Weeks = append(rep.Weeks, lw)
		sumBase += lw.Base
		sumPlanned += lw.Planned
		sumActual += lw.Actual
	}
	if len(rep.Weeks) == 0 {
		return LiftReport{}, supplyplan.Invalid("eventId", "no week of the event has an actual yet")
	}
	if sumBase > 0 {
		rep.PlannedEffectPct = sumPlanned/sumBase - 1
		rep.RealisedLiftPct = sumActual/sumBase - 1
	}
	return rep, nil
}
