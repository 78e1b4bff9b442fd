package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// headroomFloor is the least headroom gcHeadroom leaves: with 64 MiB, a 270 MiB live heap
// (the allocation benchmark's) was collected every 200 MiB and the collector took ~40 % of the CPU;
// at most this much more memory than pct alone is the price (docs/allocation.md).
const headroomFloor = 256 << 20

// gcHeadroom bounds how far the heap may grow past the live data before the garbage collector
// runs. Go's default (GOGC=100) lets it double: a service holding 5 GB of tenant state would use
// 10 GB of memory between collections. After every collection this sets the runtime's soft
// memory limit to what the runtime holds besides the heap, plus the live heap grown by pct
// percent but at least headroomFloor; below about headroomFloor of live data that is above GOGC's
// own goal, so small and mid-size heaps keep Go's default pacing. It does nothing when the
// operator set GOGC or GOMEMLIMIT, and returns a function that stops it.
func gcHeadroom(pct int) (stop func()) {
	if pct <= 0 || os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	var stopped atomic.Bool
	samples := []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
	}
	adjust := func() {
		metrics.Read(samples)
		for _, s := range samples {
			if s.Value.Kind() != metrics.KindUint64 {
				return // an unknown metric: leave the runtime alone
			}
		}
		live := samples[0].Value.Uint64()
		heap := samples[2].Value.Uint64() + samples[3].Value.Uint64() + samples[4].Value.Uint64() + samples[5].Value.Uint64()
		other := samples[1].Value.Uint64() - min(heap, samples[1].Value.Uint64())
		limit := other + live + max(live*uint64(pct)/100, headroomFloor)
		debug.SetMemoryLimit(int64(min(limit, math.MaxInt64)))
	}
	// A finalizer runs after the collection that found its object unreachable: re-armed each time,
	// it follows every cycle.
	var arm func()
	arm = func() {
		sentinel := new([32]byte) // not a tiny allocation: its finalizer runs
		runtime.SetFinalizer(sentinel, func(*[32]byte) {
			if stopped.Load() {
				return
			}
			adjust()
			arm()
		})
	}
	adjust()
	arm()
	return func() {
		if !stopped.Swap(true) {
			debug.SetMemoryLimit(math.MaxInt64)
		}
	}
}
