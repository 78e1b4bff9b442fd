package main

import (
	"runtime"
	"testing"
)

func TestExtraProcs(t *testing.T) {
	t.Setenv("GOMAXPROCS", "") // unset for this test (os.Getenv reads "" as unset)
	before := runtime.GOMAXPROCS(0)
	restore, err := extraProcs(1)
	if err != nil {
		t.Fatal(err)
	}
	if got := runtime.GOMAXPROCS(0); got != before+1 {
		t.Errorf("GOMAXPROCS %d with one extra, want %d", got, before+1)
	}
	restore()
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Errorf("GOMAXPROCS %d after restore, want %d", got, before)
	}

	// The operator's GOMAXPROCS wins.
	t.Setenv("GOMAXPROCS", "1")
	restore, err = extraProcs(2)
	if err != nil {
		t.Fatal(err)
	}
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Errorf("GOMAXPROCS %d with GOMAXPROCS set, want it unchanged (%d)", got, before)
	}
	restore()

	for _, n := range []int{-1, maxExtraProcs + 1} {
		if _, err := extraProcs(n); err == nil {
			t.Errorf("extraProcs(%d): no error", n)
		}
	}
}
