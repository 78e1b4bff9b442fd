package analytics

import (
	"encoding/binary"
	"math"
)

// sigSet is the set of applied signal keys of a tenant, each with the week of its signal:
// open addressing with linear probing over flat arrays of slots. A key is the prefix of a SHA-256,
// uniformly random already, so its bytes are its hash: the last one picks one of sigSetSegments
// tables, the first eight the slot. Against map[sigKey]struct{} (the set before), an insert costs
// one probe of one array, usually one cache line, instead of hashing the key and probing a group's
// control word and then its slots: the map's probes were a third of the service's CPU while it
// drained a Kafka backlog into a set of a few million keys. A slot is 20 bytes (the key and its
// week's day) at a load of 3/8 to 3/4. A table grows by rehashing its keys at once; with
// sigSetSegments tables that pause is a 64th of the set's (about 2.5 ms per table at 3 million keys
// in a profile of the Kafka section, so some tens of milliseconds at 50 million: an estimate, not
// measured there). The all-zero key, which marks an empty slot, is kept aside. A tenant's set takes
// up to 20 KiB once it holds a few dozen keys (64 tables of 16 slots).
//
// The set holds the keys of the signals of the dedup window only (supplyplan.SignalDedupWeeks):
// prune drops the others when the window moves, so that it grows with the signal rate times the
// window, not with every signal ever applied.
type sigSet struct {
	segs    [sigSetSegments]sigSeg
	n       int   // keys in segs
	zero    bool  // the all-zero key is in the set
	zeroDay int32 // its day
}

type sigSeg struct {
	slots []sigSlot // a power of two long; nil until the table's first key
	n     int
}

// sigSlot is a key and the Unix day of the Monday of its signal's week; sigDayUnknown for a key
// read from a snapshot of an earlier version, which kept no weeks (see prune).
type sigSlot struct {
	k   sigKey
	day int32
}

const (
	sigSetSegments = 64
	sigSegMinSlots = 16
	sigDayUnknown  = math.MinInt32
)

func (s *sigSet) len() int {
	if s.zero {
		return s.n + 1
	}
	return s.n
}

// add inserts k with the day of its week and reports whether it was not in the set yet (a key
// already there keeps its day).
func (s *sigSet) add(k sigKey, day int32) bool {
	if k == (sigKey{}) {
		had := s.zero
		if !had {
			s.zero, s.zeroDay = true, day
		}
		return !had
	}
	g := &s.segs[k[len(k)-1]%sigSetSegments]
	if (g.n+1)*4 > len(g.slots)*3 {
		g.resize(max(sigSegMinSlots, 2*len(g.slots)))
	}
	mask := uint64(len(g.slots) - 1)
	for i := binary.LittleEndian.Uint64(k[:8]) & mask; ; i = (i + 1) & mask {
		switch g.slots[i].k {
		case k:
			return false
		case sigKey{}:
			g.slots[i] = sigSlot{k, day}
			g.n++
			s.n++
			return true
		}
	}
}

// resize rehashes the table's keys into size slots.
func (g *sigSeg) resize(size int) {
	old := g.slots
	g.slots = make([]sigSlot, size)
	mask := uint64(size - 1)
	for _, sl := range old {
		if sl.k == (sigKey{}) {
			continue
		}
		i := binary.LittleEndian.Uint64(sl.k[:8]) & mask
		for g.slots[i].k != (sigKey{}) {
			i = (i + 1) & mask
		}
		g.slots[i] = sl
	}
}

// prune drops the keys whose day is before floor; a key of unknown day is given unknownAs first
// (the newest week known before the window moved, so that it goes a window later, as a key of
// that week would). Each table is rebuilt at the size its remaining keys need.
func (s *sigSet) prune(floor, unknownAs int32) {
	if s.zero {
		if s.zeroDay == sigDayUnknown {
			s.zeroDay = unknownAs
		}
		s.zero = s.zeroDay >= floor
	}
	for gi := range s.segs {
		g := &s.segs[gi]
		kept := 0
		for i := range g.slots {
			sl := &g.slots[i]
			if sl.k == (sigKey{}) {
				continue
			}
			if sl.day == sigDayUnknown {
				sl.day = unknownAs
			}
			if sl.day < floor {
				*sl = sigSlot{}
				continue
			}
			kept++
		}
		if kept == g.n {
			continue // nothing dropped: the probe sequences are intact
		}
		s.n -= g.n - kept
		g.n = kept
		size := sigSegMinSlots
		for kept*4 > size*3 {
			size *= 2
		}
		if kept == 0 {
			g.slots = nil
			continue
		}
		g.resize(size) // emptied slots broke the probe sequences of the keys after them: rehash
	}
}

// appendTo appends every slot of the set to dst, in no particular order.
func (s *sigSet) appendTo(dst []sigSlot) []sigSlot {
	if s.zero {
		dst = append(dst, sigSlot{day: s.zeroDay})
	}
	for gi := range s.segs {
		for _, sl := range s.segs[gi].slots {
			if sl.k != (sigKey{}) {
				dst = append(dst, sl)
			}
		}
	}
	return dst
}
