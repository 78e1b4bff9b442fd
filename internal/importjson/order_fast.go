package importjson

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/jsonscan"
)

// orderVals holds the values an OrderRow's pointers point into (one per row of a chunk's slab).
type orderVals struct {
	id, status, channel, orderedAt, requestedDate, fill string
	priority, maxLocations, maxLatenessDays             int
	version                                             int64
	minQuantity                                         float64
}

// lineVals holds the values of one OrderLineRow.
type lineVals struct {
	lineID, sku, loc string
	qty              float64
}

// lineArena hands out lineVals in blocks, so that the pointers into them stay put.
type lineArena struct{ block []lineVals }

func (a *lineArena) next() *lineVals {
	if len(a.block) == cap(a.block) {
		a.block = make([]lineVals, 0, 1024)
	}
	a.block = append(a.block, lineVals{})
	return &a.block[len(a.block)-1]
}

var orderKeys = []string{"externalOrderId", "status", "channel", "orderedAt", "priority", "requestedDate", "fill",
	"minQuantity", "maxLocations", "maxLatenessDays", "version", "lines"}

var lineKeys = []string{"lineId", "skuId", "quantity", "locationId"}

// decodeOrderFast decodes a plain order row (string fields without escapes, numbers, nulls, lines
// as an array of plain objects, unknown keys skipped) into vals, lines and row; false means "use
// encoding/json", which then decides, and words the errors of, everything unusual: a key that
// only matches case-insensitively, an escape, invalid UTF-8, a type mismatch, an integer written
// as a fraction or out of range.
func decodeOrderFast(b []byte, in interner, vals *orderVals, lines *lineArena, row *supplyplan.OrderRow) bool {
	f := newFields(b, orderKeys)
	for f.next() {
		key, v := f.key, f.val
		null := len(v) == 4 && string(v) == "null"
		switch string(key) {
		case "externalOrderId", "status", "channel", "orderedAt", "requestedDate", "fill":
			var dst *string
			var field **string
			switch string(key) {
			case "externalOrderId":
				dst, field = &vals.id, &row.ExternalOrderID
			case "status":
				dst, field = &vals.status, &row.Status
			case "channel":
				dst, field = &vals.channel, &row.Channel
			case "orderedAt":
				dst, field = &vals.orderedAt, &row.OrderedAt
			case "requestedDate":
				dst, field = &vals.requestedDate, &row.RequestedDate
			default:
				dst, field = &vals.fill, &row.Fill
			}
			if null {
				*field = nil
				continue
			}
			sin := in
			if field == &row.ExternalOrderID {
				sin = nil
			}
			s, ok := plainString(v, sin)
			if !ok {
				return false
			}
			*dst, *field = s, dst
		case "priority", "maxLocations", "maxLatenessDays":
			var dst *int
			var field **int
			switch string(key) {
			case "priority":
				dst, field = &vals.priority, &row.Priority
			case "maxLocations":
				dst, field = &vals.maxLocations, &row.MaxLocations
			default:
				dst, field = &vals.maxLatenessDays, &row.MaxLatenessDays
			}
			if null {
				*field = nil
				continue
			}
			n, ok := plainInt(v)
			if !ok {
				return false
			}
			*dst, *field = int(n), dst
		case "version":
			if null {
				row.Version = nil
				continue
			}
			n, ok := plainInt(v)
			if !ok {
				return false
			}
			vals.version, row.Version = n, &vals.version
		case "minQuantity":
			if null {
				row.MinQuantity = nil
				continue
			}
			f, ok := plainFloat(v)
			if !ok {
				return false
			}
			vals.minQuantity, row.MinQuantity = f, &vals.minQuantity
		case "lines":
			if null {
				row.Lines = nil
				continue
			}
			ls, ok := decodeLinesFast(v, in, lines)
			if !ok {
				return false
			}
			row.Lines = ls
		}
	}
	return f.ok()
}

// decodeLinesFast decodes the lines array of an order row; an element that is not a plain object
// (null included) is encoding/json's.
func decodeLinesFast(b []byte, in interner, arena *lineArena) ([]supplyplan.OrderLineRow, bool) {
	if len(b) == 0 || b[0] != '[' {
		return nil, false
	}
	out := make([]supplyplan.OrderLineRow, 0, 4)
	i := 1
	for {
		i = jsonscan.SkipWS(b, i)
		if i >= len(b) {
			return nil, false
		}
		switch b[i] {
		case ']':
			return out, true
		case ',':
			i++
			continue
		case '{':
		default:
			return nil, false
		}
		es := i
		i = jsonscan.SkipValue(b, i)
		if i > len(b) {
			return nil, false
		}
		var line supplyplan.OrderLineRow
		vals := arena.next()
		f := newFields(b[es:i], lineKeys)
		for f.next() {
			key, v := f.key, f.val
			null := len(v) == 4 && string(v) == "null"
			if string(key) == "quantity" {
				if null {
					line.Quantity = nil
					continue
				}
				f, ok := plainFloat(v)
				if !ok {
					return nil, false
				}
				vals.qty, line.Quantity = f, &vals.qty
				continue
			}
			var dst *string
			var field **string
			switch string(key) {
			case "lineId":
				dst, field = &vals.lineID, &line.LineID
			case "skuId":
				dst, field = &vals.sku, &line.SKU
			case "locationId":
				dst, field = &vals.loc, &line.LocationID
			default:
				continue // unknown key: skipped, as encoding/json does
			}
			if null {
				*field = nil
				continue
			}
			sin := in
			if field == &line.LineID {
				sin = nil
			}
			s, ok := plainString(v, sin)
			if !ok {
				return nil, false
			}
			*dst, *field = s, dst
		}
		if !f.ok() {
			return nil, false
		}
		out = append(out, line)
	}
}

