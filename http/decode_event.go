package http

import (
	"strconv"
	"unicode/utf8"

	"github.com/supplyplan/supplyplan"
)

// decodeEvent decodes the body of an event create or update. The usual body (known keys, each
// once, plain strings without escapes, numbers, booleans, nulls) is read by a hand-written
// decoder without reflection: event writes are the hot write path, and the general decoder's two
// passes (strictjson.Check, then encoding/json) were its largest cost. Anything else (an unknown
// or case-variant key, a key twice, an escape, a wrong type, bad syntax) goes through the general
// decoder, which alone produces the errors: both give the same EventInput for every body the fast
// one takes (decode_event_test.go checks it).
func (r *Request) decodeEvent(in *supplyplan.EventInput) error {
	b, err := r.Body()
	if err != nil {
		return err
	}
	if (r.decodeLimit <= 0 || len(b) <= r.decodeLimit) && decodeEventFast(b, in) {
		if !eventInBounds(in) {
			return supplyplan.CheckInput(in) // its error names the fields
		}
	} else {
		*in = supplyplan.EventInput{}
		if err := decodeJSON(b, r.decodeLimit, in); err != nil {
			return err
		}
	}
	in.Checked = true // decodeJSON ran CheckInput, or eventInBounds found what it would
	return nil
}

// eventInBounds reports whether supplyplan.CheckInput(in) is nil, without reflection: every
// string within its field's max tag, every number finite within ±MaxNumber
// (decode_event_test.go holds it to CheckInput).
func eventInBounds(in *supplyplan.EventInput) bool {
	short := func(s *string, max int) bool { return s == nil || len(*s) <= max }
	num := func(f *float64) bool { return f == nil || supplyplan.NumberOK(*f) }
	const name = supplyplan.MaxNameLen
	if !short(in.Name, name) || !short(in.Type, name) || !short(in.StartsAt, name) || !short(in.EndsAt, name) ||
		!short(in.ProductMasterID, name) || !short(in.LocationID, name) {
		return false
	}
	v := in.Value
	return v == nil || short(v.StackingMode, name) && short(v.Description, supplyplan.MaxDescriptionLen) &&
		short(v.Mechanic, name) && num(v.LiftPct) && num(v.PriceChangePct) && num(v.Intensity)
}

// decodeEventFast fills in from body and reports true, or reports false (in then holds garbage)
// when body is not of the usual shape.
func decodeEventFast(body []byte, in *supplyplan.EventInput) bool {
	*in = supplyplan.EventInput{}
	p := fastJSON{b: body}
	var seen uint16
	ok := p.object(func(key []byte) bool {
		switch string(key) {
		case "name":
			return p.once(&seen, 1) && p.strPtr(&in.Name)
		case "type":
			return p.once(&seen, 2) && p.enumPtr(&in.Type, eventTypeNames)
		case "startsAt":
			return p.once(&seen, 4) && p.strPtr(&in.StartsAt)
		case "endsAt":
			return p.once(&seen, 8) && p.strPtr(&in.EndsAt)
		case "productMasterId":
			return p.once(&seen, 16) && p.strPtr(&in.ProductMasterID)
		case "locationId":
			return p.once(&seen, 32) && p.strPtr(&in.LocationID)
		case "isGlobal":
			return p.once(&seen, 64) && p.boolPtr(&in.IsGlobal)
		case "isOrgWide":
			return p.once(&seen, 128) && p.boolPtr(&in.IsOrgWide)
		case "value":
			if !p.once(&seen, 256) {
				return false
			}
			if p.null() {
				in.Value = nil
				return true
			}
			v := &supplyplan.EventValueInput{}
			in.Value = v
			var vseen uint16
			return p.object(func(key []byte) bool {
				switch string(key) {
				case "liftPct":
					return p.once(&vseen, 1) && p.numPtr(&v.LiftPct)
				case "stackingMode":
					return p.once(&vseen, 2) && p.enumPtr(&v.StackingMode, stackingModeNames)
				case "description":
					return p.once(&vseen, 4) && p.strPtr(&v.Description)
				case "priceChangePct":
					return p.once(&vseen, 8) && p.numPtr(&v.PriceChangePct)
				case "mechanic":
					return p.once(&vseen, 16) && p.strPtr(&v.Mechanic)
				case "intensity":
					return p.once(&vseen, 32) && p.numPtr(&v.Intensity)
				}
				return false
			})
		}
		return false
	})
	if !ok {
		return false
	}
	p.ws()
	return p.i == len(p.b)
}

