package supplyplan

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortedWindow: every window of a random list equals the same window of the fully sorted list,
// on both paths (bounded heap near the start, full sort beyond).
func TestSortedWindow(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		n := rng.IntN(400)
		all := make([]int, n)
		for i := range all {
			all[i] = rng.IntN(1000)*1000 + i // distinct: a total order
		}
		want := slices.Sorted(slices.Values(all))
		offset, limit := rng.IntN(n+5), rng.IntN(60)
		if trial%3 == 0 {
			offset = rng.IntN(10)
		}
		got := SortedWindow(slices.Clone(all), cmp.Compare[int], offset, limit)
		w := want[min(offset, n):min(offset+limit, n)]
		if !slices.Equal(got, w) {
			t.Fatalf("n=%d offset=%d limit=%d: got %v, want %v", n, offset, limit, got, w)
		}
	}
	if got := SortedWindow([]int{3, 1, 2}, cmp.Compare[int], 0, 0); len(got) != 0 {
		t.Fatalf("limit 0: %v", got)
	}
}
