package supplyplan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"
)

// AlertThresholds are the operator-tunable limits of alert evaluation (docs/alerts.md). The JSON
// form is the --alert-thresholds file; absent fields keep their defaults.
type AlertThresholds struct {
	// RateWeeks is how many complete weeks of history give the weekly demand rate when no
	// forecast is available (a younger series uses the weeks it has).
	RateWeeks int `json:"rateWeeks"`
	// StockoutHorizonWeeks: a stockout counts only with forecast demand over these weeks.
	StockoutHorizonWeeks int `json:"stockoutHorizonWeeks"`
	// DefaultLeadTimeDays applies to products whose suppliers state no lead time.
	DefaultLeadTimeDays int `json:"defaultLeadTimeDays"`
	// LowATPReleasePct: lowAtp clears once projected ATP is at least reorderPoint*(1+this).
	LowATPReleasePct float64 `json:"lowAtpReleasePct"`
	// DeviationBiasWeeks complete weeks with errors of one sign and a relative bias of at least
	// DeviationBiasPct (clearing below DeviationBiasReleasePct) make a forecastDeviation.
	DeviationBiasWeeks      int     `json:"deviationBiasWeeks"`
	DeviationBiasPct        float64 `json:"deviationBiasPct"`
	DeviationBiasReleasePct float64 `json:"deviationBiasReleasePct"`
	// ExpiryLookaheadDays: only lots expiring within this many days are considered.
	ExpiryLookaheadDays int `json:"expiryLookaheadDays"`
	// SlowMovingWeeks without any demand make stock slow-moving.
	SlowMovingWeeks int `json:"slowMovingWeeks"`
	// OverstockCoverWeeks of cover make an overstock; it clears below OverstockReleaseWeeks.
	OverstockCoverWeeks   float64 `json:"overstockCoverWeeks"`
	OverstockReleaseWeeks float64 `json:"overstockReleaseWeeks"`
	// A week's demand is a spike when it is at least SpikeMinUnits, SpikeFactor times the mean of
	// the SpikeBaselineWeeks before it, and SpikeSigma standard deviations above that mean.
	SpikeBaselineWeeks int     `json:"spikeBaselineWeeks"`
	SpikeFactor        float64 `json:"spikeFactor"`
	SpikeSigma         float64 `json:"spikeSigma"`
	SpikeMinUnits      float64 `json:"spikeMinUnits"`
	// StockoutRiskDays of cover or less (with stock left) emit demand_signal.stockout_risk;
	// it clears above StockoutRiskReleaseDays.
	StockoutRiskDays        float64 `json:"stockoutRiskDays"`
	StockoutRiskReleaseDays float64 `json:"stockoutRiskReleaseDays"`
	// MaxDeliveredPerEvaluation caps the alerts one evaluation of a tenant sends (the most severe
	// first); the others are kept in history, marked suppressed. 0: no cap.
	MaxDeliveredPerEvaluation int `json:"maxDeliveredPerEvaluation"`
	// Money at stake (unit price or cost times units) that raises severity by one, two or three
	// levels.
	ValueLow    float64 `json:"valueLow"`
	ValueMedium float64 `json:"valueMedium"`
	ValueHigh   float64 `json:"valueHigh"`
}

// DefaultAlertThresholds returns the documented defaults.
func DefaultAlertThresholds() AlertThresholds {
	return AlertThresholds{RateWeeks: 8, StockoutHorizonWeeks: 2, DefaultLeadTimeDays: 14, LowATPReleasePct: 0.1,
		DeviationBiasWeeks: 4, DeviationBiasPct: 0.25, DeviationBiasReleasePct: 0.1, ExpiryLookaheadDays: 90,
		SlowMovingWeeks: 8, OverstockCoverWeeks: 26, OverstockReleaseWeeks: 22, SpikeBaselineWeeks: 8,
		SpikeFactor: 2, SpikeSigma: 3, SpikeMinUnits: 10, StockoutRiskDays: 7, StockoutRiskReleaseDays: 10,
		MaxDeliveredPerEvaluation: 50, ValueLow: 100, ValueMedium: 1000, ValueHigh: 10000}
}

