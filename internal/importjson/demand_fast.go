package importjson

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/jsonscan"
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
	i := jsonscan.SkipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i++
	for {
		i = jsonscan.SkipWS(b, i)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case '}':
			return jsonscan.SkipWS(b, i+1) == len(b)
		case ',':
			i++
			continue
		case '"':
		default:
			return false
		}
		ks := i + 1
		i = jsonscan.SkipString(b, i)
		if i > len(b) {
			return false
		}
		key := b[ks : i-1]
		i = jsonscan.SkipWS(b, i)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = jsonscan.SkipWS(b, i+1)
		if i >= len(b) {
			return false
		}
		vs := i
		i = jsonscan.SkipValue(b, i)
		v := b[vs:i]
		if len(v) == 4 && string(v) == "null" {
			continue
		}
		if !knownDemandKey(key) && foldsToDemandKey(key) {
			return false // encoding/json matches keys case-insensitively: let it decide
		}
		switch string(key) {
		case "skuId", "locationId", "weekStarting", "channel":
			if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' || bytes.IndexByte(v, '\\') >= 0 || !utf8.Valid(v) {
				return false // escapes and invalid UTF-8 (replaced by U+FFFD) are encoding/json's job
			}
			s := in.of(v[1 : len(v)-1])
			switch string(key) {
			case "skuId":
				slab.sku, row.SKU = s, &slab.sku
			case "locationId":
				slab.loc, row.LocationID = s, &slab.loc
			case "weekStarting":
				slab.week, row.WeekStarting = s, &slab.week
			default:
				slab.ch, row.Channel = s, &slab.ch
			}
		case "actualDemand", "forecastedDemand", "onHand":
			if len(v) == 0 || v[0] == '"' || v[0] == '{' || v[0] == '[' || v[0] == 't' || v[0] == 'f' {
				return false
			}
			f, err := strconv.ParseFloat(string(v), 64)
			if err != nil {
				return false
			}
			switch string(key) {
			case "actualDemand":
				slab.actual, row.ActualDemand = f, &slab.actual
			case "forecastedDemand":
				slab.fcst, row.ForecastedDemand = f, &slab.fcst
			default:
				slab.onHand, row.OnHand = f, &slab.onHand
			}
		case "stockout":
			switch string(v) {
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
}

var demandKeys = []string{"skuId", "locationId", "weekStarting", "channel", "actualDemand", "forecastedDemand", "onHand", "stockout"}

func knownDemandKey(k []byte) bool {
	for _, d := range demandKeys {
		if string(k) == d {
			return true
		}
	}
	return false
}

func foldsToDemandKey(k []byte) bool {
	for _, d := range demandKeys {
		if bytes.EqualFold(k, []byte(d)) {
			return true
		}
	}
	return bytes.IndexByte(k, '\\') >= 0
}
