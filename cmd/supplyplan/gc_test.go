package main

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// After a collection, the soft memory limit lets the heap grow by the headroom past the live data
// (a percentage of it, at least headroomFloor; not double it: GOGC is off while it runs), and
// stopping gives the runtime its defaults back.
func TestGCHeadroom(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOGC or GOMEMLIMIT is set: the headroom stays off by design")
	}
	live := make([]byte, 128<<20)
	for i := range live {
		live[i] = byte(i)
	}
	// 50 % of 128 MiB is below the floor: the floor counts; 300 % is above it: the percentage counts.
	for _, c := range []struct {
		pct      int
		headroom int64
	}{{50, headroomFloor}, {300, int64(len(live)) * 3}} {
		stop := gcHeadroom(c.pct)
		runtime.GC()
		eventually(t, 10*time.Second, func() error {
			limit := debug.SetMemoryLimit(-1)
			lo := int64(len(live)) + c.headroom
			hi := lo + 96<<20
			if limit < lo || limit > hi {
				runtime.GC()
				return fmt.Errorf("pct %d: memory limit %d MiB, want between %d and %d MiB", c.pct, limit>>20, lo>>20, hi>>20)
			}
			return nil
		})
		if pct := debug.SetGCPercent(-1); pct != -1 {
			t.Errorf("GOGC while the headroom runs = %d, want off (the limit is the only trigger)", pct)
		}
		stop()
		if limit := debug.SetMemoryLimit(-1); limit != math.MaxInt64 {
			t.Errorf("memory limit after stop = %d, want none", limit)
		}
		if pct := debug.SetGCPercent(100); pct != 100 {
			t.Errorf("GOGC after stop = %d, want 100 back", pct)
		}
	}
	runtime.KeepAlive(live)
	if gcHeadroom(0)(); debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Error("a headroom of 0 set a memory limit")
	}
}
