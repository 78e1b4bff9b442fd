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
// (not double it), and stopping gives the runtime its default back.
func TestGCHeadroom(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOGC or GOMEMLIMIT is set: the headroom stays off by design")
	}
	live := make([]byte, 128<<20)
	for i := range live {
		live[i] = byte(i)
	}
	stop := gcHeadroom(50)
	runtime.GC()
	eventually(t, 10*time.Second, func() error {
		limit := debug.SetMemoryLimit(-1)
		lo, hi := int64(len(live))*3/2+64<<20, int64(len(live))*3/2+64<<20+96<<20
		if limit < lo || limit > hi {
			runtime.GC()
			return fmt.Errorf("memory limit %d MiB, want between %d and %d MiB", limit>>20, lo>>20, hi>>20)
		}
		return nil
	})
	stop()
	if limit := debug.SetMemoryLimit(-1); limit != math.MaxInt64 {
		t.Errorf("memory limit after stop = %d, want none", limit)
	}
	runtime.KeepAlive(live)
	if gcHeadroom(0)(); debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Error("a headroom of 0 set a memory limit")
	}
}