// ParseAlertThresholds reads a thresholds file over the defaults (unknown fields are an error).
func ParseAlertThresholds(b []byte) (AlertThresholds, error) {
	th := DefaultAlertThresholds()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&th); err != nil {
		return th, fmt.Errorf("alert thresholds: %w", err)
	}
	return th, th.Validate()
}

// Validate checks that the thresholds make sense together.
func (th AlertThresholds) Validate() error {
	switch {
	case th.RateWeeks < 1 || th.StockoutHorizonWeeks < 1 || th.DeviationBiasWeeks < 2 || th.SlowMovingWeeks < 1 || th.SpikeBaselineWeeks < 2:
		return fmt.Errorf("alert thresholds: week counts must be positive (deviationBiasWeeks and spikeBaselineWeeks at least 2)")
	case th.DefaultLeadTimeDays < 0 || th.ExpiryLookaheadDays < 0 || th.MaxDeliveredPerEvaluation < 0:
		return fmt.Errorf("alert thresholds: day counts must not be negative")
	case th.OverstockReleaseWeeks > th.OverstockCoverWeeks || th.DeviationBiasReleasePct > th.DeviationBiasPct ||
		th.StockoutRiskReleaseDays < th.StockoutRiskDays || th.LowATPReleasePct < 0:
		return fmt.Errorf("alert thresholds: each release threshold must lie on the clear side of its trigger")
	case !(th.ValueLow <= th.ValueMedium && th.ValueMedium <= th.ValueHigh):
		return fmt.Errorf("alert thresholds: valueLow <= valueMedium <= valueHigh")
	}
	return nil
}

// EvalItem is one sku-location with what evaluation needs to know about it.
type EvalItem struct {
	Product *Product
	Level   *InventoryLevel
	// LeadTimeDays is the replenishment lead time; InboundDue the stock expected within it (open
	// purchase orders, transfers in transit). Promised is what available-to-promise takes off
	// besides the level's quantityReserved: the reservation ledger's holds, backorders promised
	// from those receipts, protected safety stock (TenantState.LowATPInputs), so that available −
	// Promised + InboundDue is the ledger's ATP at the end of the lead time.
	LeadTimeDays int
	InboundDue   float64
	Promised     float64
	// History is the weekly demand of every channel together, oldest first.
	History []WeekValue
	// Forecast, when the forecast engine is available, starts at the current week.
	Forecast *SeriesForecast
}

// EvalSeries is one stored demand series (sku, location, channel) for forecast deviation and
// spikes.
type EvalSeries struct {
	Key     DemandKey
	Product *Product
	History []WeekValue
	// LastWeek is the forecast of the last complete week made with the history before it (from
	// the forecast engine; nil without one).
	LastWeek *SeriesForecast
}

// Condition is one alert condition (or webhook-only signal condition) found by evaluation.
type Condition struct {
	Key      AlertKey
	State    CondState
	Severity Severity
	Message  string
	Value    *float64
	// Data is the payload of webhook-only conditions (demand_signal.*).
	Data map[string]any
}

// Urgency levels feeding severity.
const (
	urgencyLow = iota
	urgencyMedium
	urgencyHigh
	urgencyImmediate
)

// SeverityOf combines urgency (0..3) with the money at stake: the value raises the level by 0
// to 3 steps (1 when no price is known); a total of 5 or more is CRITICAL, 4 HIGH, 2-3 MEDIUM.
func (th AlertThresholds) SeverityOf(urgency int, value float64, priced bool) Severity {
	v := 1
	if priced {
		switch {
		case value >= th.ValueHigh:
			v = 3
		case value >= th.ValueMedium:
			v = 2
		case value >= th.ValueLow:
			v = 1
		default:
			v = 0
		}
	}
	switch s := urgency + v; {
	case s >= 5:
		return SeverityCritical
	case s >= 4:
		return SeverityHigh
	case s >= 2:
		return SeverityMedium
	}
	return SeverityLow
}

