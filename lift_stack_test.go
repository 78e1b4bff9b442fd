package supplyplan

import (
	"math"
	"testing"
)

func TestLiftStack(t *testing.T) {
	type lift struct {
		l, w     float64
		additive bool
	}
	tests := []struct {
		name  string
		lifts []lift
		want  float64
	}{
		{"none", nil, 1},
		{"one", []lift{{0.35, 1, false}}, 1.35},
		{"multiplicative multiply", []lift{{0.2, 1, false}, {0.3, 1, false}}, 1.2 * 1.3},
		{"additive add", []lift{{0.2, 1, true}, {0.3, 1, true}}, 1.5},
		{"mixed: (1+Σadd)·Π(1+mult)", []lift{{0.2, 1, true}, {0.1, 1, true}, {0.5, 1, false}}, 1.3 * 1.5},
		{"order does not matter", []lift{{0.5, 1, false}, {0.2, 1, true}, {0.1, 1, true}}, 1.3 * 1.5},
		{"prorated 3/7", []lift{{0.7, 3.0 / 7, false}}, 1.3},
		{"weighted additive", []lift{{0.4, 0.5, true}, {0.4, 0.25, true}}, 1.3},
		{"negative", []lift{{-0.5, 1, false}, {-0.2, 1, true}}, 0.8 * 0.5},
		{"floored", []lift{{-0.99, 1, true}, {-0.99, 1, true}}, MinEventMultiplier},
		{"floored multiplicative", []lift{{MinEventLift, 1, false}, {MinEventLift, 1, false}}, MinEventMultiplier},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s LiftStack
			for _, l := range tt.lifts {
				s.Push(l.l, l.w, l.additive)
			}
			if got := s.Multiplier(); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("multiplier = %v, want %v", got, tt.want)
			}
		})
	}
}

// A copy stacks on independently (the change history stacks an event's old and new version on
// the same other events).
func TestLiftStackCopies(t *testing.T) {
	var others LiftStack
	others.Push(0.5, 1, false)
	before, after := others, others
	before.Push(0.2, 1, true)
	after.Push(0.4, 1, true)
	if got := [3]float64{others.Multiplier(), before.Multiplier(), after.Multiplier()}; math.Abs(got[0]-1.5) > 1e-12 ||
		math.Abs(got[1]-1.8) > 1e-12 || math.Abs(got[2]-2.1) > 1e-12 {
		t.Errorf("multipliers %v, want [1.5 1.8 2.1]", got)
	}
}
