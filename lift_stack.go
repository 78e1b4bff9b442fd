package supplyplan

// MinEventMultiplier is the floor of a week's combined event multiplier: however the lifts of a
// week stack, its demand stays at least 1% of its baseline.
const MinEventMultiplier = 0.01

// LiftStack combines the lifts of the events on one week: the stacking rule of StackingMode. The
// week's multiplier is (1 + Σ w·lift over ADDITIVE events) × Π (1 + w·lift over MULTIPLICATIVE
// events), floored at MinEventMultiplier, where lift is an event's full-week lift and w its share
// of the week (EventWeight). The forecasting engine (analytics/forecast) and the change history
// (actors/forecast_changes.go, actors/forecast_service.go) both stack with it. The zero value is
// a week without events; a copy stacks on independently.
type LiftStack struct {
	add     float64 // Σ w·lift of the additive events
	mul     float64 // Π (1 + w·lift) of the multiplicative events, once started
	started bool
}

// Push adds an event's lift at weight; additive is true for an event whose Stacking is
// StackAdditive.
func (s *LiftStack) Push(lift, weight float64, additive bool) {
	if !s.started {
		s.mul, s.started = 1, true
	}
	if additive {
		s.add += weight * lift
	} else {
		s.mul *= 1 + weight*lift
	}
}

// Multiplier is the week's combined event multiplier: 1 without events.
func (s *LiftStack) Multiplier() float64 {
	if !s.started {
		return 1
	}
	return max((1+s.add)*s.mul, MinEventMultiplier)
}
