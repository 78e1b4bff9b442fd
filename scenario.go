package supplyplan

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ScenarioType classifies a forecast scenario.
type ScenarioType string

// Scenario types of the spec.
const (
	ScenarioBaseline      ScenarioType = "BASELINE"
	ScenarioPromotional   ScenarioType = "PROMOTIONAL"
	ScenarioConservative  ScenarioType = "CONSERVATIVE"
	ScenarioOptimistic    ScenarioType = "OPTIMISTIC"
	ScenarioChannelLaunch ScenarioType = "CHANNEL_LAUNCH"
	ScenarioCustom        ScenarioType = "CUSTOM"
)

// ScenarioTypes lists every scenario type.
var ScenarioTypes = []ScenarioType{ScenarioBaseline, ScenarioPromotional, ScenarioConservative,
	ScenarioOptimistic, ScenarioChannelLaunch, ScenarioCustom}

// ScenarioStatus is the lifecycle state of a scenario.
type ScenarioStatus string

// Scenario states.
const (
	ScenarioDraft     ScenarioStatus = "DRAFT"
	ScenarioPublished ScenarioStatus = "PUBLISHED"
	ScenarioArchived  ScenarioStatus = "ARCHIVED"
)

// ScenarioStatuses lists every scenario status.
var ScenarioStatuses = []ScenarioStatus{ScenarioDraft, ScenarioPublished, ScenarioArchived}

// Limits on scenario and event inputs (string and list limits are in limits.go).
const (
	MinGlobalLift = -1.0
	MaxLift       = 5.0
	MinEventLift  = -0.99
)

// CategoryAdjustment lifts the demand of one product category.
type CategoryAdjustment struct {
	CategoryID string  `json:"categoryId" max:"200"`
	LiftPct    float64 `json:"liftPct"`
}

// ChannelAdjustment lifts the demand of one sales channel.
type ChannelAdjustment struct {
	ChannelID string  `json:"channelId" max:"200"`
	LiftPct   float64 `json:"liftPct"`
}

// Assumptions are what a scenario changes relative to the statistical baseline.
type Assumptions struct {
	Narrative           string               `json:"narrative,omitempty"`
	GlobalLiftPct       *float64             `json:"globalLiftPct,omitempty"`
	CategoryAdjustments []CategoryAdjustment `json:"categoryAdjustments,omitzero"`
	ChannelAdjustments  []ChannelAdjustment  `json:"channelAdjustments,omitzero"`
	// IncludedEventIDs is nil when absent (every applicable event counts) and empty when the
	// scenario deliberately includes no event.
	IncludedEventIDs []string `json:"includedEventIds,omitzero"`
}

// Scenario is a named set of forecast assumptions.
type Scenario struct {
	ID          string         `json:"id"`
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Type        ScenarioType   `json:"type"`
	Status      ScenarioStatus `json:"status"`
	Assumptions Assumptions    `json:"assumptions"`
	CreatedAt   time.Time      `json:"createdAt"`
	UpdatedAt   time.Time      `json:"updatedAt"`
	PublishedAt *time.Time     `json:"publishedAt,omitempty"`
	ArchivedAt  *time.Time     `json:"archivedAt,omitempty"`
}

// AssumptionsInput is the assumptions object of a request; nil fields are absent.
type AssumptionsInput struct {
	Narrative           *string               `json:"narrative" max:"20000"`
	GlobalLiftPct       *float64              `json:"globalLiftPct"`
	CategoryAdjustments *[]CategoryAdjustment `json:"categoryAdjustments"`
	ChannelAdjustments  *[]ChannelAdjustment  `json:"channelAdjustments"`
	IncludedEventIDs    *[]string             `json:"includedEventIds" max:"200"`
}

// ScenarioInput is the body of scenario create and update; nil fields are absent.
type ScenarioInput struct {
	Name        *string           `json:"name" max:"200"`
	Description *string           `json:"description" max:"5000"`
	Type        *string           `json:"type" max:"200"`
	Assumptions *AssumptionsInput `json:"assumptions"`
	Status      *string           `json:"status" max:"200"`
}

