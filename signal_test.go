package supplyplan

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestNormalizeSignal(t *testing.T) {
	at := time.Date(2026, 3, 4, 12, 0, 0, 123456789, time.FixedZone("x", 3600))
	valid := func() DemandSignal {
		return DemandSignal{SignalID: "s", OrganizationID: "o", SKU: "k", Location: "l", Quantity: 1, OccurredAt: at}
	}
	s := valid()
	if err := NormalizeSignal(&s); err != nil {
		t.Fatal(err)
	}
	if got, want := s.Channel, ChannelAll; got != want {
		t.Errorf("channel %q, want %q", got, want)
	}
	if got, want := s.OccurredAt, time.Date(2026, 3, 4, 11, 0, 0, 123000000, time.UTC); got != want {
		t.Errorf("occurredAt %v, want %v", got, want)
	}
	tests := []struct {
		field string
		edit  func(*DemandSignal)
	}{
		{"signalId", func(s *DemandSignal) { s.SignalID = " " }},
		{"organizationId", func(s *DemandSignal) { s.OrganizationID = "" }},
		{"skuId", func(s *DemandSignal) { s.SKU = strings.Repeat("x", MaxSignalIDLen+1) }},
		{"locationId", func(s *DemandSignal) { s.Location = "\xff" }},
		{"quantity", func(s *DemandSignal) { s.Quantity = math.NaN() }},
		{"quantity", func(s *DemandSignal) { s.Quantity = math.Inf(-1) }},
		{"occurredAt", func(s *DemandSignal) { s.OccurredAt = time.Time{} }},
		{"occurredAt", func(s *DemandSignal) { s.OccurredAt = time.Now().Add(MaxSignalLead + time.Hour) }},
	}
	for _, tt := range tests {
		s := valid()
		tt.edit(&s)
		err := NormalizeSignal(&s)
		var e *Error
		if !errors.As(err, &e) || e.Code != EVALIDATION || len(e.Details[tt.field]) == 0 {
			t.Errorf("%s: got %v, want a validation error on the field", tt.field, err)
		}
	}
}

// TestNormalizeDecodedSignal checks that NormalizeDecodedSignal is NormalizeSignal on signals
// whose strings are valid UTF-8 (what it is for), and skips only the UTF-8 check.
func TestNormalizeDecodedSignal(t *testing.T) {
	at := time.Date(2026, 3, 4, 12, 0, 0, 123456789, time.FixedZone("x", 3600))
	cases := []DemandSignal{
		{SignalID: "s", OrganizationID: "o", SKU: "k", Location: "l", Quantity: 1, OccurredAt: at},
		{SignalID: "é", OrganizationID: "o", SKU: "k", Location: "l", Channel: " ", Quantity: -2, OccurredAt: at.UTC()},
		{SignalID: " ", OrganizationID: "", SKU: strings.Repeat("x", MaxSignalIDLen+1), Location: "l", Quantity: math.Inf(1)},
		{SignalID: "s", OrganizationID: "o", SKU: "k", Location: "l", Channel: "web", Quantity: MaxNumber * 2, OccurredAt: MaxTime.Add(time.Hour)},
	}
	for i, c := range cases {
		a, b := c, c
		ea, eb := NormalizeSignal(&a), NormalizeDecodedSignal(&b)
		if a != b || (ea == nil) != (eb == nil) || (ea != nil && ea.Error() != eb.Error()) {
			t.Errorf("case %d: NormalizeSignal %+v, %v; NormalizeDecodedSignal %+v, %v", i, a, ea, b, eb)
		}
		if ea != nil {
			var x, y *Error
			errors.As(ea, &x)
			errors.As(eb, &y)
			if x == nil || y == nil || len(x.Details) != len(y.Details) {
				t.Errorf("case %d: details %v and %v", i, ea, eb)
			}
		}
	}
	bad := DemandSignal{SignalID: "\xff", OrganizationID: "o", SKU: "k", Location: "l", Quantity: 1, OccurredAt: at}
	if err := NormalizeDecodedSignal(&bad); err != nil {
		t.Errorf("NormalizeDecodedSignal checked UTF-8: %v", err)
	}
}
