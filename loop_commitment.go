package supplyplan

import (
	"fmt"
	"slices"
	"time"
)

// Loop transition commitments: a billing plan may commit an organization to a monthly number of
// loop transitions (PlanSpec.LoopTransitionsMonthly). The runtime counts each organization's
// transitions (fired through the API, by timeouts or by a graceful cancel) per calendar month (UTC)
// in its own state, and when the count reaches 80 % and then 100 % of the commitment it writes one
// loop_commitment.threshold_reached event per threshold and month to its outbox, in the same
// journal entry as the transition that reached it. The platform's billing view shows the month's
// usage.

// KindLoopUsage is the record kind of a month's usage (by period, "2026-11").
const KindLoopUsage = "loopusage"

// EventLoopCommitmentThreshold is the outbound event of a reached threshold.
const EventLoopCommitmentThreshold = "loop_commitment.threshold_reached"

// LoopCommitmentThresholds are the thresholds that fire an event, in percent of the commitment.
var LoopCommitmentThresholds = []int{80, 100}

func init() {
	RegisterKind(KindLoopUsage, func() any { return new(LoopUsage) })
	RegisterWebhookEventType(EventLoopCommitmentThreshold)
}

// LoopUsage is an organization's loop transitions in one month.
type LoopUsage struct {
	Period      string `json:"period"`
	Transitions int64  `json:"transitions"`
	// Reached are the thresholds (percent) whose event was written this month.
	Reached []int `json:"reached,omitempty"`
}

// LoopUsageView is the billing view's loop usage: the current month against the commitment.
type LoopUsageView struct {
	Period      string `json:"period"`
	Transitions int64  `json:"transitions"`
	// Commitment is the plan's monthly commitment (0: none).
	Commitment int64 `json:"commitment"`
	Reached    []int `json:"thresholdsReached"`
}

// LoopPeriod is the usage period of t: its UTC calendar month.
func LoopPeriod(t time.Time) string { return t.UTC().Format("2006-01") }

// LoopCommitmentEvent is the data of loop_commitment.threshold_reached.
type LoopCommitmentEvent struct {
	OrganizationID string `json:"organizationId"`
	Period         string `json:"period"`
	ThresholdPct   int    `json:"thresholdPct"`
	Commitment     int64  `json:"commitment"`
	Transitions    int64  `json:"transitions"`
}

// SetCommitment sets the organization's monthly commitment of transitions (not journaled: it comes
// from its plan, set before each change).
func (s *LoopRunState) SetCommitment(n int64) { s.commitment = n }

// countTransition counts one transition at now, appending to recs the records of the month's
// usage and of the threshold events it reaches (each at most once per month). pending holds the
// usage as the change's records leave it so far (several transitions of one change count on one
// another).
func (s *LoopRunState) countTransition(now time.Time, pending *[]*LoopUsage, recs []Record) []Record {
	period := s.period(now)
	var u *LoopUsage
	for _, p := range *pending {
		if p.Period == period {
			u = p
		}
	}
	if u == nil {
		u = &LoopUsage{Period: period}
		if cur, ok := s.Usage[period]; ok {
			c := *cur
			c.Reached = slices.Clone(cur.Reached)
			u = &c
		}
		*pending = append(*pending, u)
	}
	u.Transitions++
	if s.commitment > 0 {
		for _, pct := range LoopCommitmentThresholds {
			if slices.Contains(u.Reached, pct) || u.Transitions*100 < s.commitment*int64(pct) {
				continue
			}
			u.Reached = append(u.Reached, pct)
			recs = append(recs, EventRecord(DomainEvent{ID: fmt.Sprintf("evt_loopcommit_%s_%s_%d", s.OrgID, period, pct),
				Type: EventLoopCommitmentThreshold, OrganizationID: s.OrgID, Timestamp: now,
				Data: LoopCommitmentEvent{OrganizationID: s.OrgID, Period: period, ThresholdPct: pct, Commitment: s.commitment, Transitions: u.Transitions}}))
		}
	}
	c := *u
	c.Reached = slices.Clone(u.Reached)
	return append(recs, Put(KindLoopUsage, period, &c))
}

// period is LoopPeriod(now), the string kept from the last call for a time of the same month.
func (s *LoopRunState) period(now time.Time) string {
	y, m, _ := now.UTC().Date()
	if s.periodYear != y || s.periodMonth != m || s.periodName == "" {
		s.periodYear, s.periodMonth, s.periodName = y, m, LoopPeriod(now)
	}
	return s.periodName
}

// UsageView is the usage of the month of now against commitment.
func (s *LoopRunState) UsageView(now time.Time, commitment int64) LoopUsageView {
	period := LoopPeriod(now)
	v := LoopUsageView{Period: period, Commitment: commitment, Reached: []int{}}
	if u, ok := s.Usage[period]; ok {
		v.Transitions = u.Transitions
		v.Reached = append(v.Reached, u.Reached...)
	}
	return v
}