func price(p *Product) (float64, bool) {
	switch {
	case p == nil:
	case p.UnitPrice != nil:
		return *p.UnitPrice, true
	case p.UnitCost != nil:
		return *p.UnitCost, true
	}
	return 0, false
}

func cost(p *Product) (float64, bool) {
	if p != nil && p.UnitCost != nil {
		return *p.UnitCost, true
	}
	return price(p)
}

func round2Ptr(v float64) *float64 { v = math.Round(v*100) / 100; return &v }

// completeWeeks returns the history weeks before the current week.
func completeWeeks(h []WeekValue, current time.Time) []WeekValue {
	i, _ := slices.BinarySearchFunc(h, current, func(w WeekValue, t time.Time) int { return w.Week.Compare(t) })
	return h[:i]
}

// weekly sums the actual demand of the n weeks before current (missing weeks are zero).
func weeklySum(h []WeekValue, current time.Time, n int) float64 {
	from := current.AddDate(0, 0, -7*n)
	var s float64
	for _, w := range h {
		if !w.Week.Before(from) && w.Week.Before(current) {
			s += w.Actual
		}
	}
	return s
}

// WeeklyRate is the demand per week used by evaluation: the forecast over the lead time when the
// engine gave one, else the mean of the last RateWeeks complete weeks (fewer for a young series).
func (th AlertThresholds) WeeklyRate(it EvalItem, now time.Time) float64 {
	if f := it.Forecast; f != nil && len(f.Quantity) > 0 {
		n := max(1, min(len(f.Quantity), (it.LeadTimeDays+6)/7))
		return math.Max(0, f.Total(n)/float64(n))
	}
	cur := WeekStart(now)
	h := completeWeeks(it.History, cur)
	if len(h) == 0 {
		return 0
	}
	age := int(cur.Sub(h[0].Week).Hours()/24/7 + 0.5)
	n := max(1, min(th.RateWeeks, age))
	return math.Max(0, weeklySum(h, cur, n)/float64(n))
}

