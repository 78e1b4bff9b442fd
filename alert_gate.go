package supplyplan

import (
	"context"
	"time"
)

// CondState is what one evaluation observed about a condition.
type CondState uint8

// Condition states. Hold is the hysteresis band: the condition no longer meets its trigger
// threshold but has not cleared past its release threshold either, so it neither fires nor
// re-arms.
const (
	CondOff CondState = iota
	CondHold
	CondOn
)

// GateEntry is the cooldown and hysteresis state of one alert key. A key without an entry is
// armed and has never fired within memory.
type GateEntry struct {
	// Armed is false from the moment the key fires until its condition clears (CondOff).
	Armed bool `json:"armed"`
	// LastFired is when the key last fired (alert created).
	LastFired time.Time `json:"lastFired"`
}

// GateStep moves one key's state by one observation. It fires when the condition holds (CondOn),
// the key is armed, and the cooldown since the last firing has passed. next is nil when the entry
// can be forgotten (armed and out of cooldown: the same as no entry).
//
//	no entry      + On        -> fire; disarmed
//	disarmed      + On|Hold   -> nothing (the condition has not cleared since it fired)
//	disarmed      + Off       -> armed (still in cooldown until LastFired+cooldown)
//	armed         + On        -> fire when out of cooldown, else wait (stays armed)
//	armed         + Hold|Off  -> nothing; forgotten once out of cooldown
func GateStep(e *GateEntry, st CondState, cooldown time.Duration, now time.Time) (fire bool, next *GateEntry) {
	if e == nil {
		if st == CondOn {
			return true, &GateEntry{Armed: false, LastFired: now}
		}
		return false, nil
	}
	cooled := !now.Before(e.LastFired.Add(cooldown))
	switch {
	case !e.Armed && st == CondOff:
		if cooled {
			return false, nil
		}
		return false, &GateEntry{Armed: true, LastFired: e.LastFired}
	case !e.Armed:
		return false, e
	case st == CondOn && cooled:
		return true, &GateEntry{Armed: false, LastFired: now}
	case cooled:
		return false, nil
	}
	return false, e
}

// GateTrigger is GateStep for a manual trigger: it fires unless the key fired within the
// cooldown (bypass ignores the cooldown). It leaves the hysteresis state as it was (a key
// without an entry becomes armed: a real condition may fire once the cooldown passed).
func GateTrigger(e *GateEntry, cooldown time.Duration, now time.Time, bypass bool) (fire bool, retryAfter time.Duration, next *GateEntry) {
	if e == nil {
		return true, 0, &GateEntry{Armed: true, LastFired: now}
	}
	if until := e.LastFired.Add(cooldown); !bypass && now.Before(until) {
		return false, until.Sub(now), e
	}
	return true, 0, &GateEntry{Armed: e.Armed, LastFired: now}
}

// GateObservation is one evaluated key that is not plainly off.
type GateObservation struct {
	Key   string
	State CondState // CondOn or CondHold
}

// ApplyGate runs one full evaluation over a gate's entries: observed keys step with their
// state, every other key with an entry steps as CondOff. It returns the keys that fire (in
// observation order) and the entries that changed (nil value: delete).
func ApplyGate(entries map[string]*GateEntry, obs []GateObservation, cooldown time.Duration, now time.Time) (fired []string, changes map[string]*GateEntry) {
	changes = map[string]*GateEntry{}
	seen := make(map[string]bool, len(obs))
	for _, o := range obs {
		seen[o.Key] = true
		cur := entries[o.Key]
		fire, next := GateStep(cur, o.State, cooldown, now)
		if fire {
			fired = append(fired, o.Key)
		}
		if next != cur {
			changes[o.Key] = next
		}
	}
	for k, cur := range entries {
		if seen[k] {
			continue
		}
		if _, next := GateStep(cur, CondOff, cooldown, now); next != cur {
			changes[k] = next
		}
	}
	return fired, changes
}

// AlertGate keeps cooldown and hysteresis state outside the process (Redis in the distributed
// mode) so that every node of a tenant agrees on what fired. The embedded mode keeps it in the
// tenant's outbound journal instead and uses no AlertGate.
type AlertGate interface {
	// Evaluate applies one full evaluation of scope (an organization's alert keys) atomically
	// and returns the keys that fire.
	Evaluate(ctx context.Context, scope string, obs []GateObservation, cooldown time.Duration, now time.Time) ([]string, error)
	// Trigger applies a manual trigger of key atomically.
	Trigger(ctx context.Context, scope, key string, cooldown time.Duration, now time.Time, bypass bool) (fired bool, retryAfter time.Duration, err error)
}
