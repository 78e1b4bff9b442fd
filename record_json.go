package supplyplan

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Hand-written JSON encodings of the record values written once per order line (orders,
// reservations, allocations and their events) and once per event write (the event and its
// change-history entry): an orders import with allocation journals about a kilobyte of them per
// line, and encoding/json's reflection over them was the largest cost of the tenant's actor in
// those writes. Each writes exactly the bytes encoding/json writes for the value
// (record_json_test.go checks it on random values); anything they do not handle the way
// encoding/json does (a number that is not finite, a time outside the years 0 to 9999, event data
// of another type) makes them report false, and EncodeRecords encodes that record with
// encoding/json instead. AppendJSON offers them to the response and snapshot encoders.

// jsonAppender is a record value with a hand-written encoding: appendJSON appends the value's
// JSON to b, or reports false when it cannot (the caller then uses encoding/json).
type jsonAppender interface {
	appendJSON(b []byte) ([]byte, bool)
}

// encodeRecordsFast is EncodeRecords for entries whose values have hand-written encodings; the
// other records of the entry go through encoding/json one by one.
func encodeRecordsFast(recs []Record) ([]byte, error) {
	b := entryBuffer(encodedSizeHint(recs))
	b = append(b, '[')
	var lastRecs lastRecommendations
	for i, r := range recs {
		if cap(b)-len(b) < 4096 && cap(b) >= 16<<10 { // grow by doubling (append grows large slices by a quarter)
			b = slices.Grow(b, cap(b))
		}
		if i > 0 {
			b = append(b, ',')
		}
		mark := len(b)
		if r.Kind == KindPendingEvent { // an allocation event its allocation rebuilds: a reference to it
			var ok bool
			if b, ok = appendAllocationEventRef(b, recs, i); ok {
				continue
			}
			if b, ok = appendRecommendationEventRef(b, recs, i, &lastRecs); ok {
				continue
			}
		}
		if r.Kind == KindForecastChange { // an event entry pending with the event of its transaction
			var ok bool
			if b, ok = appendChangeEventRef(b, recs, i); ok {
				continue
			}
		}
		if a, ok := r.Value.(jsonAppender); ok && !r.Del {
			var fine bool
			b = append(b, `{"k":`...)
			if b, fine = appendJSONString(b, r.Kind); fine {
				b = append(b, `,"i":`...)
				if b, fine = appendJSONString(b, r.ID); fine {
					b = append(b, `,"v":`...)
					if b, fine = a.appendJSON(b); fine {
						b = append(b, '}')
						continue
					}
				}
			}
			b = b[:mark]
		}
		if r.Del && r.Value == nil { // a deletion: what encoding/json writes for it
			b = append(b, `{"k":`...)
			b, _ = appendJSONString(b, r.Kind)
			b = append(b, `,"i":`...)
			b, _ = appendJSONString(b, r.ID)
			b = append(b, `,"d":true}`...)
			continue
		}
		v, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		b = append(b, v...)
	}
	return append(b, ']'), nil
}

// Large entries (an orders chunk journals about 10 MB) are encoded into buffers that come back
// once the journal is done with them (RecycleEntry): allocating one per chunk was a fifth of the
// bytes an orders import with allocation allocates, each of them a step towards the next garbage
// collection over the whole tenant state.
const (
	minPooledEntry = 1 << 20  // smaller entries are allocated as needed
	maxPooledEntry = 64 << 20 // larger ones (rare) are not kept
)

var entryPool sync.Pool // of *[]byte, capacity minPooledEntry to maxPooledEntry

// Small entries (a loop transition journals about 3 KB) come back too, as buffers of
// smallEntryCap bytes: one fresh buffer per entry was a fifth of the bytes a loop transition
// allocated.
const smallEntryCap = 8 << 10

var smallEntryPool sync.Pool // of *[]byte, capacity smallEntryCap

// entryBuffer returns an empty buffer of at least size bytes, a recycled one when it is large or
// small.
func entryBuffer(size int) []byte {
	if size <= smallEntryCap {
		if p, ok := smallEntryPool.Get().(*[]byte); ok {
			return (*p)[:0]
		}
		return make([]byte, 0, smallEntryCap)
	}
	if size >= minPooledEntry && size <= maxPooledEntry {
		if p, ok := entryPool.Get().(*[]byte); ok {
			if cap(*p) >= size {
				return (*p)[:0]
			}
			entryPool.Put(p) // too small for this one: kept for a smaller entry
		}
	}
	return make([]byte, 0, size)
}

// RecycleEntry hands back the bytes of a journal entry EncodeRecords returned, once nothing reads
// them any more (the journal called the append's done without an error): a later entry may be
// encoded into them. Not calling it is always correct.
func RecycleEntry(b []byte) {
	switch c := cap(b); {
	case c == smallEntryCap:
		b = b[:0]
		smallEntryPool.Put(&b)
	case c >= minPooledEntry && c <= maxPooledEntry:
		b = b[:0]
		entryPool.Put(&b)
	}
}

// encodedSizeHint is about the size of the entry's JSON (a little more for the common values), so
// that it is written into one buffer without growing it. It counts the strings of the values
// written once per order line: an overestimate of those is allocated for nothing on every chunk
// of an orders import (it was 35 % over, 5 MB a chunk), an underestimate doubles the buffer.
func encodedSizeHint(recs []Record) int {
	n := 64
	for _, r := range recs {
		n += 48 + len(r.Kind) + len(r.ID)
		switch v := r.Value.(type) {
		case *Reservation:
			n += 240
			if v != nil {
				n += len(v.ID) + len(v.OrderID) + len(v.LineID) + len(v.SKU) + len(v.LocationID)
			}
		case *Allocation:
			n += 200
			if v != nil {
				n += len(v.OrderID)
				for i := range v.Lines {
					l := &v.Lines[i]
					n += 140 + len(l.LineID) + len(l.SKU) + 90*len(l.Backorders)
					for _, a := range l.Allocations {
						n += 60 + len(a.LocationID) + len(a.ReservationID)
					}
				}
			}
		case *LoopInstance:
			n += 640
			if v != nil {
				n += len(v.Input)
			}
		case *LoopEvent:
			n += 560
			if v != nil {
				n += len(v.Payload)
			}
		case *DomainEvent:
			n += 360
			if v == nil {
				break
			}
			switch d := v.Data.(type) {
			case LoopEventData:
				n += 720 + len(d.Event.Payload)
			case AllocationSucceeded, AllocationFailed:
				// most are written as a reference to their allocation (allocation_event_ref.go)
				n -= 175
			case Recommendation:
				if d.Explanation != nil {
					n += recommendationSizeHint(&d)
				} // else mostly written as a reference to its recommendation (recommendation_event_ref.go)
			}
		case *ExternalEvent:
			n += 420
		case *ChangeFigures:
			n += 200
		case *ChangeEntry:
			n += 300
			if v != nil && v.Pending != nil {
				n += 840
			}
		case *Order:
			n += 140
			if v != nil {
				n += len(v.ExternalOrderID) + len(v.Status) + len(v.Channel)
				for i := range v.Lines {
					l := &v.Lines[i]
					n += 60 + len(l.LineID) + len(l.SKU) + len(l.LocationID)
				}
			}
		case *InventoryLevel:
			n += 150
			if v != nil {
				n += len(v.SKU) + len(v.LocationID) + 40*(len(v.Bins)+len(v.Lots))
			}
		case *Recommendation:
			n += recommendationSizeHint(v)
		default:
			n += 512
		}
	}
	return n
}

// recommendationSizeHint is encodedSizeHint's part for a recommendation (a little more than the
// JSON of one with an explanation and a reason of the engine's).
func recommendationSizeHint(v *Recommendation) int {
	n := 300
	if v != nil {
		n += len(v.ID) + len(v.ProductMasterID) + len(v.SourceLocationID) + len(v.DestLocationID) + len(v.Reason)
		if v.Explanation != nil {
			n += 820 + len(v.Explanation.Formula)
		}
	}
	return n
}

// appendJSONString appends s quoted and escaped exactly as encoding/json does (HTML characters
// escaped, invalid UTF-8 replaced by U+FFFD, U+2028 and U+2029 escaped). It always succeeds; the
// bool keeps the shape of the other appenders.
func appendJSONString(b []byte, s string) ([]byte, bool) {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if jsonPlain[s[i]] { // one load per character: six comparisons were 7 % of a write's CPU
			i++
			continue
		}
		if c := s[i]; c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"'), true
}

// jsonPlain marks the bytes appendJSONString copies as they are: ASCII from 0x20 up but for '"',
// '\\' and the HTML characters '<', '>' and '&'.
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendJSONFloat appends f as encoding/json does; false when it is not finite (an error there).
func appendJSONFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	if i := int64(f); float64(i) == f && i > -1e15 && i < 1e15 && (i != 0 || !math.Signbit(f)) {
		return strconv.AppendInt(b, i, 10), true // a whole quantity: the same digits, faster
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' { // clean up e-09 to e-9, as encoding/json does
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

// appendJSONTime appends t as time.Time.MarshalJSON does; false outside the years 0 to 9999.
func appendJSONTime(b []byte, t time.Time) ([]byte, bool) {
	if y := t.Year(); y < 0 || y > 9999 {
		return b, false
	}
	b = append(b, '"')
	if t.Location() == time.UTC {
		b = appendUTCNano(b, t)
	} else {
		b = t.AppendFormat(b, time.RFC3339Nano)
	}
	return append(b, '"'), true
}

// appendUTCNano is t.AppendFormat(b, time.RFC3339Nano) for a time in UTC with a year of four
// digits, without the layout's interpretation: every record of an allocated order carries one or
// two times, and the general formatter was a twentieth of the tenant actor's time in the
// allocation benchmark. TestAppendUTCNano holds it to AppendFormat.
func appendUTCNano(b []byte, t time.Time) []byte {
	y, mo, d := t.Date()
	h, mi, sec := t.Clock()
	b = append(b, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
		byte('0'+int(mo)/10), byte('0'+int(mo)%10), '-', byte('0'+d/10), byte('0'+d%10), 'T',
		byte('0'+h/10), byte('0'+h%10), ':', byte('0'+mi/10), byte('0'+mi%10), ':', byte('0'+sec/10), byte('0'+sec%10))
	if ns := t.Nanosecond(); ns != 0 {
		var frac [10]byte
		frac[0] = '.'
		for i := 9; i >= 1; i-- {
			frac[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := 10
		for frac[n-1] == '0' {
			n--
		}
		b = append(b, frac[:n]...)
	}
	return append(b, 'Z')
}

// jsonWriter chains the appends of one value: the first failure sticks.
type jsonWriter struct {
	b  []byte
	ok bool
}

func (w *jsonWriter) raw(s string) { w.b = append(w.b, s...) }

func (w *jsonWriter) str(s string) {
	if w.ok {
		w.b, w.ok = appendJSONString(w.b, s)
	}
}

func (w *jsonWriter) num(f float64) {
	if w.ok {
		w.b, w.ok = appendJSONFloat(w.b, f)
	}
}

func (w *jsonWriter) int(n int64) { w.b = strconv.AppendInt(w.b, n, 10) }

// strs writes a []string that is not omitempty (null when nil).
func (w *jsonWriter) strs(ss []string) {
	if ss == nil {
		w.raw("null")
		return
	}
	w.raw("[")
	for i, s := range ss {
		if i > 0 {
			w.raw(",")
		}
		w.str(s)
	}
	w.raw("]")
}

func (w *jsonWriter) bool(v bool) { w.b = strconv.AppendBool(w.b, v) }

func (w *jsonWriter) time(t time.Time) {
	if w.ok {
		w.b, w.ok = appendJSONTime(w.b, t)
	}
}

// timePtr writes a *time.Time that is not omitempty (null when nil).
func (w *jsonWriter) timePtr(t *time.Time) {
	if t == nil {
		w.raw("null")
		return
	}
	w.time(*t)
}

func (r *Reservation) appendJSON(b []byte) ([]byte, bool) {
	if r == nil {
		return append(b, "null"...), true
	}
	w := jsonWriter{b: b, ok: true}
	w.raw(`{"id":`)
	w.str(r.ID)
	w.raw(`,"orderId":`)
	w.str(r.OrderID)
	w.raw(`,"orderVersion":`)
	w.int(r.OrderVersion)
	w.raw(`,"lineId":`)
	w.str(r.LineID)
	w.raw(`,"skuId":`)
	w.str(r.SKU)
	w.raw(`,"locationId":`)
	w.str(r.LocationID)
	w.raw(`,"quantity":`)
	w.num(r.Quantity)
	w.raw(`,"status":`)
	w.str(string(r.Status))
	if r.ExpiresAt != nil {
		w.raw(`,"expiresAt":`)
		w.time(*r.ExpiresAt)
	}
	w.raw(`,"priority":`)
	w.int(int64(r.Priority))
	w.raw(`,"createdAt":`)
	w.time(r.CreatedAt)
	w.raw(`,"updatedAt":`)
	w.time(r.UpdatedAt)
	if r.ReleasedAt != nil {
		w.raw(`,"releasedAt":`)
		w.time(*r.ReleasedAt)
	}
	if r.ReleaseReason != "" {
		w.raw(`,"releaseReason":`)
		w.str(r.ReleaseReason)
	}
	w.raw("}")
	return w.b, w.ok
}

// lineAllocations writes a []LineAllocation that is not omitempty (null when nil).
func (w *jsonWriter) lineAllocations(as []LineAllocation) {
	if as == nil {
		w.raw("null")
		return
	}
	w.raw("[")
	for i, a := range as {
		if i > 0 {
			w.raw(",")
		}
		w.raw(`{"locationId":`)
		w.str(a.LocationID)
		w.raw(`,"quantity":`)
		w.num(a.Quantity)
		w.raw(`,"reservationId":`)
		w.str(a.ReservationID)
		w.raw("}")
	}
	w.raw("]")
}

func (a *Allocation) appendJSON(b []byte) ([]byte, bool) {
	if a == nil {
		return append(b, "null"...), true
	}
	w := jsonWriter{b: b, ok: true}
	w.raw(`{"orderId":`)
	w.str(a.OrderID)
	w.raw(`,"orderVersion":`)
	w.int(a.OrderVersion)
	w.raw(`,"status":`)
	w.str(string(a.Status))
	if a.ReasonCode != "" {
		w.raw(`,"reasonCode":`)
		w.str(a.ReasonCode)
	}
	w.raw(`,"fill":`)
	w.str(string(a.Fill))
	w.raw(`,"priority":`)
	w.int(int64(a.Priority))
	w.raw(`,"lines":`)
	if a.Lines == nil {
		w.raw("null")
	} else {
		w.raw("[")
		for i := range a.Lines {
			l := &a.Lines[i]
			if i > 0 {
				w.raw(",")
			}
			w.raw(`{"lineId":`)
			w.str(l.LineID)
			w.raw(`,"skuId":`)
			w.str(l.SKU)
			w.raw(`,"quantity":`)
			w.num(l.Quantity)
			w.raw(`,"allocations":`)
			w.lineAllocations(l.Allocations)
			w.raw(`,"backorderedQuantity":`)
			w.num(l.BackorderedQuantity)
			if len(l.Backorders) > 0 {
				w.raw(`,"backorders":[`)
				for j, bo := range l.Backorders {
					if j > 0 {
						w.raw(",")
					}
					w.raw(`{"locationId":`)
					w.str(bo.LocationID)
					w.raw(`,"quantity":`)
					w.num(bo.Quantity)
					w.raw(`,"promiseDate":`)
					w.time(bo.PromiseDate)
					w.raw("}")
				}
				w.raw("]")
			}
			w.raw(`,"shortfall":`)
			w.num(l.Shortfall)
			w.raw(`,"promiseDate":`)
			w.timePtr(l.PromiseDate)
			w.raw("}")
		}
		w.raw("]")
	}
	if a.EarliestPromiseDate != nil {
		w.raw(`,"earliestPromiseDate":`)
		w.time(*a.EarliestPromiseDate)
	}
	w.raw(`,"notified":`)
	w.bool(a.Notified)
	w.raw(`,"createdAt":`)
	w.time(a.CreatedAt)
	w.raw(`,"updatedAt":`)
	w.time(a.UpdatedAt)
	w.raw("}")
	return w.b, w.ok
}

func (o *Order) appendJSON(b []byte) ([]byte, bool) {
	if o == nil {
		return append(b, "null"...), true
	}
	w := jsonWriter{b: b, ok: true}
	w.raw(`{"externalOrderId":`)
	w.str(o.ExternalOrderID)
	w.raw(`,"status":`)
	w.str(o.Status)
	if o.Channel != "" {
		w.raw(`,"channel":`)
		w.str(o.Channel)
	}
	if o.OrderedAt != nil {
		w.raw(`,"orderedAt":`)
		w.time(*o.OrderedAt)
	}
	// OrderTerms: every field omitempty
	if o.Priority != 0 {
		w.raw(`,"priority":`)
		w.int(int64(o.Priority))
	}
	if o.RequestedDate != nil {
		w.raw(`,"requestedDate":`)
		w.time(*o.RequestedDate)
	}
	if o.Fill != "" {
		w.raw(`,"fill":`)
		w.str(string(o.Fill))
	}
	if o.MinQuantity != 0 {
		w.raw(`,"minQuantity":`)
		w.num(o.MinQuantity)
	}
	if o.MaxLocations != 0 {
		w.raw(`,"maxLocations":`)
		w.int(int64(o.MaxLocations))
	}
	if o.MaxLatenessDays != 0 {
		w.raw(`,"maxLatenessDays":`)
		w.int(int64(o.MaxLatenessDays))
	}
	if o.Version != 0 {
		w.raw(`,"version":`)
		w.int(o.Version)
	}
	w.raw(`,"lines":`)
	if o.Lines == nil {
		w.raw("null")
	} else {
		w.raw("[")
		for i, l := range o.Lines {
			if i > 0 {
				w.raw(",")
			}
			w.raw("{")
			if l.LineID != "" {
				w.raw(`"lineId":`)
				w.str(l.LineID)
				w.raw(",")
			}
			w.raw(`"skuId":`)
			w.str(l.SKU)
			w.raw(`,"quantity":`)
			w.num(l.Quantity)
			w.raw(`,"locationId":`)
			w.str(l.LocationID)
			w.raw("}")
		}
		w.raw("]")
	}
	w.raw(`,"createdAt":`)
	w.time(o.CreatedAt)
	w.raw(`,"updatedAt":`)
	w.time(o.UpdatedAt)
	w.raw("}")
	return w.b, w.ok
}

// appendJSON of an event handles the allocation events' data; any other data goes through
// encoding/json (false).
func (e *DomainEvent) appendJSON(b []byte) ([]byte, bool) {
	if e == nil {
		return append(b, "null"...), true
	}
	w := jsonWriter{b: b, ok: true}
	w.raw(`{"id":`)
	w.str(e.ID)
	w.raw(`,"type":`)
	w.str(e.Type)
	w.raw(`,"organizationId":`)
	w.str(e.OrganizationID)
	w.raw(`,"timestamp":`)
	w.time(e.Timestamp)
	w.raw(`,"data":`)
	switch d := e.Data.(type) {
	case AllocationSucceeded:
		w.raw(`{"orderId":`)
		w.str(d.OrderID)
		w.raw(`,"orderVersion":`)
		w.int(d.OrderVersion)
		w.raw(`,"partial":`)
		w.bool(d.Partial)
		w.raw(`,"lines":`)
		if d.Lines == nil {
			w.raw("null")
		} else {
			w.raw("[")
			for i, l := range d.Lines {
				if i > 0 {
					w.raw(",")
				}
				w.raw(`{"lineId":`)
				w.str(l.LineID)
				w.raw(`,"allocations":`)
				w.lineAllocations(l.Allocations)
				w.raw(`,"backorderedQuantity":`)
				w.num(l.BackorderedQuantity)
				w.raw(`,"promiseDate":`)
				w.timePtr(l.PromiseDate)
				w.raw("}")
			}
			w.raw("]")
		}
		w.raw("}")
	case AllocationFailed:
		w.raw(`{"orderId":`)
		w.str(d.OrderID)
		w.raw(`,"orderVersion":`)
		w.int(d.OrderVersion)
		w.raw(`,"reasonCode":`)
		w.str(d.ReasonCode)
		if d.Message != "" {
			w.raw(`,"message":`)
			w.str(d.Message)
		}
		w.raw(`,"lines":`)
		if d.Lines == nil {
			w.raw("null")
		} else {
			w.raw("[")
			for i, l := range d.Lines {
				if i > 0 {
					w.raw(",")
				}
				w.raw(`{"lineId":`)
				w.str(l.LineID)
				w.raw(`,"shortfall":`)
				w.num(l.Shortfall)
				w.raw("}")
			}
			w.raw("]")
		}
		w.raw(`,"earliestPromiseDate":`)
		w.timePtr(d.EarliestPromiseDate)
		w.raw("}")
	case LoopEventData:
		w.loopEventData(&d)
	case Recommendation: // recommendation.created and .expired (without the explanation)
		var ok bool
		if w.b, ok = d.appendJSON(w.b); !ok {
			return b, false
		}
	default:
		return b, false
	}
	w.raw("}")
	return w.b, w.ok
}

// AppendJSON appends v's JSON as json.Marshal writes it when v (or a pointer to it) has a
// hand-written encoding, and reports whether it did; on false b is returned unchanged and the
// caller encodes v with encoding/json.
func AppendJSON(b []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case jsonAppender:
		if out, ok := v.appendJSON(b); ok {
			return out, true
		}
	case ExternalEvent:
		if out, ok := v.appendJSON(b); ok {
			return out, true
		}
	case ChangeEntry:
		if out, ok := v.appendJSON(b); ok {
			return out, true
		}
	case Scenario:
		if out, ok := v.appendJSON(b); ok {
			return out, true
		}
	}
	return b, false
}

// quantity writes a *Quantity as its MarshalJSON does (null when nil).
func (w *jsonWriter) quantity(q *Quantity) {
	if q == nil {
		w.raw("null")
		return
	}
	v := RoundQuantity(float64(*q))
	if math.IsNaN(v) || math.IsInf(v, 0) {
		w.ok = false
		return
	}
	w.b = strconv.AppendFloat(w.b, v, 'f', -1, 64)
}

func (e *ExternalEvent) appendJSON(b []byte) ([]byte, bool) {
	if e == nil {
		return append(b, "null"...), true
	}
	w := jsonWriter{b: b, ok: true}
	w.raw(`{"id":`)
	w.str(e.ID)
	w.raw(`,"name":`)
	w.str(e.Name)
	w.raw(`,"type":`)
	w.str(string(e.Type))
	w.raw(`,"startsAt":`)
	w.time(e.StartsAt)
	w.raw(`,"endsAt":`)
	w.time(e.EndsAt)
	if v := e.Value; v != nil {
		w.raw(`,"value":`)
		sep := `{`
		field := func(name string) {
			w.raw(sep)
			w.raw(name)
			sep = `,`
		}
		if v.LiftPct != nil {
			field(`"liftPct":`)
			w.num(*v.LiftPct)
		}
		if v.StackingMode != "" {
			field(`"stackingMode":`)
			w.str(string(v.StackingMode))
		}
		if v.Description != "" {
			field(`"description":`)
			w.str(v.Description)
		}
		if v.PriceChangePct != nil {
			field(`"priceChangePct":`)
			w.num(*v.PriceChangePct)
		}
		if v.Mechanic != "" {
			field(`"mechanic":`)
			w.str(v.Mechanic)
		}
		if v.Intensity != nil {
			field(`"intensity":`)
			w.num(*v.Intensity)
		}
		if sep == `{` {
			w.raw("{")
		}
		w.raw("}")
	}
	w.raw(`,"isGlobal":`)
	w.bool(e.IsGlobal)
	w.raw(`,"isOrgWide":`)
	w.bool(e.IsOrgWide)
	if e.ProductMasterID != "" {
		w.raw(`,"productMasterId":`)
		w.str(e.ProductMasterID)
	}
	if e.LocationID != "" {
		w.raw(`,"locationId":`)
		w.str(e.LocationID)
	}
	if p := e.ProductMaster; p != nil {
		w.raw(`,"productMaster":{"id":`)
		w.str(p.ID)
		w.raw(`,"name":`)
		w.str(p.Name)
		w.raw(`,"sku":`)
		w.str(p.SKU)
		w.raw("}")
	}
	if l := e.Location; l != nil {
		w.raw(`,"location":{"id":`)
		w.str(l.ID)
		w.raw(`,"name":`)
		w.str(l.Name)
		if l.Code != "" {
			w.raw(`,"code":`)
			w.str(l.Code)
		}
		w.raw("}")
	}
	w.raw(`,"createdAt":`)
	w.time(e.CreatedAt)
	w.raw(`,"updatedAt":`)
	w.time(e.UpdatedAt)
	w.raw("}")
	return w.b, w.ok
}

func (c *ChangeEntry) appendJSON(b []byte) ([]byte, bool) { return c.appendJSONForm(b, false) }

// appendJSONForm is appendJSON, leaving out the pending effect's new event when newByRef (the
// journal's reference form, change_event_ref.go).
func (c *ChangeEntry) appendJSONForm(b []byte, newByRef bool) ([]byte, bool) {
	if c == nil {
		return append(b, "null"...), true
	}
	w := jsonWriter{b: b, ok: true}
	w.raw(`{"id":`)
	w.str(c.ID)
	w.raw(`,"changeType":`)
	w.str(c.ChangeType)
	if c.ScenarioID != "" {
		w.raw(`,"scenarioId":`)
		w.str(c.ScenarioID)
	}
	if c.EventID != "" {
		w.raw(`,"eventId":`)
		w.str(c.EventID)
	}
	if c.ProductMasterID != "" {
		w.raw(`,"productMasterId":`)
		w.str(c.ProductMasterID)
	}
	if c.LocationID != "" {
		w.raw(`,"locationId":`)
		w.str(c.LocationID)
	}
	w.raw(`,"actor":`)
	w.str(c.Actor)
	w.raw(`,"previousTotal":`)
	w.quantity(c.PreviousTotal)
	w.raw(`,"newTotal":`)
	w.quantity(c.NewTotal)
	w.raw(`,"delta":`)
	w.quantity(c.Delta)
	if c.HorizonWeeks != 0 {
		w.raw(`,"horizonWeeks":`)
		w.int(int64(c.HorizonWeeks))
	}
	if c.SeriesCount != 0 {
		w.raw(`,"seriesCount":`)
		w.int(int64(c.SeriesCount))
	}
	w.raw(`,"reason":`)
	w.str(c.Reason)
	w.raw(`,"createdAt":`)
	w.time(c.CreatedAt)
	if c.EffectStatus != "" {
		w.raw(`,"effectStatus":`)
		w.str(c.EffectStatus)
	}
	if c.UpdatedAt != nil {
		w.raw(`,"updatedAt":`)
		w.time(*c.UpdatedAt)
	}
	if p := c.Pending; p != nil {
		w.raw(`,"pending":{`)
		if p.Old != nil && w.ok {
			w.raw(`"old":`)
			w.b, w.ok = p.Old.appendJSON(w.b)
		}
		if p.New != nil && !newByRef && w.ok {
			if p.Old != nil {
				w.raw(",")
			}
			w.raw(`"new":`)
			w.b, w.ok = p.New.appendJSON(w.b)
		}
		w.raw("}")
	}
	w.raw("}")
	return w.b, w.ok
}

// appendJSON of a change entry's figures: the record completing every pending entry.
func (f *ChangeFigures) appendJSON(b []byte) ([]byte, bool) {
	if f == nil {
		return append(b, "null"...), true
	}
	w := jsonWriter{b: b, ok: true}
	w.raw(`{"previousTotal":`)
	w.quantity(f.PreviousTotal)
	w.raw(`,"newTotal":`)
	w.quantity(f.NewTotal)
	w.raw(`,"delta":`)
	w.quantity(f.Delta)
	if f.SeriesCount != 0 {
		w.raw(`,"seriesCount":`)
		w.int(int64(f.SeriesCount))
	}
	w.raw(`,"effectStatus":`)
	w.str(f.EffectStatus)
	if f.UpdatedAt != nil {
		w.raw(`,"updatedAt":`)
		w.time(*f.UpdatedAt)
	}
	w.raw("}")
	return w.b, w.ok
}

// AppendJSONString appends s as a JSON string, escaped exactly as encoding/json escapes it.
func AppendJSONString(b []byte, s string) []byte {
	b, _ = appendJSONString(b, s)
	return b
}

// AppendEventJSON is AppendScenarioJSON for an event (the answer of every event write).
func AppendEventJSON(b []byte, e *ExternalEvent) ([]byte, bool) { return e.appendJSON(b) }

// AppendScenarioJSON appends s as json.Marshal writes it, or reports false (b unchanged up to
// its length) when encoding/json must do it (a number that is not finite, a time out of range).
// Unlike AppendJSON it takes no interface: the caller's scenario stays on its stack.
func AppendScenarioJSON(b []byte, s *Scenario) ([]byte, bool) { return s.appendJSON(b) }

// appendJSON of a scenario: the body of every scenario read (GET /api/forecast/scenarios/[id]),
// where encoding/json's reflection was the largest cost of the handler.
func (s *Scenario) appendJSON(b []byte) ([]byte, bool) {
	if s == nil {
		return append(b, "null"...), true
	}
	w := jsonWriter{b: b, ok: true}
	w.raw(`{"id":`)
	w.str(s.ID)
	w.raw(`,"name":`)
	w.str(s.Name)
	if s.Description != "" {
		w.raw(`,"description":`)
		w.str(s.Description)
	}
	w.raw(`,"type":`)
	w.str(string(s.Type))
	w.raw(`,"status":`)
	w.str(string(s.Status))
	a := &s.Assumptions
	w.raw(`,"assumptions":`)
	sep := `{`
	field := func(name string) {
		w.raw(sep)
		w.raw(name)
		sep = `,`
	}
	if a.Narrative != "" {
		field(`"narrative":`)
		w.str(a.Narrative)
	}
	if a.GlobalLiftPct != nil {
		field(`"globalLiftPct":`)
		w.num(*a.GlobalLiftPct)
	}
	if a.CategoryAdjustments != nil {
		field(`"categoryAdjustments":[`)
		for i, c := range a.CategoryAdjustments {
			if i > 0 {
				w.raw(",")
			}
			w.raw(`{"categoryId":`)
			w.str(c.CategoryID)
			w.raw(`,"liftPct":`)
			w.num(c.LiftPct)
			w.raw("}")
		}
		w.raw("]")
	}
	if a.ChannelAdjustments != nil {
		field(`"channelAdjustments":[`)
		for i, c := range a.ChannelAdjustments {
			if i > 0 {
				w.raw(",")
			}
			w.raw(`{"channelId":`)
			w.str(c.ChannelID)
			w.raw(`,"liftPct":`)
			w.num(c.LiftPct)
			w.raw("}")
		}
		w.raw("]")
	}
	if a.IncludedEventIDs != nil {
		field(`"includedEventIds":`)
		w.strs(a.IncludedEventIDs)
	}
	if sep == `{` {
		w.raw("{")
	}
	w.raw("}")
	w.raw(`,"createdAt":`)
	w.time(s.CreatedAt)
	w.raw(`,"updatedAt":`)
	w.time(s.UpdatedAt)
	if s.PublishedAt != nil {
		w.raw(`,"publishedAt":`)
		w.time(*s.PublishedAt)
	}
	if s.ArchivedAt != nil {
		w.raw(`,"archivedAt":`)
		w.time(*s.ArchivedAt)
	}
	w.raw("}")
	return w.b, w.ok
}

// appendJSON writes an inventory level as encoding/json does: a tenant of millions of levels
// journals them by the million in imports and writes them all in each snapshot, where reflection
// made a snapshot of 2 million levels take seconds of the actor's shutdown.
func (l *InventoryLevel) appendJSON(b []byte) ([]byte, bool) {
	if l == nil {
		return append(b, "null"...), true
	}
	w := jsonWriter{b: b, ok: true}
	w.raw(`{"skuId":`)
	w.str(l.SKU)
	w.raw(`,"locationId":`)
	w.str(l.LocationID)
	w.raw(`,"quantityOnHand":`)
	w.num(l.QuantityOnHand)
	w.raw(`,"quantityReserved":`)
	w.num(l.QuantityReserved)
	w.raw(`,"reorderPoint":`)
	w.num(l.ReorderPoint)
	if len(l.Bins) > 0 {
		w.raw(`,"bins":`)
		sep := "{"
		for _, k := range slices.Sorted(maps.Keys(l.Bins)) { // encoding/json sorts map keys
			w.raw(sep)
			sep = ","
			w.str(k)
			w.raw(":")
			w.num(l.Bins[k])
		}
		w.raw("}")
	}
	if len(l.Lots) > 0 {
		w.raw(`,"lots":`)
		sep := "["
		for i := range l.Lots {
			lot := &l.Lots[i]
			w.raw(sep)
			sep = ","
			w.raw(`{"lotId":`)
			w.str(lot.LotID)
			w.raw(`,"quantity":`)
			w.num(lot.Quantity)
			if lot.ExpiresAt != nil {
				w.raw(`,"expiresAt":`)
				w.time(*lot.ExpiresAt)
			}
			w.raw("}")
		}
		w.raw("]")
	}
	w.raw(`,"updatedAt":`)
	w.time(l.UpdatedAt)
	w.raw("}")
	return w.b, w.ok
}

// optTime writes an omitempty *time.Time member (key holds the comma and the name).
func (w *jsonWriter) optTime(key string, t *time.Time) {
	if t != nil {
		w.raw(key)
		w.time(*t)
	}
}

// optStr writes an omitempty string member.
func (w *jsonWriter) optStr(key, s string) {
	if s != "" {
		w.raw(key)
		w.str(s)
	}
}

// numPtr writes a *float64 that is not omitempty (null when nil).
func (w *jsonWriter) numPtr(f *float64) {
	if f == nil {
		w.raw("null")
		return
	}
	w.num(*f)
}

func (w *jsonWriter) stockPosition(p *StockPosition) {
	w.raw(`{"locationId":`)
	w.str(p.LocationID)
	w.raw(`,"onHand":`)
	w.num(p.OnHand)
	w.raw(`,"reserved":`)
	w.num(p.Reserved)
	w.raw(`,"available":`)
	w.num(p.Available)
	w.raw(`,"inbound":`)
	w.num(p.Inbound)
	w.raw(`,"reorderPoint":`)
	w.num(p.ReorderPoint)
	w.raw(`,"forecastOverWindow":`)
	w.num(p.Forecast)
	w.raw(`,"weeksOfCoverBefore":`)
	w.numPtr(p.WeeksOfCoverBefore)
	w.raw(`,"weeksOfCoverAfter":`)
	w.numPtr(p.WeeksOfCoverAfter)
	w.raw(`,"daysToStockoutBefore":`)
	w.numPtr(p.DaysToStockoutBefore)
	w.raw(`,"daysToStockoutAfter":`)
	w.numPtr(p.DaysToStockoutAfter)
	w.raw(`,"projectedEndBefore":`)
	w.num(p.ProjectedEndBefore)
	w.raw(`,"projectedEndAfter":`)
	w.num(p.ProjectedEndAfter)
	w.raw("}")
}

// appendJSON writes a transfer recommendation as encoding/json does: a generation journals tens
// of thousands in one entry (50,306 for the transfers benchmark's tenant), and reflecting on each
// was a seventh of the generation's CPU, with its garbage.
func (r *Recommendation) appendJSON(b []byte) ([]byte, bool) {
	if r == nil {
		return append(b, "null"...), true
	}
	w := jsonWriter{b: b, ok: true}
	w.raw(`{"id":`)
	w.str(r.ID)
	w.raw(`,"productMasterId":`)
	w.str(r.ProductMasterID)
	w.raw(`,"sourceLocationId":`)
	w.str(r.SourceLocationID)
	w.raw(`,"destLocationId":`)
	w.str(r.DestLocationID)
	w.raw(`,"quantity":`)
	w.num(r.Quantity)
	w.raw(`,"priority":`)
	w.str(string(r.Priority))
	w.raw(`,"status":`)
	w.str(string(r.Status))
	w.raw(`,"reason":`)
	w.str(r.Reason)
	if r.EstimatedROI != nil {
		w.raw(`,"estimatedROI":`)
		w.num(*r.EstimatedROI)
	}
	if x := r.Explanation; x != nil {
		w.raw(`,"explanation":{"source":`)
		w.stockPosition(&x.Source)
		w.raw(`,"destination":`)
		w.stockPosition(&x.Destination)
		w.raw(`,"windowWeeks":`)
		w.int(int64(x.WindowWeeks))
		w.raw(`,"transferLeadTimeDays":`)
		w.num(x.LeadTimeDays)
		w.raw(`,"destinationShortfall":`)
		w.num(x.Shortfall)
		w.raw(`,"sourceSurplus":`)
		w.num(x.Surplus)
		w.raw(`,"stockDifferencePct":`)
		w.num(x.StockDifferencePct)
		w.raw(`,"lostSalesAvoided":`)
		w.num(x.LostSalesAvoided)
		w.raw(`,"unitMargin":`)
		w.numPtr(x.UnitMargin)
		w.raw(`,"unitMarginSource":`)
		w.str(x.UnitMarginSource)
		w.raw(`,"transferCostPerUnit":`)
		w.num(x.TransferCostPerUnit)
		w.raw(`,"transferCost":`)
		w.num(x.TransferCost)
		w.raw(`,"marginSaved":`)
		w.numPtr(x.MarginSaved)
		w.raw(`,"formula":`)
		w.str(x.Formula)
		w.raw("}")
	}
	w.raw(`,"createdAt":`)
	w.time(r.CreatedAt)
	w.raw(`,"updatedAt":`)
	w.time(r.UpdatedAt)
	w.raw(`,"expiresAt":`)
	w.time(r.ExpiresAt)
	w.optTime(`,"approvedAt":`, r.ApprovedAt)
	w.optStr(`,"approvedBy":`, r.ApprovedBy)
	w.optTime(`,"rejectedAt":`, r.RejectedAt)
	w.optStr(`,"rejectedBy":`, r.RejectedBy)
	w.optStr(`,"comment":`, r.Comment)
	w.optTime(`,"executedAt":`, r.ExecutedAt)
	w.optStr(`,"executedBy":`, r.ExecutedBy)
	w.optStr(`,"transferId":`, r.TransferID)
	w.optTime(`,"expiredAt":`, r.ExpiredAt)
	w.optStr(`,"expiryReason":`, r.ExpiryReason)
	w.raw("}")
	return w.b, w.ok
}

// touched keeps TouchEvents' loads from being removed as dead code.
var touched atomic.Uint64

// TouchEvents reads every event of evs, then the strings and the value each points to, then each
// value's lift (one more pointer): the loads of one pass do not depend on each other, so the processor has their cache misses in flight
// together, and the encoding that follows (a snapshot's, of events visited in a map's order) finds
// them in the cache rather than waiting for each in turn.
func TouchEvents(evs []*ExternalEvent) {
	var sum uint64
	for _, e := range evs {
		if e != nil {
			sum += uint64(len(e.ID) + len(e.Name) + len(e.ProductMasterID))
		}
	}
	for _, e := range evs {
		if e == nil {
			continue
		}
		if len(e.ID) > 0 {
			sum += uint64(e.ID[0])
		}
		if len(e.Name) > 0 {
			sum += uint64(e.Name[0])
		}
		if len(e.ProductMasterID) > 0 {
			sum += uint64(e.ProductMasterID[0])
		}
		if e.Value != nil {
			sum += uint64(len(e.Value.StackingMode))
		}
	}
	for _, e := range evs {
		if e != nil && e.Value != nil && e.Value.LiftPct != nil {
			sum += uint64(*e.Value.LiftPct)
		}
	}
	touched.Add(sum)
}
