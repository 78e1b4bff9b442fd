package main

import (
	"math"
	"os"
	"testing"
)

// ojData returns the benchmark data. The data set is for benchmarks only and is not part of the
// repository (../shared/data/oj beside it on development machines); without it the check skips,
// and `make bench` runs the same protocol check and fails when it does not reproduce.
func ojData(t *testing.T) *data {
	t.Helper()
	path := envOr("SUPPLYPLAN_OJ_DATA", "../../../../shared/data/oj/oj_weekly_long.csv")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("OJ benchmark data not found at %s (set SUPPLYPLAN_OJ_DATA)", path)
	}
	d, err := load(path)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestProtocolReproducesPublishedBenchmarks checks the harness against the published MAPE of the
// three simple methods: a wrong round layout, fill or metric would move them.
func TestProtocolReproducesPublishedBenchmarks(t *testing.T) {
	d := ojData(t)
	for _, tt := range []struct {
		method string
		want   float64
	}{{"naive", 109.67}, {"mean", 70.74}, {"seasonal_naive", 165.06}} {
		got, n := d.run(tt.method, engineConfig{}, false)
		if n != 21054 {
			t.Errorf("%s: scored %d rows, want 21054", tt.method, n)
		}
		if math.Abs(got-tt.want) > 0.005 {
			t.Errorf("%s: MAPE %.3f, want %.2f", tt.method, got, tt.want)
		}
	}
}
