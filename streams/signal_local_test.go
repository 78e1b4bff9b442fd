package streams

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
)

func MustLocalStream(tb testing.TB, cfg LocalSignalConfig, sink supplyplan.SignalSink) *LocalSignalStream {
	tb.Helper()
	s := NewLocalSignalStream(cfg, sink)
	if err := s.Open(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			tb.Errorf("close stream: %v", err)
		}
	})
	return s
}

func TestLocalSignalStreamOutcomes(t *testing.T) {
	sink := newMemSink()
	sink.reject = func(s supplyplan.DemandSignal) (string, bool) {
		return supplyplan.RejectUnknownProduct, s.SKU == "SKU-GONE"
	}
	s := MustLocalStream(t, LocalSignalConfig{}, sink)
	at := time.Date(2026, 1, 7, 10, 0, 0, 0, time.UTC)
	in := []supplyplan.DemandSignal{
		{SignalID: "a", OrganizationID: "org_1", SKU: "S", Location: "L", Quantity: 2, OccurredAt: at},
		{SignalID: "", OrganizationID: "org_1", SKU: "S", Location: "L", Quantity: 2, OccurredAt: at},
		{SignalID: "b", OrganizationID: "org_2", SKU: "SKU-GONE", Location: "L", Quantity: 2, OccurredAt: at},
		{SignalID: "a", OrganizationID: "org_1", SKU: "S", Location: "L", Quantity: 2, OccurredAt: at},
		{SignalID: "c", OrganizationID: "org_2", SKU: "S", Location: "L", Quantity: 1.5, OccurredAt: at},
	}
	got, err := s.Publish(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		status supplyplan.SignalStatus
		reason string
	}{
		{supplyplan.SignalApplied, ""},
		{supplyplan.SignalRejected, supplyplan.RejectInvalidSignal},
		{supplyplan.SignalRejected, supplyplan.RejectUnknownProduct},
		{supplyplan.SignalDuplicate, ""},
		{supplyplan.SignalApplied, ""},
	}
	for i, w := range want {
		if got[i].Status != w.status || got[i].Reason != w.reason {
			t.Errorf("outcome %d: got %+v, want %v %q", i, got[i], w.status, w.reason)
		}
	}
	if got[1].Message != "signalId: is required" {
		t.Errorf("invalid signal message %q", got[1].Message)
	}
	sink.checkTotals(t, sumSignals([]supplyplan.DemandSignal{in[0], in[4]}))
}

// TestLocalSignalStreamConcurrent publishes from many goroutines, with each signal published twice,
// and checks the totals and that every Publish call got its own outcomes.
func TestLocalSignalStreamConcurrent(t *testing.T) {
	const n, callers, per = 40_000, 16, 100
	sink := newMemSink()
	s := MustLocalStream(t, LocalSignalConfig{MaxBatch: 500, Workers: 2}, sink)
	signals := makeSignals("local", n, 7)
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for c := range callers {
		wg.Go(func() {
			for pass := range 2 {
				for i := c * per; i < n; i += callers * per {
					chunk := signals[i:min(i+per, n)]
					out, err := s.Publish(context.Background(), chunk)
					if err != nil {
						errs <- err
						return
					}
					for _, o := range out {
						if pass == 0 && o.Status != supplyplan.SignalApplied || pass == 1 && o.Status != supplyplan.SignalDuplicate {
							errs <- errors.New("pass " + string(rune('0'+pass)) + ": outcome " + o.Status.String())
							return
						}
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	sink.checkTotals(t, sumSignals(signals))
	st := s.Stats()
	if st.Applied != n || st.Duplicates != n {
		t.Errorf("stats %+v, want %d applied and %d duplicates", st, n, n)
	}
	t.Logf("%d publish calls applied in %d batches", 2*n/per, st.Batches)
}

func TestLocalSignalStreamSinkError(t *testing.T) {
	sink := newMemSink()
	sink.hook = func(context.Context, string, []supplyplan.DemandSignal) (int, error) {
		return 0, errors.New("store down")
	}
	s := MustLocalStream(t, LocalSignalConfig{}, sink)
	_, err := s.Publish(context.Background(), makeSignals("err", 3, 1))
	if err == nil || err.Error() != "store down" {
		t.Fatalf("got %v, want the sink's error", err)
	}
}

func TestLocalSignalStreamClose(t *testing.T) {
	sink := newMemSink()
	sink.delay = 50 * time.Millisecond
	s := NewLocalSignalStream(LocalSignalConfig{Workers: 1}, sink)
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([]error, 5)
	for i := range results {
		wg.Go(func() {
			_, results[i] = s.Publish(context.Background(), makeSignals("close"+string(rune('a'+i)), 10, 2))
		})
	}
	time.Sleep(10 * time.Millisecond) // let the calls queue (not a synchronisation: any order passes)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	applied := 0
	for _, err := range results {
		switch {
		case err == nil:
			applied += 10
		case !errors.Is(err, ErrStreamClosed):
			t.Errorf("publish: %v", err)
		}
	}
	if got := sink.applied(); got != applied {
		t.Errorf("sink applied %d, publishers were told %d", got, applied)
	}
	if _, err := s.Publish(context.Background(), makeSignals("late", 1, 1)); !errors.Is(err, ErrStreamClosed) {
		t.Errorf("publish after close: %v, want ErrStreamClosed", err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Errorf("second close: %v", err)
	}
}
