package supplyplan

import (
	"slices"
	"strings"
	"time"
)

// EventType classifies an external event that changes demand.
type EventType string

// Event types of the spec.
const (
	EventPromotion   EventType = "PROMOTION"
	EventPriceChange EventType = "PRICE_CHANGE"
	EventHoliday     EventType = "HOLIDAY"
	EventWeather     EventType = "WEATHER"
	EventBooking     EventType = "BOOKING"
	EventMacro       EventType = "MACRO"
	EventOther       EventType = "OTHER"
)

// EventTypes lists every event type.
var EventTypes = []EventType{EventPromotion, EventPriceChange, EventHoliday, EventWeather, EventBooking,
	EventMacro, EventOther}

// StackingMode says how an event's lift combines with others on the same week.
type StackingMode string

// Stacking modes.
const (
	StackMultiplicative StackingMode = "MULTIPLICATIVE"
	StackAdditive       StackingMode = "ADDITIVE"
)

// StackingModes lists every stacking mode.
var StackingModes = []StackingMode{StackMultiplicative, StackAdditive}

// eventValueBlock holds an EventValue and the numbers its pointers point to (Update).
type eventValueBlock struct {
	v    EventValue
	nums [3]float64
}

// EventValue is what an event does to demand.
type EventValue struct {
	// LiftPct is the relative demand change (0.35 = +35%). Absent: the engine learns it.
	LiftPct      *float64     `json:"liftPct,omitempty"`
	StackingMode StackingMode `json:"stackingMode,omitempty"`
	Description  string       `json:"description,omitempty"`
	// PriceChangePct is an extension for PRICE_CHANGE events: the relative price change (-0.1 = 10% cheaper).
	PriceChangePct *float64 `json:"priceChangePct,omitempty"`
	// Mechanic is an extension: a code refining the type (a promotion's DEAL, FEATURE, DISPLAY; a
	// holiday's name). Events of the same type and mechanic share one learned lift.
	Mechanic string `json:"mechanic,omitempty"`
	// Intensity is an extension in [0, 1] that scales the lift like day proration does (a feature
	// ad in half of the circulars: 0.5). Absent means 1.
	Intensity *float64 `json:"intensity,omitempty"`
}

// MaxMechanicLen bounds EventValue.Mechanic.
const MaxMechanicLen = 40

// validMechanic reports whether s is 1 to MaxMechanicLen of A-Z, 0-9 and _.
func validMechanic(s string) bool {
	if s == "" || len(s) > MaxMechanicLen {
		return false
	}
	for _, r := range s {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != '_' {
			return false
		}
	}
	return true
}

// ProductRef is the expanded product of an event.
type ProductRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	SKU  string `json:"sku"`
}

// LocationRef is the expanded location of an event.
type LocationRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Code string `json:"code,omitempty"`
}

// ExternalEvent is something outside the history that moves demand: a promotion, a holiday, ...
type ExternalEvent struct {
	ID              string       `json:"id"`
	Name            string       `json:"name"`
	Type            EventType    `json:"type"`
	StartsAt        time.Time    `json:"startsAt"`
	EndsAt          time.Time    `json:"endsAt"`
	Value           *EventValue  `json:"value,omitempty"`
	IsGlobal        bool         `json:"isGlobal"`
	IsOrgWide       bool         `json:"isOrgWide"`
	ProductMasterID string       `json:"productMasterId,omitempty"`
	LocationID      string       `json:"locationId,omitempty"`
	ProductMaster   *ProductRef  `json:"productMaster,omitempty"`
	Location        *LocationRef `json:"location,omitempty"`
	CreatedAt       time.Time    `json:"createdAt"`
	UpdatedAt       time.Time    `json:"updatedAt"`
}

// EventValueInput is the value object of a request; nil fields are absent.
type EventValueInput struct {
	LiftPct        *float64 `json:"liftPct"`
	StackingMode   *string  `json:"stackingMode" max:"200"`
	Description    *string  `json:"description" max:"5000"`
	PriceChangePct *float64 `json:"priceChangePct"`
	Mechanic       *string  `json:"mechanic" max:"200"`
	Intensity      *float64 `json:"intensity"`
}

