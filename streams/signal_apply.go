package streams

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/backoff"
)

// This file is the part of the signal path shared by the Kafka consumer and the in-process stream:
// group a batch by organization, call the sink once per organization, check the outcomes.

// SignalStats counts what a signal stream did since it was opened.
type SignalStats struct {
	Fetched      int64 // messages read from Kafka, or signals published in-process
	Applied      int64 // signals the sink applied
	Duplicates   int64 // signals the sink had seen before
	Rejected     int64 // signals the sink refused (unknown tenant, ...)
	Invalid      int64 // signals refused before the sink (malformed, invalid field, key mismatch)
	DeadLettered int64 // messages written to the dead-letter topic (Kafka only)
	Batches      int64 // batches made durable
	SinkCalls    int64 // ApplySignals calls, retries included
	SinkErrors   int64 // ApplySignals calls that failed (and were retried, or reported)
	Commits      int64 // successful offset commits (Kafka only)
	Generations  int64 // consumer-group generations joined (Kafka only)
	Buffered     int64 // signals taken in and not yet durable (now)
	MaxBuffered  int64 // highest Buffered seen
}

type signalCounters struct {
	fetched, applied, duplicates, rejected, invalid, deadLettered, batches atomic.Int64
	sinkCalls, sinkErrors, commits, generations, buffered, maxBuffered     atomic.Int64
}

func (c *signalCounters) snapshot() SignalStats {
	return SignalStats{
		Fetched: c.fetched.Load(), Applied: c.applied.Load(), Duplicates: c.duplicates.Load(),
		Rejected: c.rejected.Load(), Invalid: c.invalid.Load(), DeadLettered: c.deadLettered.Load(),
		Batches: c.batches.Load(), SinkCalls: c.sinkCalls.Load(), SinkErrors: c.sinkErrors.Load(),
		Commits: c.commits.Load(), Generations: c.generations.Load(), Buffered: c.buffered.Load(),
		MaxBuffered: c.maxBuffered.Load(),
	}
}

func (c *signalCounters) addBuffered(n int64) {
	v := c.buffered.Add(n)
	for {
		m := c.maxBuffered.Load()
		if v <= m || c.maxBuffered.CompareAndSwap(m, v) {
			return
		}
	}
}

// orgGroup is the part of a batch that belongs to one organization: one sink call.
type orgGroup struct {
	org      string
	signals  []supplyplan.DemandSignal // fresh per batch: the sink may keep it
	refs     []int32                   // the caller's index of each signal (message, request slot)
	outcomes []supplyplan.SignalOutcome
	err      error
}

// signalGrouper collects a batch's signals and splits them by organization. Its scratch space is
// reused from batch to batch; what take returns is allocated per batch (a few slices, not one
// allocation per signal).
type signalGrouper struct {
	sigs   []supplyplan.DemandSignal
	refs   []int32
	gidx   []int32
	index  map[string]int32
	groups []orgGroup
}

func newSignalGrouper() *signalGrouper { return &signalGrouper{index: map[string]int32{}} }

func (g *signalGrouper) len() int { return len(g.sigs) }

func (g *signalGrouper) add(s supplyplan.DemandSignal, ref int32) {
	*g.slot() = s
	g.keep(ref)
}

// slot returns space for the next signal, to fill in place; keep adds it to the batch, otherwise
// the next slot reuses it.
func (g *signalGrouper) slot() *supplyplan.DemandSignal {
	n := len(g.sigs)
	if n == cap(g.sigs) {
		g.sigs = append(g.sigs, supplyplan.DemandSignal{})[:n]
	}
	return &g.sigs[:n+1][n]
}

// keep adds the signal filled in the last slot, with the caller's reference.
func (g *signalGrouper) keep(ref int32) {
	g.sigs = g.sigs[:len(g.sigs)+1]
	org := g.sigs[len(g.sigs)-1].OrganizationID
	i, ok := g.index[org]
	if !ok {
		i = int32(len(g.groups))
		g.index[org] = i
		g.groups = append(g.groups, orgGroup{org: org})
	}
	g.refs = append(g.refs, ref)
	g.gidx = append(g.gidx, i)
}

