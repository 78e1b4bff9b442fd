package streams

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/jsonscan"
)

// Reasons a message is refused before it reaches the sink (see also the supplyplan.Reject* codes
// the sink returns). They are the dlq-reason header of a dead-lettered message.
const (
	ReasonMalformed   = "MALFORMED" // the value is not a JSON object
	ReasonInvalid     = supplyplan.RejectInvalidSignal
	ReasonKeyMismatch = "KEY_MISMATCH" // organizationId differs from the message key
)

// maxInterned bounds the decoder's string table; it is emptied when full.
const maxInterned = 1 << 16

// signalDecoder turns message values into DemandSignals. It is not safe for concurrent use: each
// partition worker owns one. It interns the low-cardinality strings (organization, SKU, location,
// channel), and the fast parser's signal id points into the message value, so a decoded signal
// costs no allocation: the value must not change while the signal is in use (kafka-go allocates
// each message's value; the batch keeps it, for dead-lettering, as long as its signals).
//
// A hand-written parser handles the common shape (a flat object, unescaped strings); anything else
// goes to encoding/json, and FuzzDecodeSignal checks both agree.
type signalDecoder struct {
	intern map[string]string
	last   [fieldAt + 1]string // the previous value of each field: consecutive messages repeat them
}

func newSignalDecoder() *signalDecoder { return &signalDecoder{intern: make(map[string]string, 256)} }

// decode parses value into out and validates it (supplyplan.NormalizeSignal) against the message
// key. On failure it returns a reason code and a message.
func (d *signalDecoder) decode(key, value []byte, out *supplyplan.DemandSignal) (reason, msg string) {
	var f rawSignal
	if !f.parse(value) {
		return d.decodeSlow(key, value, out)
	}
	*out = supplyplan.DemandSignal{
		SignalID:       unsafe.String(unsafe.SliceData(f.id), len(f.id)), // no copy: see signalDecoder
		OrganizationID: d.field(fieldOrg, f.org),
		SKU:            d.field(fieldSKU, f.sku),
		Location:       d.field(fieldLoc, f.loc),
		Channel:        d.field(fieldChannel, f.channel),
		Quantity:       f.qty,
	}
	if !f.hasQty {
		out.Quantity = 0
	}
	out.OccurredAt = parseSignalTime(f.at)
	return finishSignal(key, out, f.hasQty, true)
}

// field interns b, checking the field's previous value first.
func (d *signalDecoder) field(f int, b []byte) string {
	if string(b) == d.last[f] {
		return d.last[f]
	}
	s := d.str(b)
	d.last[f] = s
	return s
}

func (d *signalDecoder) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if s, ok := d.intern[string(b)]; ok {
		return s
	}
	if len(d.intern) >= maxInterned {
		clear(d.intern)
	}
	s := string(b)
	d.intern[s] = s
	return s
}

// wireSignal is the encoding/json view of a message, used when the fast parser declines.
type wireSignal struct {
	SignalID       string   `json:"signalId"`
	OrganizationID string   `json:"organizationId"`
	SKU            string   `json:"skuId"`
	Location       string   `json:"locationId"`
	Channel        string   `json:"channel"`
	Quantity       *float64 `json:"quantity"`
	OccurredAt     string   `json:"occurredAt"`
}

func (d *signalDecoder) decodeSlow(key, value []byte, out *supplyplan.DemandSignal) (reason, msg string) {
	var w wireSignal
	if err := json.Unmarshal(value, &w); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return ReasonInvalid, te.Field + ": wrong type (" + te.Value + ")"
		}
		return ReasonMalformed, "not a JSON object: " + err.Error()
	}
	*out = supplyplan.DemandSignal{
		SignalID:       w.SignalID,
		OrganizationID: d.str([]byte(w.OrganizationID)),
		SKU:            d.str([]byte(w.SKU)),
		Location:       d.str([]byte(w.Location)),
		Channel:        d.str([]byte(w.Channel)),
	}
	if w.Quantity != nil {
		out.Quantity = *w.Quantity
	}
	if w.OccurredAt != "" {
		out.OccurredAt, _ = supplyplan.ParseTime(w.OccurredAt)
	}
	return finishSignal(key, out, w.Quantity != nil, false)
}

