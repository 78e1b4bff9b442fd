package http

import (
	"testing"

	"github.com/supplyplan/supplyplan"
)

// BenchmarkDecodeJSON measures the one request decoder on a typical scenario body.
func BenchmarkDecodeJSON(b *testing.B) {
	body := []byte(`{"name":"Summer push","description":"Promotions across the summer catalog","type":"PROMOTIONAL",` +
		`"assumptions":{"globalLiftPct":0.2,"categoryAdjustments":[{"categoryId":"cat-1","liftPct":0.1},` +
		`{"categoryId":"cat-2","liftPct":-0.05}],"includedEventIds":["evt_1","evt_2","evt_3"]}}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		var in supplyplan.ScenarioInput
		if err := decodeJSON(body, 1<<20, &in); err != nil {
			b.Fatal(err)
		}
	}
}