// EvaluateItem appends the conditions of one sku-location: stockout, lowAtp, expiry, slowMoving,
// overstock and the demand_signal.stockout_risk signal.
func (th AlertThresholds) EvaluateItem(it EvalItem, now time.Time, out []Condition) []Condition {
	lvl, p := it.Level, it.Product
	if lvl == nil || p == nil {
		return out
	}
	key := func(kind AlertKind) AlertKey {
		return AlertKey{Kind: string(kind), Product: p.ID, Location: lvl.LocationID}
	}
	rate := th.WeeklyRate(it, now)
	daily := rate / 7
	avail := lvl.Available()
	unitPrice, priced := price(p)
	unitCost, costed := cost(p)
	name := p.SKU
	if name == "" {
		name = p.ID
	}

	// stockout: nothing available while demand is forecast.
	horizon := rate * float64(th.StockoutHorizonWeeks)
	if it.Forecast != nil && len(it.Forecast.Quantity) > 0 {
		horizon = it.Forecast.Total(th.StockoutHorizonWeeks)
	}
	stockout := avail <= 0 && horizon > 0
	if stockout {
		v := rate * unitPrice
		out = append(out, Condition{Key: key(AlertStockout), State: CondOn, Value: round2Ptr(v),
			Severity: th.SeverityOf(urgencyImmediate, v, priced),
			Message: fmt.Sprintf("Stockout: %s at %s has %g available with %.1f units/week of demand forecast",
				name, lvl.LocationID, avail, rate)})
	}

	// lowAtp: available-to-promise over the lead time below the reorder point.
	lt := it.LeadTimeDays
	atp := avail - it.Promised + it.InboundDue // the ledger's available-to-promise at the lead time
	projected := atp - daily*float64(lt)
	rp := lvl.ReorderPoint
	if !stockout && (rp > 0 || daily > 0) {
		st := CondOff
		switch {
		case projected < rp:
			st = CondOn
		case projected < rp*(1+th.LowATPReleasePct):
			st = CondHold
		}
		if st != CondOff {
			urg := urgencyLow
			if daily > 0 {
				switch days := (atp - rp) / daily; {
				case days <= 0:
					urg = urgencyImmediate
				case days <= 7:
					urg = urgencyHigh
				case days <= float64(lt):
					urg = urgencyMedium
				}
			} else if avail < rp {
				urg = urgencyMedium
			}
			short := math.Max(0, rp-projected)
			v := short * unitPrice
			out = append(out, Condition{Key: key(AlertLowATP), State: st, Value: round2Ptr(v), Severity: th.SeverityOf(urg, v, priced),
				Message: fmt.Sprintf("Low ATP: %s at %s will have %.1f available-to-promise over its %d-day lead time, below the reorder point %g",
					name, lvl.LocationID, projected, lt, rp)})
		}
	}

	// expiry: lots that will not sell through before they expire (first-expired-first-out).
	if c, ok := th.expiry(lvl, daily, now); ok {
		v := c.units * unitCost
		urg := urgencyLow
		switch {
		case c.days <= 0:
			urg = urgencyImmediate
		case c.days <= 7:
			urg = urgencyHigh
		case c.days <= 30:
			urg = urgencyMedium
		}
		out = append(out, Condition{Key: key(AlertExpiry), State: CondOn, Value: round2Ptr(v), Severity: th.SeverityOf(urg, v, costed),
			Message: fmt.Sprintf("Expiry: %.1f units of %s at %s will expire before they sell (lot %s expires in %.0f days)",
				c.units, name, lvl.LocationID, c.lot, c.days)})
	}

	// slowMoving: stock on hand and no demand for SlowMovingWeeks.
	if lvl.QuantityOnHand > 0 {
		cur := WeekStart(now)
		from := cur.AddDate(0, 0, -7*th.SlowMovingWeeks)
		h := completeWeeks(it.History, cur)
		old := (len(h) > 0 && !h[0].Week.After(from)) || (len(it.History) == 0 && !p.CreatedAt.IsZero() && !p.CreatedAt.After(from))
		if old && weeklySum(h, cur, th.SlowMovingWeeks) <= 0 {
			v := lvl.QuantityOnHand * unitCost
			out = append(out, Condition{Key: key(AlertSlowMoving), State: CondOn, Value: round2Ptr(v), Severity: th.SeverityOf(urgencyLow, v, costed),
				Message: fmt.Sprintf("Slow-moving: %g units of %s at %s and no demand for %d weeks",
					lvl.QuantityOnHand, name, lvl.LocationID, th.SlowMovingWeeks)})
		}
	}

	// overstock: cover above OverstockCoverWeeks (with some demand: none at all is slow-moving).
	if rate > 0 && avail > 0 {
		cover := avail / rate
		st := CondOff
		switch {
		case cover > th.OverstockCoverWeeks:
			st = CondOn
		case cover > th.OverstockReleaseWeeks:
			st = CondHold
		}
		if st != CondOff {
			excess := math.Max(0, avail-th.OverstockCoverWeeks*rate)
			v := excess * unitCost
			out = append(out, Condition{Key: key(AlertOverstock), State: st, Value: round2Ptr(v), Severity: th.SeverityOf(urgencyLow, v, costed),
				Message: fmt.Sprintf("Overstock: %s at %s covers %.1f weeks of demand (%g available, %.1f units/week)",
					name, lvl.LocationID, cover, avail, rate)})
		}
	}

	// demand_signal.stockout_risk: stock left but only a few days of cover at the current rate
	// (this week's demand so far counts when it runs above the rate).
	if avail > 0 {
		cur := WeekStart(now)
		if n := len(it.History); n > 0 && it.History[n-1].Week.Equal(cur) {
			elapsed := math.Max(1, now.Sub(cur).Hours()/24)
			daily = math.Max(daily, it.History[n-1].Actual/elapsed)
		}
		if daily > 0 {
			days := avail / daily
			st := CondOff
			switch {
			case days <= th.StockoutRiskDays:
				st = CondOn
			case days <= th.StockoutRiskReleaseDays:
				st = CondHold
			}
			if st != CondOff {
				out = append(out, Condition{Key: AlertKey{Kind: EventDemandStockoutRisk, Product: p.ID, Location: lvl.LocationID}, State: st,
					Data: map[string]any{"skuId": p.ID, "sku": p.SKU, "locationId": lvl.LocationID, "available": avail,
						"dailyDemand": math.Round(daily*100) / 100, "daysOfCover": math.Round(days*10) / 10,
						"inbound": it.InboundDue, "leadTimeDays": lt}})
			}
		}
	}
	return out
}