// Validate checks the input; create requires a name. It does not check that included events exist.
func (in ScenarioInput) Validate(create bool) error {
	if err := CheckInput(in); err != nil {
		return err
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
	if in.Description != nil && len(*in.Description) > MaxDescriptionLen {
		fe.Add("description", "must be at most %d characters", MaxDescriptionLen)
	}
	if in.Type != nil && !slices.Contains(ScenarioTypes, ScenarioType(*in.Type)) {
		fe.Add("type", "must be one of %s", joinEnum(ScenarioTypes))
	}
	if in.Status != nil {
		fe.Add("status", "cannot be set directly: use POST .../publish or DELETE to archive")
	}
	if a := in.Assumptions; a != nil {
		checkText(fe, "assumptions.narrative", a.Narrative, MaxNarrativeLen)
		if a.GlobalLiftPct != nil {
			checkRange(fe, "assumptions.globalLiftPct", *a.GlobalLiftPct, MinGlobalLift, MaxLift)
		}
		if a.CategoryAdjustments != nil {
			adj := *a.CategoryAdjustments
			if len(adj) > MaxListItems {
				fe.Add("assumptions.categoryAdjustments", "must have at most %d items", MaxListItems)
			}
			seen := map[string]bool{}
			for i, c := range adj {
				f := "assumptions.categoryAdjustments[" + strconv.Itoa(i) + "]"
				if strings.TrimSpace(c.CategoryID) == "" {
					fe.Add(f+".categoryId", "is required")
				} else if seen[c.CategoryID] {
					fe.Add(f+".categoryId", "duplicate category %q", c.CategoryID)
				}
				seen[c.CategoryID] = true
				checkRange(fe, f+".liftPct", c.LiftPct, MinGlobalLift, MaxLift)
			}
		}
		if a.ChannelAdjustments != nil {
			adj := *a.ChannelAdjustments
			if len(adj) > MaxListItems {
				fe.Add("assumptions.channelAdjustments", "must have at most %d items", MaxListItems)
			}
			seen := map[string]bool{}
			for i, c := range adj {
				f := "assumptions.channelAdjustments[" + strconv.Itoa(i) + "]"
				if strings.TrimSpace(c.ChannelID) == "" {
					fe.Add(f+".channelId", "is required")
				} else if seen[c.ChannelID] {
					fe.Add(f+".channelId", "duplicate channel %q", c.ChannelID)
				}
				seen[c.ChannelID] = true
				checkRange(fe, f+".liftPct", c.LiftPct, MinGlobalLift, MaxLift)
			}
		}
		if a.IncludedEventIDs != nil {
			ids := *a.IncludedEventIDs
			if len(ids) > MaxListItems {
				fe.Add("assumptions.includedEventIds", "must have at most %d items", MaxListItems)
			}
			for _, id := range ids {
				if strings.TrimSpace(id) == "" {
					fe.Add("assumptions.includedEventIds", "must not contain empty ids")
					break
				}
			}
		}
	}
	return fe.Err()
}

// mergeAssumptions returns base with every present field of in replacing the old value.
func mergeAssumptions(base Assumptions, in *AssumptionsInput) Assumptions {
	if in == nil {
		return base
	}
	if in.Narrative != nil {
		base.Narrative = *in.Narrative
	}
	if in.GlobalLiftPct != nil {
		v := *in.GlobalLiftPct
		base.GlobalLiftPct = &v
	}
	if in.CategoryAdjustments != nil {
		base.CategoryAdjustments = slices.Clone(*in.CategoryAdjustments)
		if base.CategoryAdjustments == nil {
			base.CategoryAdjustments = []CategoryAdjustment{}
		}
	}
	if in.ChannelAdjustments != nil {
		base.ChannelAdjustments = slices.Clone(*in.ChannelAdjustments)
		if base.ChannelAdjustments == nil {
			base.ChannelAdjustments = []ChannelAdjustment{}
		}
	}
	if in.IncludedEventIDs != nil {
		base.IncludedEventIDs = Dedup(*in.IncludedEventIDs)
	}
	return base
}

// NewScenario builds a DRAFT scenario from a validated create input.
func NewScenario(id string, in ScenarioInput, now time.Time) Scenario {
	s := Scenario{ID: id, Name: strings.TrimSpace(*in.Name), Type: ScenarioCustom, Status: ScenarioDraft,
		CreatedAt: now, UpdatedAt: now}
	if in.Description != nil {
		s.Description = *in.Description
	}
	if in.Type != nil {
		s.Type = ScenarioType(*in.Type)
	}
	s.Assumptions = mergeAssumptions(Assumptions{}, in.Assumptions)
	return s
}

// Update returns the scenario with the present fields of a validated input applied.
func (s Scenario) Update(in ScenarioInput, now time.Time) (Scenario, error) {
	if s.Status == ScenarioArchived {
		return s, Conflict("Scenario is archived and cannot be updated")
	}
	if in.Name != nil {
		s.Name = strings.TrimSpace(*in.Name)
	}
	if in.Description != nil {
		s.Description = *in.Description
	}
	if in.Type != nil {
		s.Type = ScenarioType(*in.Type)
	}
	s.Assumptions = mergeAssumptions(s.Assumptions, in.Assumptions)
	s.UpdatedAt = now
	return s, nil
}

// Publish moves a DRAFT scenario to PUBLISHED; publishing a PUBLISHED one changes nothing.
func (s Scenario) Publish(now time.Time) (Scenario, bool, error) {
	switch s.Status {
	case ScenarioPublished:
		return s, false, nil
	case ScenarioArchived:
		return s, false, Conflict("Scenario is archived and cannot be published")
	}
	s.Status = ScenarioPublished
	s.PublishedAt = &now
	s.UpdatedAt = now
	return s, true, nil
}

// Archive moves a DRAFT or PUBLISHED scenario to ARCHIVED; archiving an ARCHIVED one changes nothing.
func (s Scenario) Archive(now time.Time) (Scenario, bool) {
	if s.Status == ScenarioArchived {
		return s, false
	}
	s.Status = ScenarioArchived
	s.ArchivedAt = &now
	s.UpdatedAt = now
	return s, true
}

// ScenarioFilter selects scenarios in a listing.
type ScenarioFilter struct {
	Status          ScenarioStatus
	Type            ScenarioType
	IncludeArchived bool
}

// Match reports whether s passes the filter. Asking for status ARCHIVED includes archived ones.
func (f ScenarioFilter) Match(s *Scenario) bool {
	if f.Status != "" && s.Status != f.Status {
		return false
	}
	if f.Type != "" && s.Type != f.Type {
		return false
	}
	if s.Status == ScenarioArchived && !f.IncludeArchived && f.Status != ScenarioArchived {
		return false
	}
	return true
}

func checkRange(fe FieldErrors, field string, v, lo, hi float64) {
	if math.IsNaN(v) || v < lo || v > hi {
		fe.Add(field, "must be between %g and %g", lo, hi)
	}
}

func joinEnum[T ~string](vals []T) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = string(v)
	}
	return strings.Join(parts, ", ")
}
