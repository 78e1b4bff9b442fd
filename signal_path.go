package supplyplan

import "fmt"

// The write path of a live demand signal, from where it enters to where it is durable:
//
//  1. Validated once, where it enters a signal stream, by NormalizeSignal: the Kafka consumer's
//     decoder (streams/signal_decode.go; NormalizeDecodedSignal, for strings its parser has
//     already found to be valid UTF-8), or the in-process stream's Publish
//     (streams/signal_local.go) behind POST /api/demand/signals, whose handler only turns the REST
//     rows into signals. What fails is rejected there (dead-letter topic, or a REJECTED outcome
//     with reason INVALID_SIGNAL naming the fields); nothing after it validates a signal again.
//  2. Grouped by organization (streams), one SignalSink call per organization.
//  3. Resolved against the tenant's state (actors.Signals, TenantState.ResolveSignals): a read of
//     the catalog (outside the tenant's actor when none of its writes is pending) that turns each
//     signal's product reference into the product id, or rejects it (unknown product or location).
//     The actor does not order signal writes: a signal is not part of the tenant's journaled state.
//  4. Written by the demand store (DemandStore.AddSignals), which owns the order of demand-history
//     writes and their deduplication by signal id: the embedded store in its group-committing
//     writer, the ClickHouse store under a lock per organization. It answers once they are
//     durable, then the tenant's forecasts are invalidated and its alerts evaluated again.
//
// The demand store still refuses a whole call holding a signal it cannot store (DemandStore's own
// contract, so that a write is never partial): a guard against a caller that skipped step 1, which
// a signal that passed NormalizeSignal never trips. It decides no outcome of a signal.

// ResolveSignals checks what each signal of organization orgID refers to in the tenant's catalog
// (the product by id or SKU, the location) and returns the signals to write, with their product
// reference replaced by the product id, and the index of each in signals. The outcome of every
// other signal is set in out (len(signals)): SignalRejected with RejectUnknownProduct or
// RejectUnknownLocation. signals passed NormalizeSignal.
func (s *TenantState) ResolveSignals(signals []DemandSignal, out []SignalOutcome) (valid []DemandSignal, slot []int) {
	valid, slot = make([]DemandSignal, 0, len(signals)), make([]int, 0, len(signals))
	// A batch repeats a few products and locations: the last lookup of each is kept.
	var lastSKU, lastID, lastLoc string
	skuOK, locOK := false, false
	for i := range signals {
		sg := &signals[i]
		if !skuOK || sg.SKU != lastSKU {
			p, ok := s.ProductBySKU(sg.SKU)
			if !ok {
				out[i] = Rejected(RejectUnknownProduct, fmt.Sprintf("unknown product %q", sg.SKU))
				continue
			}
			lastSKU, lastID, skuOK = sg.SKU, p.ID, true
		}
		if !locOK || sg.Location != lastLoc {
			if _, ok := s.Locations[sg.Location]; !ok {
				out[i] = Rejected(RejectUnknownLocation, fmt.Sprintf("unknown location %q", sg.Location))
				continue
			}
			lastLoc, locOK = sg.Location, true
		}
		valid = append(valid, *sg)
		valid[len(valid)-1].SKU = lastID
		slot = append(slot, i)
	}
	return valid, slot
}

// SignalOutcomes sets the outcome of each written signal from the store's answer (writes[j] for
// the signal at out[slot[j]]): SignalApplied, SignalDuplicate for a signal id seen before, or
// SignalRejected with RejectLateSignal for a signal older than the dedup window. It returns how
// many were applied.
func SignalOutcomes(out []SignalOutcome, slot []int, writes []SignalWrite) (applied int) {
	for j, i := range slot {
		switch writes[j] {
		case SignalWritten:
			out[i] = SignalOutcome{Status: SignalApplied}
			applied++
		case SignalSeen:
			out[i] = SignalOutcome{Status: SignalDuplicate}
		default:
			out[i] = Rejected(RejectLateSignal, lateSignalMessage)
		}
	}
	return applied
}

var lateSignalMessage = fmt.Sprintf("occurredAt is in a week more than %d weeks before the newest week of the organization's signals: "+
	"its id is no longer remembered, so it is refused rather than risk counting it twice (send it as demand history instead)", SignalDedupWeeks)
