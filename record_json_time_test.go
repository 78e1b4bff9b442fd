package supplyplan

import (
	"math/rand/v2"
	"testing"
	"time"
)

// appendUTCNano writes what time.Time.AppendFormat writes with RFC3339Nano, for every UTC time
// appendJSONTime lets through (years 0 to 9999).
func TestAppendUTCNano(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	lo := time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	hi := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Unix()
	times := []time.Time{
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(2026, 11, 28, 18, 0, 0, 100, time.UTC),
		time.Date(2026, 11, 28, 18, 0, 0, 120000000, time.UTC),
		time.Date(2026, 11, 28, 18, 0, 0, 1, time.UTC),
		time.Unix(0, 0).UTC(),
		time.Now().UTC(),
	}
	for range 200000 {
		ns := int64(0)
		switch r.IntN(4) {
		case 1:
			ns = r.Int64N(1e9)
		case 2:
			ns = r.Int64N(1000) * 1e6
		case 3:
			ns = r.Int64N(1e6) * 1e3
		}
		times = append(times, time.Unix(lo+r.Int64N(hi-lo+1), ns).UTC())
	}
	for _, tm := range times {
		want := tm.AppendFormat(nil, time.RFC3339Nano)
		if got := appendUTCNano(nil, tm); string(got) != string(want) {
			t.Fatalf("%v: %s, want %s", tm, got, want)
		}
		got, ok := appendJSONTime(nil, tm)
		if wantJSON, _ := tm.MarshalJSON(); !ok || string(got) != string(wantJSON) {
			t.Fatalf("%v: appendJSONTime %s %v, want %s", tm, got, ok, wantJSON)
		}
	}
}
