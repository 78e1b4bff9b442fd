package supplyplan

import (
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The bounds of everything the service accepts, in one place (docs/api.md#limits lists them). Every
// entry point checks them through this file: REST bodies and MCP tool arguments through CheckInput
// (called by the one request decoder, by tools.DecodeArgs and by the domain's Validate methods), import
// rows through CheckRowInput (called by the row decoder of internal/importjson) and the row checks of
// import_apply.go, demand signals (HTTP and Kafka) through NormalizeSignal, dates through ParseTime.

// Numbers.
const (
	// MaxNumber bounds every number a client sends: quantities, costs, prices, amounts and margins
	// are finite and within ±MaxNumber. With bounded inputs, sums over any realistic count of them
	// stay finite (the float64 range ends near 1.8e308).
	MaxNumber = 1e12
	// MaxStored bounds the numbers the service keeps and serves: a stock level or bin (the sum of
	// imports and transfers), a line, a lot, a week of demand (its import plus its signals). It is
	// 1,000 times MaxNumber, so sums of many bounded inputs fit. A change that would take a stock
	// level beyond it is refused. A stored value beyond it, or not finite, was written by an earlier
	// version without bounds: it is quarantined when it is loaded (see docs/api.md#limits).
	MaxStored = 1e15
)

// MaxShelfLifeDays bounds a product's shelfLifeDays (100 years).
const MaxShelfLifeDays = 36500

// NumberRange is the accepted range of a number, as error messages state it.
const NumberRange = "between -1e12 and 1e12"

// NumberOK reports whether v is finite and within ±MaxNumber.
func NumberOK(v float64) bool { return v >= -MaxNumber && v <= MaxNumber } // false for NaN

// StoredOK reports whether a number kept by the service is finite and within ±MaxStored.
func StoredOK(v float64) bool { return v >= -MaxStored && v <= MaxStored } // false for NaN

// WeekDemandOK reports whether a stored week's actual and forecasted demand may be served.
func WeekDemandOK(actual, forecasted float64) bool { return StoredOK(actual) && StoredOK(forecasted) }

// Dates. Every date or date-time the service accepts, after its zone offset is applied (and, for a
// date-only endsAt, after it is moved to the end of its day), lies in [MinTime, MaxTime]. The range
// keeps every date encodable as JSON (years 0 to 9999) and storable in ClickHouse (Date and DateTime
// hold 1970 to 2105), and every ISO week inside it starts on or after MinTime, a Monday, with room
// after MaxTime for forecast horizons.
var (
	MinTime = time.Date(1970, 1, 5, 0, 0, 0, 0, time.UTC)
	MaxTime = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
)

// TimeRange describes [MinTime, MaxTime] in messages.
const TimeRange = "between 1970-01-05T00:00:00Z and 2100-01-01T00:00:00Z"

// TimeMessage is the message of a date field that does not parse or lies outside the range.
const TimeMessage = "must be an ISO date or date-time " + TimeRange

// InTimeRange reports whether t lies in [MinTime, MaxTime].
func InTimeRange(t time.Time) bool { return !t.Before(MinTime) && !t.After(MaxTime) }

// String lengths (bytes of UTF-8). Every string field of every input has a maximum: the one its
// `max` struct tag gives, MaxTextLen when it has none. Validate methods check tighter ones (enums,
// slugs, mechanics, URLs) on top.
const (
	// MaxNameLen bounds names, ids, codes, SKUs, channels and categories.
	MaxNameLen = 200
	// MaxDescriptionLen bounds descriptions and comments.
	MaxDescriptionLen = 5000
	// MaxNotesLen bounds the notes of an inventory transfer.
	MaxNotesLen = 5000
	// MaxNarrativeLen bounds a scenario's assumptions.narrative.
	MaxNarrativeLen = 20000
	// MaxTextLen bounds any string field without a tighter maximum.
	MaxTextLen = 5000
	// MaxListItems bounds the lists of a scenario's assumptions.
	MaxListItems = 1000
)

// maxInputProblems caps the fields one CheckInput names: enough to fix a request, never a huge answer.
const maxInputProblems = 20

// CheckInput checks a decoded input (a struct, a pointer to one, or a map or slice of them) against
// the bounds: every string at most its field's `max` tag (MaxTextLen without one; a slice or map
// field's tag applies to its items), every number finite and within ±MaxNumber. Fields are named by
// their JSON path (`lines[0].quantity`). Its error is a VALIDATION_ERROR; nil when all is well.
// json.RawMessage fields are left to whoever decodes them.
func CheckInput(v any) error { return checkInputAt("", v) }

// checkInputAt is CheckInput for an input that sits at path in its request body.
func checkInputAt(path string, v any) error {
	if !(&inputChecker{first: true}).check(v) {
		return nil
	}
	c := inputChecker{fe: FieldErrors{}, paths: true}
	c.walk(path, reflect.ValueOf(v), MaxTextLen)
	return c.fe.Err()
}

// CheckRowInput is CheckInput for a decoded import row of request index i: its first problem as an
// INVALID_VALUE row error naming the field, nil when all is well.
func CheckRowInput(i int, v any) *RowError {
	if field, msg, bad := inputProblem(v); bad {
		return &RowError{Row: i, Field: field, Code: RowInvalidValue, Message: field + " " + msg}
	}
	return nil
}

// inputProblem is CheckInput's first problem, for callers that report one (import rows).
func inputProblem(v any) (field, msg string, bad bool) {
	if !(&inputChecker{first: true}).check(v) {
		return "", "", false
	}
	c := inputChecker{first: true, paths: true}
	c.walk("", reflect.ValueOf(v), MaxTextLen)
	return c.field, c.msg, true
}

// inputChecker walks a decoded input. A first pass without paths (no allocation) says whether
// anything is wrong; only then a second one builds the field names.
type inputChecker struct {
	fe         FieldErrors
	first      bool // stop at the first problem
	paths      bool // build field paths (the second pass)
	field, msg string
}

// check reports whether v has a problem (a first-problem pass without paths).
func (c *inputChecker) check(v any) bool {
	c.walk("", reflect.ValueOf(v), MaxTextLen)
	return c.msg != ""
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[[]byte]()
)

// fieldPlan is what the walk needs of one exported struct field, computed once per type.
type fieldPlan struct {
	index  int
	name   string // its JSON name
	max    int    // its `max` tag, MaxTextLen without one
	inline bool   // an embedded struct without a JSON name: its fields are the outer object's
}

var plans sync.Map // reflect.Type -> []fieldPlan

func planOf(t reflect.Type) []fieldPlan {
	if p, ok := plans.Load(t); ok {
		return p.([]fieldPlan)
	}
	var out []fieldPlan
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fp := fieldPlan{index: i, name: name, max: MaxTextLen, inline: f.Anonymous && tag == ""}
		if m, err := strconv.Atoi(f.Tag.Get("max")); err == nil && m > 0 {
			fp.max = m
		}
		out = append(out, fp)
	}
	plans.Store(t, out)
	return out
}

func (c *inputChecker) done() bool {
	return (c.first && c.msg != "") || len(c.fe) >= maxInputProblems
}

func (c *inputChecker) add(field, msg string) {
	if c.first {
		if field == "" {
			field = "body"
		}
		c.field, c.msg = field, msg
		return
	}
	if field == "" {
		field = "body"
	}
	if len(c.fe) < maxInputProblems {
		c.fe.Add(field, "%s", msg)
	}
}

// child returns the path of name under path (only when paths are built).
func (c *inputChecker) child(path, name string) string {
	if !c.paths || path == "" {
		return name
	}
	return path + "." + name
}

func (c *inputChecker) walk(path string, v reflect.Value, maxLen int) {
	if c.done() || !v.IsValid() {
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			c.walk(path, v.Elem(), maxLen)
		}
	case reflect.String:
		if v.Len() > maxLen {
			c.add(path, "must be at most "+strconv.Itoa(maxLen)+" characters")
		}
	case reflect.Float32, reflect.Float64:
		if !NumberOK(v.Float()) {
			c.add(path, "must be a finite number "+NumberRange)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n := v.Int(); n < -MaxNumber || n > MaxNumber {
			c.add(path, "must be a number "+NumberRange)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if v.Uint() > MaxNumber {
			c.add(path, "must be a number "+NumberRange)
		}
	case reflect.Struct:
		if v.Type() == timeType {
			return
		}
		for _, f := range planOf(v.Type()) {
			if c.done() {
				return
			}
			p := path
			if !f.inline {
				p = c.child(path, f.name)
			}
			c.walk(p, v.Field(f.index), f.max)
		}
	case reflect.Slice, reflect.Array:
		if v.Type().ConvertibleTo(rawType) && v.Type().Elem().Kind() == reflect.Uint8 {
			return // json.RawMessage and []byte: decoded (and checked) by their consumer
		}
		for i := 0; i < v.Len() && !c.done(); i++ {
			p := path
			if c.paths {
				p = path + "[" + strconv.Itoa(i) + "]"
			}
			c.walk(p, v.Index(i), maxLen)
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() && !c.done() {
			k := iter.Key()
			if k.Kind() != reflect.String {
				c.walk(path, iter.Value(), maxLen)
				continue
			}
			if k.Len() > maxLen {
				c.add(path, "keys must be at most "+strconv.Itoa(maxLen)+" characters")
				continue
			}
			c.walk(c.child(path, k.String()), iter.Value(), maxLen)
		}
	}
}

// checkText records a problem when a present string is longer than max.
func checkText(fe FieldErrors, field string, v *string, max int) {
	if v != nil && len(*v) > max {
		fe.Add(field, "must be at most %d characters", max)
	}
}

// checkTime parses an optional date field into fe's problems; required makes absence one.
func checkTime(fe FieldErrors, field string, v *string, required bool) time.Time {
	if v == nil {
		if required {
			fe.Add(field, "is required (an ISO date-time %s)", TimeRange)
		}
		return time.Time{}
	}
	t, ok := ParseTime(*v)
	if !ok {
		fe.Add(field, "%s", TimeMessage)
	}
	return t
}