// EventInput is the body of event create and update; nil fields are absent.
type EventInput struct {
	Name            *string          `json:"name" max:"200"`
	Type            *string          `json:"type" max:"200"`
	StartsAt        *string          `json:"startsAt" max:"200"`
	EndsAt          *string          `json:"endsAt" max:"200"`
	Value           *EventValueInput `json:"value"`
	ProductMasterID *string          `json:"productMasterId" max:"200"`
	LocationID      *string          `json:"locationId" max:"200"`
	IsGlobal        *bool            `json:"isGlobal"`
	IsOrgWide       *bool            `json:"isOrgWide"`
	// Checked says CheckInput passed already: the REST decoder checks on the request's goroutine,
	// and Validate, which runs in the tenant's actor (one writer per tenant), then skips it. Never
	// decoded from a body.
	Checked bool `json:"-"`
}

// Validate checks the fields present; create requires name, startsAt and endsAt. Dates are parsed
// into the returned times (zero when absent); both, a date-only endsAt moved to the end of its day
// included, lie in [MinTime, MaxTime].
func (in EventInput) Validate(create, platform bool) (starts, ends time.Time, err error) {
	if !in.Checked {
		if err := CheckInput(in); err != nil {
			return time.Time{}, time.Time{}, err
		}
	}
	fe := FieldErrors{}
	if in.Name != nil || create {
		switch {
		case in.Name == nil || strings.TrimSpace(*in.Name) == "":
			fe.Add("name", "is required and must not be empty")
		case len(*in.Name) > MaxNameLen:
			fe.Add("name", "must be at most %d characters", MaxNameLen)
		}
	}
	if in.Type != nil && !slices.Contains(EventTypes, EventType(*in.Type)) {
		fe.Add("type", "must be one of %s", joinEnum(EventTypes))
	}
	starts = checkTime(fe, "startsAt", in.StartsAt, create)
	ends = checkTime(fe, "endsAt", in.EndsAt, create)
	if in.EndsAt != nil && IsDateOnly(*in.EndsAt) && !ends.IsZero() {
		// A plain end date includes its whole day: the event ends at the next midnight, which must
		// still be in range (endsAt 2100-01-01 would end on 2100-01-02).
		ends = ends.Add(24 * time.Hour)
		if !InTimeRange(ends) {
			fe.Add("endsAt", "%s (a date-only endsAt ends at the next midnight)", TimeMessage)
		}
	}
	if v := in.Value; v != nil {
		if v.LiftPct != nil {
			checkRange(fe, "value.liftPct", *v.LiftPct, MinEventLift, MaxLift)
		}
		if v.StackingMode != nil && !slices.Contains(StackingModes, StackingMode(*v.StackingMode)) {
			fe.Add("value.stackingMode", "must be one of %s", joinEnum(StackingModes))
		}
		if v.Description != nil && len(*v.Description) > MaxDescriptionLen {
			fe.Add("value.description", "must be at most %d characters", MaxDescriptionLen)
		}
		if v.PriceChangePct != nil {
			checkRange(fe, "value.priceChangePct", *v.PriceChangePct, -0.99, 10)
		}
		if v.Mechanic != nil && !validMechanic(*v.Mechanic) {
			fe.Add("value.mechanic", "must be 1 to %d characters of A-Z, 0-9 and _", MaxMechanicLen)
		}
		if v.Intensity != nil {
			checkRange(fe, "value.intensity", *v.Intensity, 0, 1)
		}
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"productMasterId", in.ProductMasterID}, {"locationId", in.LocationID}} {
		if f.v != nil && len(*f.v) > MaxNameLen {
			fe.Add(f.name, "must be at most %d characters", MaxNameLen)
		}
	}
	if platform {
		if (in.ProductMasterID != nil && *in.ProductMasterID != "") || (in.LocationID != nil && *in.LocationID != "") {
			fe.Add("productMasterId", "global events apply to every product and location")
		}
	} else if in.IsGlobal != nil && *in.IsGlobal {
		fe.Add("isGlobal", "global events are managed by the platform operator")
	}
	return starts, ends, fe.Err()
}

// NewEvent builds an event from a validated create input and its parsed dates.
func NewEvent(id string, in EventInput, starts, ends time.Time, global bool, now time.Time) (ExternalEvent, error) {
	e := ExternalEvent{ID: id, Type: EventOther, IsGlobal: global, CreatedAt: now}
	return e.Update(in, starts, ends, now)
}