// finishSignal validates s (NormalizeSignal). validUTF8 says its strings are known to be valid
// UTF-8: the fast parser's are (jsonscan.ScanString in strict mode declines any other).
func finishSignal(key []byte, s *supplyplan.DemandSignal, hasQty, validUTF8 bool) (reason, msg string) {
	normalize := supplyplan.NormalizeSignal
	if validUTF8 {
		normalize = supplyplan.NormalizeDecodedSignal
	}
	err := normalize(s)
	if !hasQty {
		if err == nil {
			err = &supplyplan.Error{Code: supplyplan.EVALIDATION, Details: map[string][]string{}}
		}
		if e, ok := err.(*supplyplan.Error); ok {
			e.Details["quantity"] = append([]string{"is required"}, e.Details["quantity"]...)
		}
	}
	if err != nil {
		return ReasonInvalid, validationMessage(err)
	}
	if string(key) != s.OrganizationID {
		return ReasonKeyMismatch, "organizationId " + strconv.Quote(s.OrganizationID) +
			" differs from the message key " + strconv.Quote(string(key))
	}
	return "", ""
}

// validationMessage renders a VALIDATION_ERROR as "field: problem; field: problem".
func validationMessage(err error) string {
	var e *supplyplan.Error
	if !errors.As(err, &e) || len(e.Details) == 0 {
		return err.Error()
	}
	fields := make([]string, 0, len(e.Details))
	for f := range e.Details {
		fields = append(fields, f)
	}
	slices.Sort(fields)
	var b strings.Builder
	for i, f := range fields {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(f + ": " + strings.Join(e.Details[f], ", "))
	}
	return b.String()
}

// parseSignalTime is supplyplan.ParseTime without allocating for the usual
// "2006-01-02T15:04:05[.fraction]Z" form; it returns the zero time when b is not a time.
func parseSignalTime(b []byte) time.Time {
	if t, ok := parseRFC3339UTC(b); ok {
		return t
	}
	if len(b) == 0 {
		return time.Time{}
	}
	t, _ := supplyplan.ParseTime(string(b))
	return t
}

