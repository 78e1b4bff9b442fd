package supplyplan

import (
	"encoding/json"
	"math"
	"strconv"
)

// QuantityDecimals is the precision of quantities (units of demand, forecasts, their totals and
// deltas) in API output: they are rounded half away from zero to 0.01 unit. Ratios (lifts, event
// weights, channel shares, accuracy metrics) are rounded to RatioDecimals.
const (
	QuantityDecimals = 2
	RatioDecimals    = 4
)

// Quantity is a number of units as the API renders it: float64 inside, rounded to
// QuantityDecimals in JSON. Arithmetic on float64 leaves representation noise (a delta of two
// totals reads -1947.8799999999997); rounding where the value is rendered, the one place every
// response goes through, removes it whatever computed the value.
type Quantity float64

// MarshalJSON renders the quantity rounded to QuantityDecimals.
func (q Quantity) MarshalJSON() ([]byte, error) {
	v := RoundQuantity(float64(q))
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil, &json.UnsupportedValueError{Str: strconv.FormatFloat(v, 'g', -1, 64)}
	}
	return strconv.AppendFloat(nil, v, 'f', -1, 64), nil
}

// RoundQuantity rounds a quantity to QuantityDecimals (never -0).
func RoundQuantity(v float64) float64 { return roundTo(v, 100) }

// RoundRatio rounds a ratio to RatioDecimals (never -0).
func RoundRatio(v float64) float64 { return roundTo(v, 10000) }

func roundTo(v, scale float64) float64 {
	if math.IsNaN(v) || math.Abs(v) >= 1e15 { // no fraction left to round (and v*scale could overflow)
		return v
	}
	r := math.Round(v*scale) / scale
	if r == 0 {
		return 0
	}
	return r
}

// QuantityPtr returns a pointer to v as a Quantity (nil stays nil).
func QuantityPtr(v *float64) *Quantity {
	if v == nil {
		return nil
	}
	q := Quantity(*v)
	return &q
}
