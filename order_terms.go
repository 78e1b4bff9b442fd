package supplyplan

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// OrderTermsRow holds the optional allocation fields of one row of an orders import. OrderRow
// embeds it (its fields are the row's own in JSON and in the limits check).
type OrderTermsRow struct {
	Priority        *int     `json:"priority"`
	RequestedDate   *string  `json:"requestedDate" max:"200"`
	Fill            *string  `json:"fill" max:"200"`
	MinQuantity     *float64 `json:"minQuantity"`
	MaxLocations    *int     `json:"maxLocations"`
	MaxLatenessDays *int     `json:"maxLatenessDays"`
	Version         *int64   `json:"version"`
}

// Terms checks the fields of row i and returns the order's terms (defaults for the absent ones:
// priority 0, fill PARTIAL, minQuantity 0, maxLocations 1, maxLatenessDays 0, version 0).
func (r OrderTermsRow) Terms(i int) (OrderTerms, *RowError) {
	var t OrderTerms
	bad := func(field, format string, args ...any) (OrderTerms, *RowError) {
		return OrderTerms{}, &RowError{Row: i, Field: field, Code: RowInvalidValue, Message: field + " " + fmt.Sprintf(format, args...)}
	}
	if r.Priority != nil {
		if *r.Priority < -MaxOrderPriority || *r.Priority > MaxOrderPriority {
			return bad("priority", "must be an integer between %d and %d (lower first)", -MaxOrderPriority, MaxOrderPriority)
		}
		t.Priority = *r.Priority
	}
	requested, e := parseRowTime(i, "requestedDate", r.RequestedDate)
	if e != nil {
		return OrderTerms{}, e
	}
	t.RequestedDate = requested
	if r.Fill != nil && *r.Fill != "" {
		f := FillPolicy(strings.ToUpper(strings.TrimSpace(*r.Fill)))
		if !slices.Contains(FillPolicies, f) {
			return bad("fill", "must be one of %s", joinEnum(FillPolicies))
		}
		t.Fill = f
	}
	if r.MinQuantity != nil {
		if !NumberOK(*r.MinQuantity) || *r.MinQuantity < 0 {
			return bad("minQuantity", "must be a number >= 0 and at most 1e12")
		}
		t.MinQuantity = *r.MinQuantity
	}
	if r.MaxLocations != nil {
		if *r.MaxLocations < 1 || *r.MaxLocations > MaxAllocationLocations {
			return bad("maxLocations", "must be between 1 and %d", MaxAllocationLocations)
		}
		t.MaxLocations = *r.MaxLocations
	}
	if r.MaxLatenessDays != nil {
		if *r.MaxLatenessDays < 0 || *r.MaxLatenessDays > MaxLatenessDays {
			return bad("maxLatenessDays", "must be between 0 and %d", MaxLatenessDays)
		}
		t.MaxLatenessDays = *r.MaxLatenessDays
	}
	if r.Version != nil {
		if *r.Version < 0 || float64(*r.Version) > MaxNumber {
			return bad("version", "must be an integer between 0 and 1e12")
		}
		t.Version = *r.Version
	}
	return t, nil
}

// LineIDs returns the line ids of an order's lines: the given ones (ids[j] == "" takes the
// default), else the line's 1-based position; two lines with one id are an error on the second.
func LineIDs(i int, ids []string) ([]string, *RowError) {
	out := make([]string, len(ids))
	for j, id := range ids {
		if id == "" {
			id = strconv.Itoa(j + 1)
		}
		if slices.Contains(out[:j], id) {
			f := fmt.Sprintf("lines[%d].lineId", j)
			return nil, &RowError{Row: i, Field: f, Code: RowInvalidValue, Message: fmt.Sprintf("%s %q is used by another line of the order", f, id)}
		}
		out[j] = id
	}
	return out, nil
}

// JSONFieldPath removes the names of embedded structs from the field path of a
// *json.UnmarshalTypeError ("OrderTermsRow.priority" is "priority" in the row): the import row
// decoder (decodeRow in internal/importjson) should pass its Field through this once OrderRow
// embeds OrderTermsRow. The JSON names of this service are lowerCamelCase, so a segment starting
// with an upper-case letter is a Go struct name.
func JSONFieldPath(field string) string {
	parts := strings.Split(field, ".")
	out := parts[:0]
	for _, p := range parts {
		if p != "" && p[0] >= 'A' && p[0] <= 'Z' {
			continue
		}
		out = append(out, p)
	}
	return strings.Join(out, ".")
}
