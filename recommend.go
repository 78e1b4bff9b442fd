package supplyplan

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// LocationStock is what the recommendation engine knows about one product at one location.
type LocationStock struct {
	LocationID   string
	OnHand       float64
	Reserved     float64
	ReorderPoint float64
	// InboundByWeek[w] is open purchase-order quantity arriving in week w of the window (week 0 is
	// the current week); weeks past its length (nil: no inbound at all) bring nothing.
	InboundByWeek []float64
	// Forecast[w] is the demand forecast of week w.
	Forecast []float64
}

// ProductStock is one product across locations.
type ProductStock struct {
	ProductID string
	// PriceMargin is unit price minus unit cost when the catalog has both.
	PriceMargin *float64
	Locations   []LocationStock
}

// RecommendOptions tune the engine.
type RecommendOptions struct {
	WindowWeeks           int     // projection window (default 8)
	LeadTimeDays          float64 // transfer lead time (default 3)
	MinStockDifferencePct float64 // minimum relative coverage gap source vs destination (default 0.2)
	RequirePositiveROI    bool
	UnitMargin            *float64 // overrides the product's price - cost
	TransferCostPerUnit   float64  // cost of moving one unit (default 0.5)
}

// Defaults fills zero fields.
func (o RecommendOptions) Defaults() RecommendOptions {
	if o.WindowWeeks <= 0 {
		o.WindowWeeks = 8
	}
	if o.LeadTimeDays <= 0 {
		o.LeadTimeDays = 3
	}
	if o.TransferCostPerUnit < 0 {
		o.TransferCostPerUnit = 0
	}
	return o
}

// Proposal is a recommendation the engine found, before it becomes a stored Recommendation.
type Proposal struct {
	ProductID, Source, Dest string
	Quantity                float64
	Priority                Priority
	ROI                     *float64
	Reason                  string
	Explanation             Explanation
}

// simResult is a daily projection of one location over the window.
type simResult struct {
	daysToStockout *float64
	unmet          float64 // demand not served (lost sales)
	end            float64 // stock at the end (lost-sales projection, never negative)
	minBackorder   float64 // lowest stock of the backorder projection (may be negative)
}

// simulate projects available stock day by day: inbound arrives at the start of its week, demand is
// spread evenly over the week's days, and extra arrives at day extraDay (negative extra leaves at
// day 0). Unmet demand is lost (the stock never goes below zero) for unmet and end; minBackorder
// follows the same flows without that floor.
func simulate(l LocationStock, weeks int, extra float64, extraDay float64) simResult {
	stock := l.OnHand - l.Reserved
	back := stock
	var r simResult
	r.minBackorder = math.Inf(1)
	if extra < 0 {
		stock += extra
		back += extra
	}
	arrival := int(math.Ceil(extraDay))
	for d := 0; d < weeks*7; d++ {
		w := d / 7
		if d%7 == 0 && w < len(l.InboundByWeek) {
			stock += l.InboundByWeek[w]
			back += l.InboundByWeek[w]
		}
		if extra > 0 && d == arrival {
			stock += extra
			back += extra
		}
		var demand float64
		if w < len(l.Forecast) {
			demand = math.Max(l.Forecast[w], 0) / 7
		}
		back -= demand
		r.minBackorder = math.Min(r.minBackorder, back)
		if stock >= demand {
			stock -= demand
			if stock <= 1e-9 && demand > 0 && r.daysToStockout == nil {
				v := float64(d + 1)
				r.daysToStockout = &v
			}
			continue
		}
		if r.daysToStockout == nil && demand > 0 {
			v := float64(d) + math.Max(stock, 0)/demand
			r.daysToStockout = &v
		}
		r.unmet += demand - math.Max(stock, 0)
		stock = 0
	}
	if math.IsInf(r.minBackorder, 1) {
		r.minBackorder = back
	}
	r.end = stock
	return r
}

func sumWeeks(v []float64, n int) float64 {
	var t float64
	for i := 0; i < n && i < len(v); i++ {
		t += v[i]
	}
	return t
}

// coverage is available stock over what the location needs in the window (forecast + reorder
// point); 10 when it needs nothing.
func coverage(l LocationStock, weeks int) float64 {
	need := sumWeeks(l.Forecast, weeks) + l.ReorderPoint
	if need <= 0 {
		return 10
	}
	return math.Max(l.OnHand-l.Reserved+sumWeeks(l.InboundByWeek, weeks), 0) / need
}

