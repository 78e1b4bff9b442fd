package streams

import (
	"strings"
	"testing"

	"github.com/supplyplan/supplyplan"
)

// Kafka messages out of bounds (issue 10): refused before the sink, naming the field, on the fast
// parser and on encoding/json alike, so that one message can never make the demand store refuse a
// whole batch (which the consumer would retry for ever).
func TestDecodeSignalOutOfBounds(t *testing.T) {
	for _, tc := range []struct{ name, value, field string }{
		{"quantity 1.7e308", `{"signalId":"s","organizationId":"o","skuId":"S","locationId":"L","quantity":1.7e308,"occurredAt":"2026-03-04T10:20:30Z"}`, "quantity"},
		{"quantity below -1e12", `{"signalId":"s","organizationId":"o","skuId":"S","locationId":"L","quantity":-1000000000001,"occurredAt":"2026-03-04T10:20:30Z"}`, "quantity"},
		{"occurredAt in year 9999", `{"signalId":"s","organizationId":"o","skuId":"S","locationId":"L","quantity":1,"occurredAt":"9999-12-31T10:20:30Z"}`, "occurredAt"},
		{"occurredAt before 1970-01-05", `{"signalId":"s","organizationId":"o","skuId":"S","locationId":"L","quantity":1,"occurredAt":"1969-12-29T00:00:00Z"}`, "occurredAt"},
		{"occurredAt year 10000 after its offset", `{"signalId":"s","organizationId":"o","skuId":"S","locationId":"L","quantity":1,"occurredAt":"9999-12-31T23:00:00-05:00"}`, "occurredAt"},
		{"long channel", `{"signalId":"s","organizationId":"o","skuId":"S","locationId":"L","channel":"` + strings.Repeat("c", 300) + `","quantity":1,"occurredAt":"2026-03-04T10:20:30Z"}`, "channel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fastSig, slowSig supplyplan.DemandSignal
			r1, m1 := newSignalDecoder().decode([]byte("o"), []byte(tc.value), &fastSig)
			r2, m2 := newSignalDecoder().decodeSlow([]byte("o"), []byte(tc.value), &slowSig)
			for _, got := range [][2]string{{r1, m1}, {r2, m2}} {
				if got[0] != ReasonInvalid || !strings.HasPrefix(got[1], tc.field+":") {
					t.Fatalf("reason %q message %q, want %s naming %s", got[0], got[1], ReasonInvalid, tc.field)
				}
			}
		})
	}
}