// Update returns the event with the present fields of a validated input applied, checking the
// resulting dates and scope.
func (e ExternalEvent) Update(in EventInput, starts, ends time.Time, now time.Time) (ExternalEvent, error) {
	if in.Name != nil {
		e.Name = strings.TrimSpace(*in.Name)
	}
	if in.Type != nil {
		e.Type = EventType(*in.Type)
	}
	if in.StartsAt != nil {
		e.StartsAt = starts
	}
	if in.EndsAt != nil {
		e.EndsAt = ends
	}
	if v := in.Value; v != nil {
		// The value and its numbers in one allocation: they live as long as the event, and one
		// object instead of up to four is less for the collector to visit in a tenant of many events.
		blk := &eventValueBlock{}
		nv := &blk.v
		if e.Value != nil {
			*nv = *e.Value
		}
		if v.LiftPct != nil {
			blk.nums[0] = *v.LiftPct
			nv.LiftPct = &blk.nums[0]
		}
		if v.StackingMode != nil {
			nv.StackingMode = StackingMode(*v.StackingMode)
		}
		if v.Description != nil {
			nv.Description = *v.Description
		}
		if v.PriceChangePct != nil {
			blk.nums[1] = *v.PriceChangePct
			nv.PriceChangePct = &blk.nums[1]
		}
		if v.Mechanic != nil {
			nv.Mechanic = *v.Mechanic
		}
		if v.Intensity != nil {
			blk.nums[2] = *v.Intensity
			nv.Intensity = &blk.nums[2]
		}
		e.Value = nv
	}
	if in.ProductMasterID != nil {
		e.ProductMasterID = strings.TrimSpace(*in.ProductMasterID)
	}
	if in.LocationID != nil {
		e.LocationID = strings.TrimSpace(*in.LocationID)
	}
	if !e.EndsAt.After(e.StartsAt) {
		return e, Invalid("endsAt", "must be after startsAt")
	}
	e.IsOrgWide = !e.IsGlobal && e.ProductMasterID == "" && e.LocationID == ""
	if in.IsOrgWide != nil && *in.IsOrgWide != e.IsOrgWide {
		if *in.IsOrgWide {
			return e, Invalid("isOrgWide", "an org-wide event has no productMasterId or locationId")
		}
		return e, Invalid("isOrgWide", "an event without productMasterId or locationId is org-wide")
	}
	e.UpdatedAt = now
	return e, nil
}

// Stacking returns the event's stacking mode, MULTIPLICATIVE when unset.
func (e *ExternalEvent) Stacking() StackingMode {
	if e.Value == nil || e.Value.StackingMode == "" {
		return StackMultiplicative
	}
	return e.Value.StackingMode
}

// EventFilter selects events in a listing.
type EventFilter struct {
	From, To        time.Time
	ProductMasterID string
	LocationID      string
	Type            EventType
	IncludeGlobal   bool
	IncludeOrgWide  bool
}

// Match reports whether e passes the filter: it overlaps [From, To] (the event being [startsAt,
// endsAt)), has the type, and applies to
// the product and location asked for (an event without a product applies to every product, and
// likewise for locations). Global and org-wide events are governed by their flags.
func (f EventFilter) Match(e *ExternalEvent) bool {
	// Events are half-open [startsAt, endsAt): one ending exactly at From does not overlap.
	if e.StartsAt.After(f.To) || !e.EndsAt.After(f.From) {
		return false
	}
	if f.Type != "" && e.Type != f.Type {
		return false
	}
	if e.IsGlobal {
		return f.IncludeGlobal
	}
	if e.IsOrgWide {
		return f.IncludeOrgWide
	}
	if f.ProductMasterID != "" && e.ProductMasterID != "" && e.ProductMasterID != f.ProductMasterID {
		return false
	}
	if f.LocationID != "" && e.LocationID != "" && e.LocationID != f.LocationID {
		return false
	}
	return true
}

// AppliesTo reports whether the event's scope covers the product and location.
func (e *ExternalEvent) AppliesTo(productID, locationID string) bool {
	if e.IsGlobal || e.IsOrgWide {
		return true
	}
	return (e.ProductMasterID == "" || e.ProductMasterID == productID) &&
		(e.LocationID == "" || e.LocationID == locationID)
}
