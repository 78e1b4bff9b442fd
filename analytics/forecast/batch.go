package forecast

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Job is one series of a batch with the events that apply to it.
type Job struct {
	Series Series
	Events []EventOccurrence
}

// ForecastBatch forecasts every job with the same lifts and options on a pool of GOMAXPROCS
// workers. results[i] and errs[i] belong to jobs[i].
func ForecastBatch(jobs []Job, lifts *LiftModel, opts Options) (results []Result, errs []error) {
	results, errs = make([]Result, len(jobs)), make([]error, len(jobs))
	if err := opts.Validate(); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return results, errs
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), max(len(jobs), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(jobs) {
					return
				}
				results[i], errs[i] = Forecast(jobs[i].Series, jobs[i].Events, lifts, opts)
			}
		}()
	}
	wg.Wait()
	return results, errs
}