// take returns the batch's groups (freshly allocated: the grouper does not touch them again) and
// resets the grouper.
func (g *signalGrouper) take() []orgGroup {
	if len(g.groups) == 1 { // one organization (the common case): its group takes the scratch space itself
		out := g.groups
		out[0].signals, out[0].refs = g.sigs, g.refs
		g.sigs, g.refs = make([]supplyplan.DemandSignal, 0, cap(g.sigs)), make([]int32, 0, cap(g.refs))
		g.gidx = g.gidx[:0]
		clear(g.index)
		g.groups = nil
		return out
	}
	counts := make([]int, len(g.groups))
	for _, gi := range g.gidx {
		counts[gi]++
	}
	refBuf := make([]int32, len(g.refs))
	off := 0
	for i := range g.groups {
		g.groups[i].signals = make([]supplyplan.DemandSignal, 0, counts[i])
		g.groups[i].refs = refBuf[off : off : off+counts[i]]
		off += counts[i]
	}
	for k, gi := range g.gidx {
		grp := &g.groups[gi]
		grp.signals = append(grp.signals, g.sigs[k])
		grp.refs = append(grp.refs, g.refs[k])
	}
	out := g.groups
	clear(g.sigs) // drop string references held by the scratch space
	g.sigs, g.refs, g.gidx = g.sigs[:0], g.refs[:0], g.gidx[:0]
	clear(g.index)
	g.groups = nil
	return out
}

// signalApplier calls a sink for the groups of a batch.
type signalApplier struct {
	sink        supplyplan.SignalSink
	concurrency int
	retry       supplyplan.RetryPolicy // zero: no retry, the first error is the group's
	log         *slog.Logger
	stats       *signalCounters
}

// apply calls the sink for every group, at most a.concurrency at a time, and leaves each group's
// outcomes (or, without retry, its error) in the group. With retry it returns only when every
// group succeeded, or with ctx's error when ctx ends first (then outcomes are partial).
func (a *signalApplier) apply(ctx context.Context, groups []orgGroup) error {
	if len(groups) == 1 || a.concurrency <= 1 {
		for i := range groups {
			if err := a.applyGroup(ctx, &groups[i]); err != nil {
				return err
			}
		}
		return nil
	}
	sem := make(chan struct{}, a.concurrency)
	var wg sync.WaitGroup
	errs := make([]error, len(groups))
	for i := range groups {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return ctx.Err()
		}
		if i == len(groups)-1 { // the last one runs here: one goroutine fewer per batch
			errs[i] = a.applyGroup(ctx, &groups[i])
			<-sem
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = a.applyGroup(ctx, &groups[i])
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (a *signalApplier) applyGroup(ctx context.Context, g *orgGroup) error {
	if a.retry.Base == 0 { // no retry: the first error is the group's
		if err := ctx.Err(); err != nil {
			return err
		}
		g.err = a.call(ctx, g)
		return nil
	}
	return backoff.Retry(ctx, a.retry, func(attempt int) error {
		err := a.call(ctx, g)
		if err != nil && ctx.Err() == nil {
			a.log.Warn("apply demand signals failed; retrying", "org", g.org, "signals", len(g.signals),
				"attempt", attempt+1, "err", err)
		}
		return err
	})
}

// call makes one sink call for the group and leaves its outcomes in it.
func (a *signalApplier) call(ctx context.Context, g *orgGroup) error {
	a.stats.sinkCalls.Add(1)
	out, err := a.sink.ApplySignals(ctx, g.org, g.signals)
	if err == nil {
		err = checkOutcomes(out, len(g.signals))
	}
	if err != nil {
		a.stats.sinkErrors.Add(1)
		return err
	}
	g.outcomes, g.err = out, nil
	for _, o := range out {
		switch o.Status {
		case supplyplan.SignalApplied:
			a.stats.applied.Add(1)
		case supplyplan.SignalDuplicate:
			a.stats.duplicates.Add(1)
		case supplyplan.SignalRejected:
			a.stats.rejected.Add(1)
		}
	}
	return nil
}

func checkOutcomes(out []supplyplan.SignalOutcome, n int) error {
	if len(out) != n {
		return fmt.Errorf("signal sink returned %d outcomes for %d signals", len(out), n)
	}
	for i, o := range out {
		if o.Status < supplyplan.SignalApplied || o.Status > supplyplan.SignalRejected {
			return fmt.Errorf("signal sink returned status %d for signal %d", o.Status, i)
		}
	}
	return nil
}

// signalRetry spaces the retries of sink calls and dead-letter writes: retry n waits a random
// time in [d/2, d], d doubling from lo up to hi. (A RetryPolicy scales its delay by [1-J, 1+J]:
// three quarters of d scaled by [2/3, 4/3] is that range.)
func signalRetry(lo, hi time.Duration) supplyplan.RetryPolicy {
	return supplyplan.RetryPolicy{Base: lo * 3 / 4, Factor: 2, Cap: hi * 3 / 4, Jitter: 1.0 / 3}
}
