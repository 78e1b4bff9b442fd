package importjson

import (
	"github.com/supplyplan/supplyplan"
)

// interner deduplicates the strings of one chunk (SKUs, locations and channels repeat a lot).
type interner map[string]string

func (in interner) of(b []byte) string {
	if s, ok := in[string(b)]; ok {
		return s
	}
	s := string(b)
	in[s] = s
	return s
}

// demandSlab holds the values a chunk's DemandHistoryRow pointers point into (one allocation).
type demandSlab struct {
	sku, loc, week, ch   string
	actual, fcst, onHand float64
	stockout             bool
}

// decodeDemandFast decodes a plain demand-history row (string fields without escapes, numbers,
// booleans, nulls, unknown keys skipped) into slab and row; false means "use encoding/json".
func decodeDemandFast(b []byte, in interner, slab *demandSlab, row *supplyplan.DemandHistoryRow) bool {
	f := newFields(b, demandKeys)
	for f.next() {
		key, v := f.key, f.val
		null := len(v) == 4 && string(v) == "null"
		switch string(key) {
		case "skuId", "locationId", "weekStarting", "channel":
			var dst *string
			var field **string
			switch string(key) {
			case "skuId":
				dst, field = &slab.sku, &row.SKU
			case "locationId":
				dst, field = &slab.loc, &row.LocationID
			case "weekStarting":
				dst, field = &slab.week, &row.WeekStarting
			default:
				dst, field = &slab.ch, &row.Channel
			}
			if null {
				*field = nil
				continue
			}
			s, ok := plainString(v, in) // escapes and invalid UTF-8 (replaced by U+FFFD) are encoding/json's job
			if !ok {
				return false
			}
			*dst, *field = s, dst
		case "actualDemand", "forecastedDemand", "onHand":
			var dst *float64
			var field **float64
			switch string(key) {
			case "actualDemand":
				dst, field = &slab.actual, &row.ActualDemand
			case "forecastedDemand":
				dst, field = &slab.fcst, &row.ForecastedDemand
			default:
				dst, field = &slab.onHand, &row.OnHand
			}
			if null {
				*field = nil
				continue
			}
			f, ok := plainFloat(v)
			if !ok {
				return false
			}
			*dst, *field = f, dst
		case "stockout":
			switch string(v) {
			case "null":
				row.Stockout = nil
				continue
			case "true":
				slab.stockout = true
			case "false":
				slab.stockout = false
			default:
				return false
			}
			row.Stockout = &slab.stockout
		}
	}
	return f.ok()
}

var demandKeys = []string{"skuId", "locationId", "weekStarting", "channel", "actualDemand", "forecastedDemand", "onHand", "stockout"}
