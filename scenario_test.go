package supplyplan

import (
	"testing"
	"time"
)

func ptr[T any](v T) *T { return &v }

func TestScenarioInputValidate(t *testing.T) {
	long := make([]byte, MaxNameLen+1)
	for i := range long {
		long[i] = 'a'
	}
	tests := []struct {
		name   string
		in     ScenarioInput
		create bool
		field  string // "" = valid
	}{
		{"minimal", ScenarioInput{Name: ptr("a")}, true, ""},
		{"missing name on create", ScenarioInput{}, true, "name"},
		{"missing name on update", ScenarioInput{}, false, ""},
		{"blank name", ScenarioInput{Name: ptr(" \t")}, true, "name"},
		{"long name", ScenarioInput{Name: ptr(string(long))}, true, "name"},
		{"bad type", ScenarioInput{Name: ptr("a"), Type: ptr("X")}, true, "type"},
		{"every type", ScenarioInput{Name: ptr("a"), Type: ptr("CHANNEL_LAUNCH")}, true, ""},
		{"status", ScenarioInput{Status: ptr("PUBLISHED")}, false, "status"},
		{"global lift min", ScenarioInput{Name: ptr("a"), Assumptions: &AssumptionsInput{GlobalLiftPct: ptr(-1.0)}}, true, ""},
		{"global lift max", ScenarioInput{Name: ptr("a"), Assumptions: &AssumptionsInput{GlobalLiftPct: ptr(5.0)}}, true, ""},
		{"global lift below", ScenarioInput{Name: ptr("a"), Assumptions: &AssumptionsInput{GlobalLiftPct: ptr(-1.0001)}}, true, "assumptions.globalLiftPct"},
		{"global lift above", ScenarioInput{Name: ptr("a"), Assumptions: &AssumptionsInput{GlobalLiftPct: ptr(5.0001)}}, true, "assumptions.globalLiftPct"},
		{"category dup", ScenarioInput{Name: ptr("a"), Assumptions: &AssumptionsInput{CategoryAdjustments: &[]CategoryAdjustment{{"c", 0.1}, {"c", 0.2}}}}, true, "assumptions.categoryAdjustments[1].categoryId"},
		{"category lift", ScenarioInput{Name: ptr("a"), Assumptions: &AssumptionsInput{CategoryAdjustments: &[]CategoryAdjustment{{"c", 6}}}}, true, "assumptions.categoryAdjustments[0].liftPct"},
		{"channel empty id", ScenarioInput{Name: ptr("a"), Assumptions: &AssumptionsInput{ChannelAdjustments: &[]ChannelAdjustment{{"", 0.1}}}}, true, "assumptions.channelAdjustments[0].channelId"},
		{"empty event id", ScenarioInput{Name: ptr("a"), Assumptions: &AssumptionsInput{IncludedEventIDs: &[]string{""}}}, true, "assumptions.includedEventIds"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.in.Validate(tc.create)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("got %v, want valid", err)
				}
				return
			}
			e, ok := err.(*Error)
			if !ok || e.Code != EVALIDATION || len(e.Details[tc.field]) == 0 {
				t.Fatalf("got %v, want a validation error on %s", err, tc.field)
			}
		})
	}
}

func TestScenarioStateMachine(t *testing.T) {
	now := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	s := NewScenario("s1", ScenarioInput{Name: ptr("a")}, now)
	if s.Status != ScenarioDraft || s.Type != ScenarioCustom {
		t.Fatalf("new scenario = %+v", s)
	}
	p, changed, err := s.Publish(now)
	if err != nil || !changed || p.Status != ScenarioPublished || p.PublishedAt == nil {
		t.Fatalf("publish draft: %+v %v %v", p, changed, err)
	}
	if _, changed, err := p.Publish(now); err != nil || changed {
		t.Fatalf("publish published: changed=%v err=%v, want idempotent", changed, err)
	}
	a, changed := p.Archive(now)
	if !changed || a.Status != ScenarioArchived {
		t.Fatalf("archive: %+v", a)
	}
	if _, changed := a.Archive(now); changed {
		t.Fatal("archive archived changed it")
	}
	if _, _, err := a.Publish(now); ErrorCode(err) != ECONFLICT {
		t.Fatalf("publish archived: %v, want conflict", err)
	}
	if _, err := a.Update(ScenarioInput{Name: ptr("b")}, now); ErrorCode(err) != ECONFLICT {
		t.Fatalf("update archived: %v, want conflict", err)
	}
	d, _ := s.Archive(now)
	if d.Status != ScenarioArchived {
		t.Fatal("draft cannot be archived")
	}
}

func TestMergeAssumptionsKeepsAbsentFields(t *testing.T) {
	base := Assumptions{Narrative: "n", GlobalLiftPct: ptr(0.1), CategoryAdjustments: []CategoryAdjustment{{"c", 0.2}}}
	got := mergeAssumptions(base, &AssumptionsInput{GlobalLiftPct: ptr(0.3), IncludedEventIDs: &[]string{"e", "e"}})
	if got.Narrative != "n" || *got.GlobalLiftPct != 0.3 || len(got.CategoryAdjustments) != 1 || len(got.IncludedEventIDs) != 1 {
		t.Fatalf("merged = %+v", got)
	}
	if *base.GlobalLiftPct != 0.1 {
		t.Fatal("merge changed its input")
	}
	cleared := mergeAssumptions(got, &AssumptionsInput{CategoryAdjustments: &[]CategoryAdjustment{}})
	if cleared.CategoryAdjustments == nil || len(cleared.CategoryAdjustments) != 0 {
		t.Fatalf("explicit empty list = %#v", cleared.CategoryAdjustments)
	}
}

func TestScenarioFilter(t *testing.T) {
	d := &Scenario{Status: ScenarioDraft, Type: ScenarioBaseline}
	a := &Scenario{Status: ScenarioArchived, Type: ScenarioBaseline}
	for _, tc := range []struct {
		f            ScenarioFilter
		wantD, wantA bool
	}{
		{ScenarioFilter{}, true, false},
		{ScenarioFilter{IncludeArchived: true}, true, true},
		{ScenarioFilter{Status: ScenarioArchived}, false, true},
		{ScenarioFilter{Type: ScenarioCustom, IncludeArchived: true}, false, false},
	} {
		if tc.f.Match(d) != tc.wantD || tc.f.Match(a) != tc.wantA {
			t.Errorf("%+v: draft %v archived %v", tc.f, tc.f.Match(d), tc.f.Match(a))
		}
	}
}