type expiryRisk struct {
	units float64
	days  float64
	lot   string
}

// expiry simulates first-expired-first-out selling at daily units per day and returns the units
// of lots (expiring within the lookahead) that expire unsold, with the first such lot.
func (th AlertThresholds) expiry(lvl *InventoryLevel, daily float64, now time.Time) (expiryRisk, bool) {
	type lot struct {
		id   string
		qty  float64
		days float64
	}
	var lots []lot
	for _, l := range lvl.FEFOLots() { // what picks and shipments left of the lots
		if l.ExpiresAt != nil && l.Quantity > 0 {
			lots = append(lots, lot{l.LotID, l.Quantity, l.ExpiresAt.Sub(now).Hours() / 24})
		}
	}
	if len(lots) == 0 {
		return expiryRisk{}, false
	}
	slices.SortFunc(lots, func(a, b lot) int { return cmpFloat(a.days, b.days) })
	var r expiryRisk
	t := 0.0 // days of selling already used by earlier lots
	for _, l := range lots {
		start := math.Max(t, 0)
		var sellable float64
		if l.days > start && daily > 0 {
			sellable = math.Min(l.qty, (l.days-start)*daily)
		}
		risk := l.qty - sellable
		if daily > 0 {
			t = start + sellable/daily
		}
		if risk > 1e-9 && l.days <= float64(th.ExpiryLookaheadDays) {
			if r.units == 0 {
				r.days, r.lot = l.days, l.id
			}
			r.units += risk
		}
	}
	return r, r.units > 0
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// EvaluateSeries appends the conditions of one demand series: forecastDeviation (last week
// outside the forecast interval, or a persistent bias of the stored forecasts) and the
// demand_signal.spike_detected signal.
func (th AlertThresholds) EvaluateSeries(s EvalSeries, now time.Time, out []Condition) []Condition {
	cur := WeekStart(now)
	h := completeWeeks(s.History, cur)
	name := s.Key.SKU
	if s.Product != nil && s.Product.SKU != "" {
		name = s.Product.SKU
	}
	unitPrice, priced := price(s.Product)
	key := AlertKey{Kind: string(AlertForecastDeviation), Product: s.Key.SKU, Location: s.Key.Location, Channel: s.Key.Channel}
	last := cur.AddDate(0, 0, -7)
	var dev *Condition
	// Interval: last complete week's actual outside the engine's prediction interval.
	if f := s.LastWeek; f != nil && len(f.Lower) > 0 && len(f.Upper) > 0 && f.Start.Equal(last) &&
		len(h) > 0 && h[len(h)-1].Week.Equal(last) {
		a := h[len(h)-1].Actual
		if a < f.Lower[0] || a > f.Upper[0] {
			off := a - f.Quantity[0]
			v := math.Abs(off) * unitPrice
			dev = &Condition{Key: key, State: CondOn, Value: round2Ptr(v), Severity: th.SeverityOf(urgencyMedium, v, priced),
				Message: fmt.Sprintf("Forecast deviation: %s at %s (%s) sold %g last week, outside the forecast interval %.1f to %.1f",
					name, s.Key.Location, s.Key.Channel, a, f.Lower[0], f.Upper[0])}
		}
	}
	// Bias: DeviationBiasWeeks consecutive complete weeks, all errors of one sign.
	if n := th.DeviationBiasWeeks; dev == nil && len(h) >= n && h[len(h)-1].Week.Equal(last) &&
		h[len(h)-n].Week.Equal(cur.AddDate(0, 0, -7*n)) {
		var sumErr, sumF float64
		pos, neg := 0, 0
		for _, w := range h[len(h)-n:] {
			e := w.Actual - w.Forecasted
			sumErr += e
			sumF += w.Forecasted
			switch {
			case e > 0:
				pos++
			case e < 0:
				neg++
			}
		}
		if sumF > 0 {
			bias := sumErr / sumF
			st := CondOff
			switch {
			case (pos == n || neg == n) && math.Abs(bias) >= th.DeviationBiasPct:
				st = CondOn
			case math.Abs(bias) >= th.DeviationBiasReleasePct:
				st = CondHold
			}
			if st != CondOff {
				dir := "above"
				if bias < 0 {
					dir = "below"
				}
				v := math.Abs(sumErr) * unitPrice
				dev = &Condition{Key: key, State: st, Value: round2Ptr(v), Severity: th.SeverityOf(urgencyMedium, v, priced),
					Message: fmt.Sprintf("Forecast deviation: %s at %s (%s) sold %.0f%% %s forecast over the last %d weeks",
						name, s.Key.Location, s.Key.Channel, math.Abs(bias)*100, dir, n)}
			}
		}
	}
	if dev != nil {
		out = append(out, *dev)
	}

	// Spike: this week so far, or last week, far above the weeks before it.
	for _, wk := range []time.Time{cur, last} {
		i, found := slices.BinarySearchFunc(s.History, wk, func(w WeekValue, t time.Time) int { return w.Week.Compare(t) })
		if !found {
			continue
		}
		a := s.History[i].Actual
		if a < th.SpikeMinUnits {
			continue
		}
		from := wk.AddDate(0, 0, -7*th.SpikeBaselineWeeks)
		var xs []float64
		for _, w := range s.History[:i] {
			if !w.Week.Before(from) {
				xs = append(xs, w.Actual)
			}
		}
		if len(xs) < 2 {
			continue
		}
		for len(xs) < th.SpikeBaselineWeeks && !s.History[0].Week.After(from) {
			xs = append(xs, 0) // weeks without rows inside an established series sold nothing
		}
		mean, sd := meanSD(xs)
		if a > mean*th.SpikeFactor && a > mean+th.SpikeSigma*sd {
			out = append(out, Condition{Key: AlertKey{Kind: EventDemandSpike, Product: s.Key.SKU, Location: s.Key.Location,
				Channel: s.Key.Channel, Qualifier: wk.Format("2006-01-02")}, State: CondOn,
				Data: map[string]any{"skuId": s.Key.SKU, "locationId": s.Key.Location, "channel": s.Key.Channel,
					"weekStarting": wk.Format("2006-01-02"), "actualDemand": a, "baselineMean": math.Round(mean*100) / 100,
					"baselineStdDev": math.Round(sd*100) / 100, "factor": math.Round(a/math.Max(mean, 1e-9)*100) / 100}})
			break
		}
	}
	return out
}

func meanSD(xs []float64) (float64, float64) {
	var s float64
	for _, x := range xs {
		s += x
	}
	m := s / float64(len(xs))
	var v float64
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return m, math.Sqrt(v / float64(len(xs)-1))
}

// SeverityRank orders severities: CRITICAL 0 ... LOW 3.
func SeverityRank(s Severity) int {
	for i, v := range Severities {
		if v == s {
			return i
		}
	}
	return len(Severities)
}
