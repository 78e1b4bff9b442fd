package forecast

import (
	"math"
	"time"

	"github.com/supplyplan/supplyplan"
)

// Grains of Aggregate.
const (
	GrainMonth   = "MONTH"
	GrainQuarter = "QUARTER"
)

// Bucket is a forecast summed over a month or a quarter.
type Bucket struct {
	Start    time.Time `json:"start"` // first day of the month or quarter
	End      time.Time `json:"end"`   // first day of the next one
	Baseline float64   `json:"baseline"`
	Quantity float64   `json:"quantity"`
	Lower    float64   `json:"lower"`
	Upper    float64   `json:"upper"`
	// Days is the number of the bucket's days the forecast covers; Partial is true when that is
	// less than the whole bucket.
	Days    int  `json:"days"`
	Partial bool `json:"partial"`
}

// Aggregate sums a weekly forecast into months or quarters. A week spanning two buckets is
// split by days. Intervals widen honestly: each week's distance from its quantity to each bound
// is read as a multiple of a standard deviation (the normal quantile of the interval level), and
// the deviations of a bucket's weeks add with the correlation r.ErrorCorrelation measured on the
// backtest: var = (1-ρ)·Σσ² + ρ·(Σσ)². With ρ = 1 the bucket's bounds are the sums of the
// weekly bounds, with ρ = 0 they are as narrow as independent weeks allow.
func Aggregate(r Result, grain string) ([]Bucket, error) {
	if grain != GrainMonth && grain != GrainQuarter {
		return nil, supplyplan.Invalid("grain", "must be MONTH or QUARTER")
	}
	months := 1
	if grain == GrainQuarter {
		months = 3
	}
	bucketStart := func(t time.Time) time.Time {
		y, m, _ := t.Date()
		m = time.Month((int(m)-1)/months*months + 1)
		return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
	}
	level := r.Interval
	if level <= 0 {
		level = DefaultInterval
	}
	z := math.Sqrt2 * math.Erfinv(level)
	rho := min(max(r.ErrorCorrelation, 0), 1)
	type acc struct {
		b                    Bucket
		sUp, sLo, sUp2, sLo2 float64
	}
	var accs []*acc
	for _, p := range r.Periods {
		// Split the week by days between at most two buckets; each piece keeps the week's
		// deviation in proportion (days of one week are fully correlated).
		for d := 0; d < 7; {
			bs := bucketStart(p.WeekStart.AddDate(0, 0, d))
			days := 0
			for d < 7 && bucketStart(p.WeekStart.AddDate(0, 0, d)).Equal(bs) {
				days++
				d++
			}
			if len(accs) == 0 || !accs[len(accs)-1].b.Start.Equal(bs) {
				accs = append(accs, &acc{b: Bucket{Start: bs, End: bs.AddDate(0, months, 0)}})
			}
			a := accs[len(accs)-1]
			f := float64(days) / 7
			a.b.Days += days
			a.b.Baseline += f * p.Baseline
			a.b.Quantity += f * p.Quantity
			up, lo := f*(p.Upper-p.Quantity)/z, f*(p.Quantity-p.Lower)/z
			a.sUp, a.sLo = a.sUp+up, a.sLo+lo
			a.sUp2, a.sLo2 = a.sUp2+up*up, a.sLo2+lo*lo
		}
	}
	out := make([]Bucket, len(accs))
	for i, a := range accs {
		b := a.b
		sdUp := math.Sqrt((1-rho)*a.sUp2 + rho*a.sUp*a.sUp)
		sdLo := math.Sqrt((1-rho)*a.sLo2 + rho*a.sLo*a.sLo)
		b.Upper = b.Quantity + z*sdUp
		b.Lower = max(b.Quantity-z*sdLo, 0)
		b.Partial = b.Days < int(b.End.Sub(b.Start).Hours()/24)
		out[i] = b
	}
	return out, nil
}
