package analytics

import (
	"encoding/binary"
	"math"
)

// sigSet is the set of applied signal keys of a tenant, each with the week of its signal:
// open addressing with linear probing over flat arrays of 16-byte slots. A key is the prefix of a
// SHA-256, uniformly random already, so its bytes are its hash: its 14th byte picks one of
// sigSetSegments tables, its first eight the slot. Against map[sigKey]struct{} (the set before),
// an insert costs one probe of one array, usually one cache line, instead of hashing the key and
// probing a group's control word and then its slots: the map's probes were a third of the
// service's CPU while it drained a Kafka backlog into a set of a few million keys.
//
// A slot holds the key's first 14 bytes (112 bits: a collision needs about 2^56 ids) and the week
// of its signal in the last two, so that a slot stays 16 bytes, four to a cache line: slots of the
// whole key and a 4-byte day (20 bytes) made an insert at 3 million keys 30 % slower. The load is
// 3/8 to 3/4. A table grows by rehashing its keys at once; with sigSetSegments tables that pause
// is a 64th of the set's (about 2.5 ms per table at 3 million keys in a profile of the Kafka
// section, so some tens of milliseconds at 50 million: an estimate, not measured there). The
// all-zero key, whose slot would read as empty, is kept aside. A tenant's set takes up to 16 KiB
// once it holds a few dozen keys (64 tables of 16 slots).
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

// sigSlot is a key's bytes 0-7 (a) and 8-13 (the low 48 bits of b), and its week in the top 16
// bits of b (sigWeekUnknown for a key of an earlier version's snapshot, which kept no weeks: see
// prune). All zero: an empty slot.
type sigSlot struct{ a, b uint64 }

const (
	sigSetSegments = 64
	sigSegMinSlots = 16
	sigDayUnknown  = math.MinInt32
	sigWeekUnknown = 0xffff
	sigKeyMask     = 1<<48 - 1
	// sigDay0 is the Unix day of the first Monday a week can start on (1970-01-05,
	// supplyplan.MinTime); a slot's week counts from it.
	sigDay0 = 4
)

// sigWeek packs a day (the Monday of a week, or sigDayUnknown) into a slot's 16 bits.
func sigWeek(day int32) uint64 {
	if day == sigDayUnknown {
		return sigWeekUnknown
	}
	return uint64(day-sigDay0) / 7 // weeks to 2100: under 6,800
}

func slotOf(k sigKey, day int32) sigSlot {
	return sigSlot{binary.LittleEndian.Uint64(k[:8]), uint64(binary.LittleEndian.Uint32(k[8:12])) | uint64(binary.LittleEndian.Uint16(k[12:14]))<<32 | sigWeek(day)<<48}
}

// day returns the slot's week as the Unix day of its Monday, or sigDayUnknown.
func (s sigSlot) day() int32 {
	w := s.b >> 48
	if w == sigWeekUnknown {
		return sigDayUnknown
	}
	return int32(w)*7 + sigDay0
}

// key returns the slot's key: its 14 bytes, then two zero bytes.
func (s sigSlot) key() sigKey {
	var k sigKey
	binary.LittleEndian.PutUint64(k[:8], s.a)
	binary.LittleEndian.PutUint64(k[8:], s.b&sigKeyMask)
	return k
}

func (s *sigSet) len() int {
	if s.zero {
		return s.n + 1
	}
	return s.n
}

// add inserts k (its first 14 bytes) with the day of its week and reports whether it was not in
// the set yet (a key already there keeps its day).
func (s *sigSet) add(k sigKey, day int32) bool {
	sl := slotOf(k, day)
	if sl.a == 0 && sl.b&sigKeyMask == 0 {
		had := s.zero
		if !had {
			s.zero, s.zeroDay = true, day
		}
		return !had
	}
	g := &s.segs[k[13]%sigSetSegments]
	if (g.n+1)*4 > len(g.slots)*3 {
		g.resize(max(sigSegMinSlots, 2*len(g.slots)))
	}
	mask := uint64(len(g.slots) - 1)
	for i := sl.a & mask; ; i = (i + 1) & mask {
		cur := &g.slots[i]
		if cur.a == sl.a && cur.b&sigKeyMask == sl.b&sigKeyMask { // never an empty slot: the zero key is aside
			return false
		}
		if cur.a == 0 && cur.b == 0 {
			*cur = sl
			g.n++
			s.n++
			return true
		}
	}
}

// sigTouchAhead is how many keys touch reads at once: the slots' cache lines are then fetched
// together, where inserting one key after the other waited for each line in turn (the set is far
// larger than the caches: about one miss per key).
const sigTouchAhead = 16

// touch reads the home slot of each key, so that the inserts that follow find their lines in the
// cache; it returns a value made of what it read, for the caller to keep (a load whose value is
// unused may be dropped by the compiler). It changes nothing: a table it read may be resized
// before the inserts, which then only miss as they would have.
func (s *sigSet) touch(keys []sigKey) uint64 {
	var sum uint64
	for i := range keys {
		k := &keys[i]
		g := &s.segs[k[13]%sigSetSegments]
		if len(g.slots) == 0 {
			continue
		}
		sum += g.slots[binary.LittleEndian.Uint64(k[:8])&uint64(len(g.slots)-1)].a
	}
	return sum
}

// resize rehashes the table's keys into size slots.
func (g *sigSeg) resize(size int) {
	old := g.slots
	g.slots = make([]sigSlot, size)
	mask := uint64(size - 1)
	for _, sl := range old {
		if sl.a == 0 && sl.b == 0 {
			continue
		}
		i := sl.a & mask
		for g.slots[i].a != 0 || g.slots[i].b != 0 {
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
			if sl.a == 0 && sl.b == 0 {
				continue
			}
			day := sl.day()
			if day == sigDayUnknown {
				day = unknownAs
				sl.b = sl.b&sigKeyMask | sigWeek(day)<<48
			}
			if day < floor {
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
		if kept == 0 {
			g.slots = nil
			continue
		}
		size := sigSegMinSlots
		for kept*4 > size*3 {
			size *= 2
		}
		g.resize(size) // emptied slots broke the probe sequences of the keys after them: rehash
	}
}

// appendTo appends every slot of the set to dst, in no particular order (the all-zero key's as a
// slot of key zero).
func (s *sigSet) appendTo(dst []sigSlot) []sigSlot {
	if s.zero {
		dst = append(dst, sigSlot{b: sigWeek(s.zeroDay) << 48})
	}
	for gi := range s.segs {
		for _, sl := range s.segs[gi].slots {
			if sl.a != 0 || sl.b != 0 {
				dst = append(dst, sl)
			}
		}
	}
	return dst
}
