package supplyplan

import (
	"testing"
	"time"
)

func TestEventValueExtensions(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	s := func(v string) *string { return &v }
	tests := []struct {
		name    string
		value   EventValueInput
		wantErr bool
	}{
		{"mechanic and intensity", EventValueInput{Mechanic: s("DEAL"), Intensity: f(0.5)}, false},
		{"holiday mechanic", EventValueInput{Mechanic: s("BLACK_FRIDAY_2")}, false},
		{"lower-case mechanic", EventValueInput{Mechanic: s("deal")}, true},
		{"empty mechanic", EventValueInput{Mechanic: s("")}, true},
		{"intensity above 1", EventValueInput{Intensity: f(1.2)}, true},
		{"negative intensity", EventValueInput{Intensity: f(-0.1)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := EventInput{Name: s("promo"), StartsAt: s("2026-11-23"), EndsAt: s("2026-11-30"), Value: &tt.value}
			starts, ends, err := in.Validate(true, false)
			if got := err != nil; got != tt.wantErr {
				t.Fatalf("Validate error = %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			e, err := NewEvent("e1", in, starts, ends, false, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if tt.value.Mechanic != nil && e.Value.Mechanic != *tt.value.Mechanic {
				t.Errorf("Mechanic = %q, want %q", e.Value.Mechanic, *tt.value.Mechanic)
			}
			if tt.value.Intensity != nil && (e.Value.Intensity == nil || *e.Value.Intensity != *tt.value.Intensity) {
				t.Errorf("Intensity = %v, want %v", e.Value.Intensity, *tt.value.Intensity)
			}
		})
	}
}