func weeksOfCover(available, forecast float64, weeks int) *float64 {
	if forecast <= 0 {
		return nil
	}
	v := math.Max(available, 0) / (forecast / float64(weeks))
	v = math.Round(v*10) / 10
	return &v
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

func roundPtr(p *float64) *float64 {
	if p == nil {
		return nil
	}
	v := round1(*p)
	return &v
}

// ProposeTransfers finds the moves that fix each location heading below its reorder point (or to a
// stockout) from locations with stock to spare, never taking a source below its reorder point plus
// its own forecast over the window.
func ProposeTransfers(p ProductStock, opt RecommendOptions) []Proposal {
	opt = opt.Defaults()
	weeks := opt.WindowWeeks
	type loc struct {
		s       LocationStock
		base    simResult
		need    float64
		surplus float64
		cov     float64
	}
	locs := make([]*loc, 0, len(p.Locations))
	for _, s := range p.Locations {
		l := &loc{s: s, base: simulate(s, weeks, 0, 0), cov: coverage(s, weeks)}
		// Need: what keeps the projection at or above the reorder point through the window.
		l.need = math.Max(0, s.ReorderPoint-l.base.minBackorder)
		if l.need < 1e-6 {
			l.need = 0
		}
		// Surplus: what can leave now while the projection stays at or above the reorder point.
		l.surplus = math.Max(0, math.Min(s.OnHand-s.Reserved, l.base.minBackorder-s.ReorderPoint))
		locs = append(locs, l)
	}
	dests := make([]*loc, 0)
	for _, l := range locs {
		if l.need >= 1-1e-6 {
			dests = append(dests, l)
		}
	}
	slices.SortFunc(dests, func(a, b *loc) int {
		ad, bd := math.Inf(1), math.Inf(1)
		if a.base.daysToStockout != nil {
			ad = *a.base.daysToStockout
		}
		if b.base.daysToStockout != nil {
			bd = *b.base.daysToStockout
		}
		if c := cmp.Compare(ad, bd); c != 0 {
			return c
		}
		if c := cmp.Compare(b.need, a.need); c != 0 {
			return c
		}
		return cmp.Compare(a.s.LocationID, b.s.LocationID)
	})
	sources := make([]*loc, 0)
	for _, l := range locs {
		if l.surplus >= 1-1e-6 {
			sources = append(sources, l)
		}
	}
	slices.SortFunc(sources, func(a, b *loc) int {
		if c := cmp.Compare(b.surplus, a.surplus); c != 0 {
			return c
		}
		return cmp.Compare(a.s.LocationID, b.s.LocationID)
	})
	margin, marginSource := opt.UnitMargin, "request"
	if margin == nil {
		margin, marginSource = p.PriceMargin, "product price - cost"
	}
	if margin == nil {
		marginSource = "unknown"
	}
	var out []Proposal
	for _, d := range dests {
		remaining := d.need
		for _, s := range sources {
			if remaining < 1e-6 {
				break
			}
			if s == d || s.surplus < 1-1e-6 {
				continue
			}
			diff := 1.0
			if s.cov > 0 {
				diff = (s.cov - d.cov) / s.cov
			}
			if s.cov <= d.cov || diff < opt.MinStockDifferencePct {
				continue
			}
			// Whole units; 1e-6 absorbs float noise of the daily projection (80 may sum to 79.9999999).
			q := math.Floor(math.Min(math.Ceil(remaining-1e-6), s.surplus+1e-6))
			if q < 1 {
				continue
			}
			after := simulate(d.s, weeks, q, opt.LeadTimeDays)
			srcAfter := simulate(s.s, weeks, -q, 0)
			lost := math.Max(0, d.base.unmet-after.unmet)
			cost := q * opt.TransferCostPerUnit
			var roi, saved *float64
			if margin != nil {
				v := lost * *margin
				saved = &v
				if cost > 0 {
					r := (v - cost) / cost
					roi = &r
				}
			}
			positive := saved != nil && *saved > cost
			if opt.RequirePositiveROI && !positive {
				continue
			}
			fSrc, fDst := sumWeeks(s.s.Forecast, weeks), sumWeeks(d.s.Forecast, weeks)
			prop := Proposal{ProductID: p.ProductID, Source: s.s.LocationID, Dest: d.s.LocationID, Quantity: q,
				Priority: PriorityFor(d.base.daysToStockout), ROI: roundPtr(roi)}
			prop.Explanation = Explanation{
				Source: position(s.s, weeks, fSrc, s.base, srcAfter, -q), Destination: position(d.s, weeks, fDst, d.base, after, q),
				WindowWeeks: weeks, LeadTimeDays: opt.LeadTimeDays, Shortfall: round1(d.need), Surplus: round1(s.surplus),
				StockDifferencePct: round1(diff*100) / 100, LostSalesAvoided: round1(lost), UnitMargin: margin,
				UnitMarginSource: marginSource, TransferCostPerUnit: opt.TransferCostPerUnit, TransferCost: round1(cost),
				MarginSaved: roundPtr(saved),
				Formula:     "estimatedROI = (lostSalesAvoided * unitMargin - quantity * transferCostPerUnit) / (quantity * transferCostPerUnit)",
			}
			prop.Reason = reasonText(prop)
			out = append(out, prop)
			s.surplus -= q
			remaining -= q
		}
	}
	return out
}

func position(l LocationStock, weeks int, forecast float64, before, after simResult, delta float64) StockPosition {
	avail := l.OnHand - l.Reserved
	return StockPosition{LocationID: l.LocationID, OnHand: l.OnHand, Reserved: l.Reserved, Available: avail,
		Inbound: sumWeeks(l.InboundByWeek, weeks), ReorderPoint: l.ReorderPoint, Forecast: round1(forecast),
		WeeksOfCoverBefore: weeksOfCover(avail, forecast, weeks), WeeksOfCoverAfter: weeksOfCover(avail+delta, forecast, weeks),
		DaysToStockoutBefore: roundPtr(before.daysToStockout), DaysToStockoutAfter: roundPtr(after.daysToStockout),
		ProjectedEndBefore: round1(before.end), ProjectedEndAfter: round1(after.end)}
}

// reasonText explains a proposal in plain words with its numbers.
func reasonText(p Proposal) string {
	e := p.Explanation
	d, s := e.Destination, e.Source
	var b strings.Builder
	if d.DaysToStockoutBefore != nil {
		fmt.Fprintf(&b, "%s runs out of %s in about %s days: %s available", p.Dest, p.ProductID, describeQty(*d.DaysToStockoutBefore), describeQty(d.Available))
	} else {
		fmt.Fprintf(&b, "%s falls below its reorder point of %s for %s: %s available", p.Dest, describeQty(d.ReorderPoint), p.ProductID, describeQty(d.Available))
	}
	if d.Inbound > 0 {
		fmt.Fprintf(&b, " plus %s inbound", describeQty(d.Inbound))
	}
	fmt.Fprintf(&b, " against a forecast of %s over the next %d weeks. ", describeQty(d.Forecast), e.WindowWeeks)
	fmt.Fprintf(&b, "%s has %s available", s.LocationID, describeQty(s.Available))
	if s.WeeksOfCoverBefore != nil {
		fmt.Fprintf(&b, " (%s weeks of cover)", describeQty(*s.WeeksOfCoverBefore))
	}
	fmt.Fprintf(&b, " and can spare %s while staying above its reorder point of %s. ", describeQty(e.Surplus), describeQty(s.ReorderPoint))
	fmt.Fprintf(&b, "Moving %s units", describeQty(p.Quantity))
	if d.DaysToStockoutBefore != nil && d.DaysToStockoutAfter == nil {
		b.WriteString(" avoids the stockout")
	} else if d.DaysToStockoutAfter != nil && d.DaysToStockoutBefore != nil && *d.DaysToStockoutAfter > *d.DaysToStockoutBefore {
		fmt.Fprintf(&b, " delays the stockout to day %s", describeQty(*d.DaysToStockoutAfter))
	} else {
		b.WriteString(" restores the reorder point")
	}
	if e.LostSalesAvoided > 0 {
		fmt.Fprintf(&b, " and saves about %s units of sales", describeQty(e.LostSalesAvoided))
	}
	if p.ROI != nil && e.MarginSaved != nil && e.UnitMargin != nil {
		fmt.Fprintf(&b, "; margin saved %.2f (at %.2f per unit) against a transfer cost of %.2f: ROI %.1f.", *e.MarginSaved, *e.UnitMargin, e.TransferCost, *p.ROI)
	} else {
		b.WriteString("; ROI unknown (no unit margin: pass unitMargin or set the product's price and cost).")
	}
	return b.String()
}
