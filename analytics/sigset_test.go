package analytics

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSigSetAgreesWithAMap: inserts of fresh and repeated keys, through several growths and
// prunes, answer as a map of key to day does; the keys colliding in their first eight bytes (one
// probe chain, which a prune cuts holes in), the all-zero key, keys of unknown day and the
// enumeration are covered.
func TestSigSetAgreesWithAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var s sigSet
	var seen []sigKey
	key := func() sigKey {
		switch r := rng.IntN(10); {
		case r == 0 && len(seen) > 0:
			return seen[rng.IntN(len(seen))] // a repeat (perhaps pruned since)
		case r == 1:
			return sigKey{} // the empty-slot marker as a key
		case r == 2:
			var k sigKey // same first eight bytes as others: one long probe chain
			binary.LittleEndian.PutUint64(k[:8], 42)
			binary.LittleEndian.PutUint64(k[8:], rng.Uint64()%64) // and the same table (byte 13 is 0)
			return k
		}
		return keyOf(fmt.Sprint("sig-", rng.Uint64()))
	}
	// The set keeps a key's first 14 bytes: the reference map too.
	type key14 [14]byte
	short := func(k sigKey) key14 { return key14(k[:14]) }
	ref := map[key14]int32{}
	floor := int32(4 + 7*100) // days of Mondays
	for i := range 40000 {
		k := key()
		day := floor + 7*rng.Int32N(30)
		if rng.IntN(50) == 0 {
			day = sigDayUnknown
		}
		_, had := ref[short(k)]
		if got := s.add(k, day); got != !had {
			t.Fatalf("insert %d of %x: add = %v, want %v", i, k, got, !had)
		}
		if !had {
			ref[short(k)] = day
			seen = append(seen, k)
		}
		if i%5000 == 4999 { // the window moves
			floor += 7 * 10
			unknownAs := floor + 7*3
			for k, d := range ref {
				if d == sigDayUnknown {
					d = unknownAs
					ref[k] = d
				}
				if d < floor {
					delete(ref, k)
				}
			}
			s.prune(floor, unknownAs)
		}
		if s.len() != len(ref) {
			t.Fatalf("insert %d: len %d, want %d", i, s.len(), len(ref))
		}
	}
	if len(ref) == 0 || len(ref) > 30000 {
		t.Fatalf("%d keys left: the test prunes too much or nothing", len(ref))
	}
	type entry struct {
		k   key14
		day int32
	}
	var got, want []entry
	for _, sl := range s.appendTo(nil) {
		got = append(got, entry{short(sl.key()), sl.day()})
	}
	for k, d := range ref {
		want = append(want, entry{k, d})
	}
	cmpEntry := func(a, b entry) int { return slices.Compare(a.k[:], b.k[:]) }
	slices.SortFunc(got, cmpEntry)
	slices.SortFunc(want, cmpEntry)
	if !slices.Equal(got, want) {
		t.Fatalf("appendTo gave %d keys, want %d (or other keys or days)", len(got), len(want))
	}
	for k := range ref { // every key is still found where its probe sequence leads
		var full sigKey
		copy(full[:], k[:])
		if s.add(full, floor) {
			t.Fatalf("key %x lost by a prune", k)
		}
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
			s.add(k, 0)
		}
		i := n
		for b.Loop() {
			s.add(keys[i], 0)
			if i++; i == len(keys) {
				i = n
			}
		}
	})
	// As the committer inserts a signals record whose keys the caller hashed: each run of
	// sigTouchAhead keys touched first.
	b.Run("sigSet touched ahead", func(b *testing.B) {
		var s sigSet
		for _, k := range keys[:n] {
			s.add(k, 0)
		}
		var sink uint64
		i := n
		for b.Loop() {
			if (i-n)%sigTouchAhead == 0 {
				sink += s.touch(keys[i:min(i+sigTouchAhead, len(keys))])
			}
			s.add(keys[i], 0)
			if i++; i == len(keys) {
				i = n
			}
		}
		_ = sink
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