// fields walks the members of a plain JSON object, in order: next stops at each member whose key
// is one of known (key and val are set), skipping the others. It stops for good (ok false: the
// caller falls back to encoding/json) when the bytes are not a plain object, or when a key is not
// one of known but matches one of them case-insensitively or holds an escape (encoding/json's
// matching then decides). A loop over next instead of a callback keeps the caller's switch in the
// caller: with a closure the demand-history rows decoded a quarter slower.
type fields struct {
	b          []byte
	i          int
	known      []string
	key, val   []byte
	done, fine bool
}

func newFields(b []byte, known []string) fields {
	i := jsonscan.SkipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return fields{done: true}
	}
	return fields{b: b, i: i + 1, known: known}
}

// ok reports whether the walk reached the object's end cleanly.
func (f *fields) ok() bool { return f.done && f.fine }

func (f *fields) stop(fine bool) bool {
	f.done, f.fine = true, fine
	return false
}

func (f *fields) next() bool {
	b, i := f.b, f.i
	for !f.done {
		i = jsonscan.SkipWS(b, i)
		if i >= len(b) {
			return f.stop(false)
		}
		switch b[i] {
		case '}':
			return f.stop(jsonscan.SkipWS(b, i+1) == len(b))
		case ',':
			i++
			continue
		case '"':
		default:
			return f.stop(false)
		}
		ks := i + 1
		i = jsonscan.SkipString(b, i)
		if i > len(b) {
			return f.stop(false)
		}
		key := b[ks : i-1]
		i = jsonscan.SkipWS(b, i)
		if i >= len(b) || b[i] != ':' {
			return f.stop(false)
		}
		i = jsonscan.SkipWS(b, i+1)
		if i >= len(b) {
			return f.stop(false)
		}
		vs := i
		i = jsonscan.SkipValue(b, i)
		if i > len(b) {
			return f.stop(false)
		}
		if !isKey(key, f.known) {
			if foldsToKey(key, f.known) {
				return f.stop(false)
			}
			continue
		}
		f.i, f.key, f.val = i, key, b[vs:i]
		return true
	}
	return false
}

func isKey(k []byte, known []string) bool {
	for _, s := range known {
		if string(k) == s {
			return true
		}
	}
	return false
}

func foldsToKey(k []byte, known []string) bool {
	for _, s := range known {
		if bytes.EqualFold(k, []byte(s)) {
			return true
		}
	}
	return bytes.IndexByte(k, '\\') >= 0 || !utf8.Valid(k)
}

// plainString is a JSON string value without escapes and in valid UTF-8, interned unless in is
// nil (ids that are unique per row).
func plainString(v []byte, in interner) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' || bytes.IndexByte(v, '\\') >= 0 || !utf8.Valid(v) {
		return "", false
	}
	if in == nil {
		return string(v[1 : len(v)-1]), true
	}
	return in.of(v[1 : len(v)-1]), true
}

// plainInt is a JSON number written as an integer that fits 64 bits (what encoding/json accepts
// for an int field on a 64-bit platform; anything else is its error to word).
func plainInt(v []byte) (int64, bool) {
	if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
		return 0, false
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || strconv.IntSize != 64 {
		return 0, false
	}
	return n, true
}

// plainFloat is a JSON number in float64 range.
func plainFloat(v []byte) (float64, bool) {
	if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return 0, false
	}
	return f, true
}

// orderInBounds is supplyplan.CheckRowInput's verdict on an order row without its reflection: every
// string at most MaxNameLen bytes (the max tag of every string field of OrderRow and OrderLineRow,
// which TestOrderInBoundsCoversTheRow keeps true) and every number within ±MaxNumber. A row out of
// bounds goes to CheckRowInput, which names the field.
func orderInBounds(r *supplyplan.OrderRow) bool {
	for _, s := range []*string{r.ExternalOrderID, r.Status, r.Channel, r.OrderedAt, r.RequestedDate, r.Fill} {
		if s != nil && len(*s) > supplyplan.MaxNameLen {
			return false
		}
	}
	for _, n := range []*int{r.Priority, r.MaxLocations, r.MaxLatenessDays} {
		if n != nil && (*n < -supplyplan.MaxNumber || *n > supplyplan.MaxNumber) {
			return false
		}
	}
	if r.Version != nil && (*r.Version < -supplyplan.MaxNumber || *r.Version > supplyplan.MaxNumber) {
		return false
	}
	if r.MinQuantity != nil && !supplyplan.NumberOK(*r.MinQuantity) {
		return false
	}
	for i := range r.Lines {
		l := &r.Lines[i]
		for _, s := range []*string{l.LineID, l.SKU, l.LocationID} {
			if s != nil && len(*s) > supplyplan.MaxNameLen {
				return false
			}
		}
		if l.Quantity != nil && !supplyplan.NumberOK(*l.Quantity) {
			return false
		}
	}
	return true
}
