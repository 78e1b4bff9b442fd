package analytics

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
)

// weekDay is a fast supplyplan.WeekStart: they must agree on every instant, in every zone.
func TestWeekDayMatchesWeekStart(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	zones := []*time.Location{time.UTC, time.FixedZone("+14", 14*3600), time.FixedZone("-11", -11*3600)}
	lo := time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	hi := time.Date(2105, 12, 31, 0, 0, 0, 0, time.UTC).Unix()
	for i := 0; i < 100_000; i++ {
		at := time.Unix(lo+rng.Int64N(hi-lo), rng.Int64N(1e9)).In(zones[i%len(zones)])
		if got, want := dayTime(weekDay(at)), supplyplan.WeekStart(at); !got.Equal(want) {
			t.Fatalf("weekDay(%v) = %v, WeekStart = %v", at, got, want)
		}
	}
	for _, at := range []time.Time{time.Unix(-1, 0), time.Unix(0, 0), time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2024, 1, 7, 23, 59, 59, 999, time.UTC)} {
		if got, want := dayTime(weekDay(at)), supplyplan.WeekStart(at); !got.Equal(want) {
			t.Errorf("weekDay(%v) = %v, WeekStart = %v", at, got, want)
		}
	}
}
