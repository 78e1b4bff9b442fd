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
// percent but at least headroomFloor, and turns GOGC's own goal off: the limit is the only
// trigger, so a small heap too grows by headroomFloor between collections rather than doubling
// (at most headroomFloor more memory than Go's default; far fewer collections of a small heap
// written to fast). It does nothing when the operator set GOGC or GOMEMLIMIT, and returns a
// function that stops it (and gives GOGC back).
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
	// The limit is the only trigger: with GOGC's own goal too, a heap below headroomFloor live was
	// collected each time it doubled (GOGC=100), which for the api benchmark's ~100 MiB live heap
	// was a collection every ~100 MiB allocated and 15-18 % of the service's CPU.
	percent := debug.SetGCPercent(-1)
	return func() {
		if !stopped.Swap(true) {
			debug.SetGCPercent(percent)
			debug.SetMemoryLimit(math.MaxInt64)
		}
	}
}
