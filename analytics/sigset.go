package analytics

import "encoding/binary"

// sigSet is the set of applied signal keys of a tenant: open addressing with linear probing over
// flat arrays of keys. A key is the prefix of a SHA-256, uniformly random already, so its bytes are
// its hash: the last one picks one of sigSetSegments tables, the first eight the slot. Against
// map[sigKey]struct{} (the set before), an insert costs one probe of one array, usually one cache
// line, instead of hashing the key and probing a group's control word and then its slots: the map's
// probes were a third of the service's CPU while it drained a Kafka backlog into a set of a few
// million keys. The memory is about the same: 16 bytes a slot at a load of 3/8 to 3/4 (the map: 17
// bytes a slot at up to 7/8, doubling too). A table grows by rehashing its keys at once; with
// sigSetSegments tables that pause is a 64th of the set's (about 2.5 ms per table at 3 million keys
// in a profile of the Kafka section, so some tens of milliseconds at 50 million: an estimate, not
// measured there). The all-zero key, which marks an empty slot, is kept aside. A tenant's set takes
// up to 16 KiB once it holds a few dozen keys (64 tables of 16 slots).
type sigSet struct {
	segs [sigSetSegments]sigSeg
	n    int  // keys in segs
	zero bool // the all-zero key is in the set
}

type sigSeg struct {
	slots []sigKey // a power of two long; nil until the table's first key
	n     int
}

const (
	sigSetSegments = 64
	sigSegMinSlots = 16
)

func (s *sigSet) len() int {
	if s.zero {
		return s.n + 1
	}
	return s.n
}

// add inserts k and reports whether it was not in the set yet.
func (s *sigSet) add(k sigKey) bool {
	if k == (sigKey{}) {
		had := s.zero
		s.zero = true
		return !had
	}
	g := &s.segs[k[len(k)-1]%sigSetSegments]
	if (g.n+1)*4 > len(g.slots)*3 {
		g.grow()
	}
	mask := uint64(len(g.slots) - 1)
	for i := binary.LittleEndian.Uint64(k[:8]) & mask; ; i = (i + 1) & mask {
		switch g.slots[i] {
		case k:
			return false
		case sigKey{}:
			g.slots[i] = k
			g.n++
			s.n++
			return true
		}
	}
}

func (g *sigSeg) grow() {
	old := g.slots
	g.slots = make([]sigKey, max(sigSegMinSlots, 2*len(old)))
	mask := uint64(len(g.slots) - 1)
	for _, k := range old {
		if k == (sigKey{}) {
			continue
		}
		i := binary.LittleEndian.Uint64(k[:8]) & mask
		for g.slots[i] != (sigKey{}) {
			i = (i + 1) & mask
		}
		g.slots[i] = k
	}
}

// appendTo appends every key of the set to dst, in no particular order.
func (s *sigSet) appendTo(dst []sigKey) []sigKey {
	if s.zero {
		dst = append(dst, sigKey{})
	}
	for gi := range s.segs {
		for _, k := range s.segs[gi].slots {
			if k != (sigKey{}) {
				dst = append(dst, k)
			}
		}
	}
	return dst
}