// parseRFC3339UTC parses exactly YYYY-MM-DDTHH:MM:SS[.1-9 digits]Z in [supplyplan.MinTime,
// supplyplan.MaxTime].
func parseRFC3339UTC(b []byte) (time.Time, bool) {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' || b[len(b)-1] != 'Z' {
		return time.Time{}, false
	}
	num := func(s []byte) (int, bool) {
		n := 0
		for _, c := range s {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	y, ok1 := num(b[0:4])
	mo, ok2 := num(b[5:7])
	d, ok3 := num(b[8:10])
	h, ok4 := num(b[11:13])
	mi, ok5 := num(b[14:16])
	s, ok6 := num(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59 {
		return time.Time{}, false
	}
	if d > 28 && d > daysIn(mo, y) {
		return time.Time{}, false
	}
	ns := 0
	if frac := b[19 : len(b)-1]; len(frac) > 0 {
		if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
			return time.Time{}, false
		}
		n, ok := num(frac[1:])
		if !ok {
			return time.Time{}, false
		}
		for i := len(frac) - 1; i < 9; i++ {
			n *= 10
		}
		ns = n - n%int(time.Millisecond) // truncated to milliseconds, as ParseTime does
	}
	sec := daysFromCivil(y, mo, d)*86400 + int64(h*3600+mi*60+s)
	t := time.Unix(sec, int64(ns)).UTC()
	if !supplyplan.InTimeRange(t) { // as ParseTime: a time outside the accepted range is no time
		return time.Time{}, false
	}
	return t, true
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil returns the days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
// algorithm); time.Date does the same with more checks.
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := m + 9
	if m > 2 {
		mp = m - 3
	}
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

// rawSignal holds the fields the fast parser found, as slices of the message value.
type rawSignal struct {
	id, org, sku, loc, channel, at []byte
	qty                            float64
	hasQty                         bool
}

const (
	fieldUnknown = iota
	fieldID
	fieldOrg
	fieldSKU
	fieldLoc
	fieldChannel
	fieldQty
	fieldAt
)

var signalFieldNames = [...]string{fieldID: "signalId", fieldOrg: "organizationId", fieldSKU: "skuId",
	fieldLoc: "locationId", fieldChannel: "channel", fieldQty: "quantity", fieldAt: "occurredAt"}

// parse reads a flat JSON object. It returns false, leaving the verdict to encoding/json, on
// anything outside the common shape: escapes, nested values, invalid UTF-8, keys that differ from
// a field name only by case, type mismatches, numbers out of range, syntax errors.
func (f *rawSignal) parse(b []byte) bool {
	i := jsonscan.SkipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = jsonscan.SkipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return jsonscan.SkipWS(b, i+1) == len(b)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		k, j, ok := jsonscan.ScanString(b, i+1, true)
		if !ok {
			return false
		}
		field := matchField(k)
		if field < 0 {
			return false
		}
		i = jsonscan.SkipWS(b, j)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = jsonscan.SkipWS(b, i+1)
		if i >= len(b) {
			return false
		}
		switch field {
		case fieldQty:
			switch {
			case b[i] == 'n':
				if !jsonscan.Literal(b, i, "null") {
					return false
				}
				f.hasQty = false // encoding/json sets a pointer to nil on null
				i += 4
			default:
				j, fault := jsonscan.ScanNumber(b, i)
				if fault != jsonscan.NumberOK {
					return false
				}
				v, ok := jsonscan.ParseDecimal(b[i:j])
				if !ok {
					var err error
					if v, err = strconv.ParseFloat(string(b[i:j]), 64); err != nil {
						return false
					}
				}
				f.qty, f.hasQty = v, true
				i = j
			}
		case fieldUnknown:
			j := jsonscan.SkipScalar(b, i)
			if j < 0 {
				return false
			}
			i = j
		default:
			switch b[i] {
			case '"':
				s, j, ok := jsonscan.ScanString(b, i+1, true)
				if !ok {
					return false
				}
				f.set(field, s)
				i = j
			case 'n': // null leaves a string unchanged
				if !jsonscan.Literal(b, i, "null") {
					return false
				}
				i += 4
			default:
				return false
			}
		}
		i = jsonscan.SkipWS(b, i)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = jsonscan.SkipWS(b, i+1)
		case '}':
			return jsonscan.SkipWS(b, i+1) == len(b)
		default:
			return false
		}
	}
}

func (f *rawSignal) set(field int, s []byte) {
	switch field {
	case fieldID:
		f.id = s
	case fieldOrg:
		f.org = s
	case fieldSKU:
		f.sku = s
	case fieldLoc:
		f.loc = s
	case fieldChannel:
		f.channel = s
	case fieldAt:
		f.at = s
	}
}

// matchField returns the field a key names, fieldUnknown, or -1 when the key is not plain ASCII or
// matches a field only case-insensitively (encoding/json folds case; we leave those to it).
func matchField(k []byte) int {
	switch string(k) {
	case "signalId":
		return fieldID
	case "organizationId":
		return fieldOrg
	case "skuId":
		return fieldSKU
	case "locationId":
		return fieldLoc
	case "channel":
		return fieldChannel
	case "quantity":
		return fieldQty
	case "occurredAt":
		return fieldAt
	}
	for _, c := range k {
		if c >= utf8.RuneSelf {
			return -1
		}
	}
	for f := fieldID; f <= fieldAt; f++ {
		if len(k) == len(signalFieldNames[f]) && bytes.EqualFold(k, []byte(signalFieldNames[f])) {
			return -1
		}
	}
	return fieldUnknown
}