// fastJSON reads the plain subset of JSON the fast decoders take; every method reports false on
// anything outside it (the caller then uses the general decoder).
type fastJSON struct {
	b []byte
	i int
	// strs and nums hold the values strPtr and numPtr point to, a block at a time (one allocation
	// for the usual body's strings instead of one per field; pointers into a block stay valid
	// because a full block is replaced, never grown).
	strs []string
	nums []float64
}

func (p *fastJSON) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// once sets bit in seen, false when it was set (a key twice: the general decoder rejects it).
func (p *fastJSON) once(seen *uint16, bit uint16) bool {
	if *seen&bit != 0 {
		return false
	}
	*seen |= bit
	return true
}

// object reads an object, calling field for each key with the reader at the value.
func (p *fastJSON) object(field func(key []byte) bool) bool {
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		return false
	}
	p.i++
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return true
	}
	for {
		p.ws()
		key, ok := p.plain()
		if !ok {
			return false
		}
		p.ws()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return false
		}
		p.i++
		p.ws()
		if !field(key) {
			return false
		}
		p.ws()
		if p.i >= len(p.b) {
			return false
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return true
		default:
			return false
		}
	}
}

// plain reads a string without escapes or control characters, in valid UTF-8: its bytes are
// the decoded string.
func (p *fastJSON) plain() ([]byte, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false
	}
	start := p.i + 1
	ascii := true
	for j := start; j < len(p.b); j++ {
		c := p.b[j]
		switch {
		case c == '"':
			s := p.b[start:j]
			if !ascii && !utf8.Valid(s) {
				return nil, false
			}
			p.i = j + 1
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

func (p *fastJSON) null() bool {
	if len(p.b)-p.i >= 4 && string(p.b[p.i:p.i+4]) == "null" {
		p.i += 4
		return true
	}
	return false
}

func (p *fastJSON) strPtr(dst **string) bool {
	if p.null() {
		*dst = nil
		return true
	}
	s, ok := p.plain()
	if !ok {
		return false
	}
	p.keep(dst, string(s))
	return true
}

// keep points dst at v, held in the current block of strs.
func (p *fastJSON) keep(dst **string, v string) {
	if len(p.strs) == cap(p.strs) {
		p.strs = make([]string, 0, 8)
	}
	p.strs = append(p.strs, v)
	*dst = &p.strs[len(p.strs)-1]
}

// The values of the enum fields, as strings: an event's type and stacking mode are kept in the
// tenant's state for as long as the event, and decoded as one of these they share its memory
// instead of being one more allocation (and one more object for the collector) per event.
var (
	eventTypeNames    = enumNames(supplyplan.EventTypes)
	stackingModeNames = enumNames(supplyplan.StackingModes)
)

func enumNames[E ~string](values []E) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

// enumPtr is strPtr for a field with known values: a value among names is not copied (any other
// is, and the validation names it).
func (p *fastJSON) enumPtr(dst **string, names []string) bool {
	if p.null() {
		*dst = nil
		return true
	}
	s, ok := p.plain()
	if !ok {
		return false
	}
	for _, n := range names {
		if string(s) == n {
			p.keep(dst, n)
			return true
		}
	}
	p.keep(dst, string(s))
	return true
}

func (p *fastJSON) boolPtr(dst **bool) bool {
	if p.null() {
		*dst = nil
		return true
	}
	var v bool
	switch {
	case len(p.b)-p.i >= 4 && string(p.b[p.i:p.i+4]) == "true":
		v, p.i = true, p.i+4
	case len(p.b)-p.i >= 5 && string(p.b[p.i:p.i+5]) == "false":
		v, p.i = false, p.i+5
	default:
		return false
	}
	*dst = &v
	return true
}

// numPtr reads a JSON number (its exact grammar) as encoding/json does: strconv.ParseFloat of
// its text; out of range is left to the general decoder (an error there).
func (p *fastJSON) numPtr(dst **float64) bool {
	if p.null() {
		*dst = nil
		return true
	}
	b, start := p.b, p.i
	j := start
	digits := func() bool {
		k := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		return j > k
	}
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case j < len(b) && b[j] >= '1' && b[j] <= '9':
		digits()
	default:
		return false
	}
	if j < len(b) && b[j] == '.' {
		j++
		if !digits() {
			return false
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if !digits() {
			return false
		}
	}
	f, err := strconv.ParseFloat(string(b[start:j]), 64)
	if err != nil {
		return false
	}
	p.i = j
	if len(p.nums) == cap(p.nums) {
		p.nums = make([]float64, 0, 4)
	}
	p.nums = append(p.nums, f)
	*dst = &p.nums[len(p.nums)-1]
	return true
}
