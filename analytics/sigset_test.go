package analytics

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSigSetAgreesWithAMap: inserts of fresh and repeated keys, through several growths, answer
// as a map does; the keys colliding in their first eight bytes (one probe chain), the all-zero key
// and the enumeration are covered.
func TestSigSetAgreesWithAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var s sigSet
	ref := map[sigKey]bool{}
	var seen []sigKey
	key := func() sigKey {
		switch r := rng.IntN(10); {
		case r == 0 && len(seen) > 0:
			return seen[rng.IntN(len(seen))] // a repeat
		case r == 1:
			return sigKey{} // the empty-slot marker as a key
		case r == 2:
			var k sigKey // same first eight bytes as others: one long probe chain
			binary.LittleEndian.PutUint64(k[:8], 42)
			binary.LittleEndian.PutUint64(k[8:], rng.Uint64()%64) // and the same table (last byte 0)
			return k
		}
		return keyOf(fmt.Sprint("sig-", rng.Uint64()))
	}
	for i := range 20000 {
		k := key()
		fresh := !ref[k]
		if got := s.add(k); got != fresh {
			t.Fatalf("insert %d of %x: add = %v, want %v", i, k, got, fresh)
		}
		if fresh {
			ref[k] = true
			seen = append(seen, k)
		}
		if s.len() != len(ref) {
			t.Fatalf("insert %d: len %d, want %d", i, s.len(), len(ref))
		}
	}
	got := s.appendTo(nil)
	slices.SortFunc(got, func(a, b sigKey) int { return slices.Compare(a[:], b[:]) })
	want := slices.Collect(func(yield func(sigKey) bool) {
		for k := range ref {
			if !yield(k) {
				return
			}
		}
	})
	slices.SortFunc(want, func(a, b sigKey) int { return slices.Compare(a[:], b[:]) })
	if !slices.Equal(got, want) {
		t.Fatalf("appendTo gave %d keys, want %d (or other keys)", len(got), len(want))
	}
	for i, g := range s.segs {
		if g.n*4 > len(g.slots)*3 {
			t.Fatalf("table %d: load above 3/4: %d keys in %d slots", i, g.n, len(g.slots))
		}
	}
}

// BenchmarkSigSetAdd: inserting fresh keys into a set of n keys, against the map it replaced.
func BenchmarkSigSetAdd(b *testing.B) {
	const n = 3_000_000
	keys := make([]sigKey, n+1_000_000)
	for i := range keys {
		sum := sha256.Sum256(binary.LittleEndian.AppendUint64(nil, uint64(i)))
		keys[i] = sigKey(sum[:16])
	}
	b.Run("sigSet", func(b *testing.B) {
		var s sigSet
		for _, k := range keys[:n] {
			s.add(k)
		}
		i := n
		for b.Loop() {
			s.add(keys[i])
			if i++; i == len(keys) {
				i = n
			}
		}
	})
	b.Run("map", func(b *testing.B) {
		m := map[sigKey]struct{}{}
		for _, k := range keys[:n] {
			m[k] = struct{}{}
		}
		i := n
		for b.Loop() {
			had := len(m)
			m[keys[i]] = struct{}{}
			_ = len(m) == had
			if i++; i == len(keys) {
				i = n
			}
		}
	})
}
