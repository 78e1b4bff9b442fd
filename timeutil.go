package supplyplan

import (
	"strings"
	"time"
)

// Now returns the current time in UTC truncated to milliseconds, the precision the API stores.
func Now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// ParseTime accepts an RFC 3339 date-time (with or without fractional seconds or zone; a missing
// zone means UTC) or a plain ISO date (midnight UTC), whose UTC instant lies in [MinTime, MaxTime]
// (limits.go). It is the one parser of client dates: text outside the range is refused like text
// that is not a date, so no entry point can let through a date that cannot be encoded or stored.
func ParseTime(s string) (time.Time, bool) {
	t, ok := parseTimeAny(s)
	if !ok || !InTimeRange(t) {
		return time.Time{}, false
	}
	return t, true
}

// parseTimeAny is ParseTime without the range, for values the service wrote itself.
func parseTimeAny(s string) (time.Time, bool) {
	if t, ok := parseDate(s); ok { // the common plain date, without the layouts' cost
		return t, true
	}
	s = strings.TrimSpace(s)
	layouts := []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04", "2006-01-02"}
	for _, l := range layouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC().Truncate(time.Millisecond), true
		}
	}
	return time.Time{}, false
}

// IsDateOnly reports whether s is a plain ISO date such as 2026-11-23.
func IsDateOnly(s string) bool {
	s = strings.TrimSpace(s)
	if len(s) != len("2006-01-02") { // the layout's fields are fixed-width: no parse (and no error value)
		return false
	}
	_, err := time.Parse("2006-01-02", s)
	return err == nil
}

// StartOfDay returns midnight UTC of t's day.
func StartOfDay(t time.Time) time.Time {
	return time.Unix(unixDay(t)*secondsPerDay, 0).UTC()
}

// WeekStart returns the Monday (00:00 UTC) of the ISO week containing t. Day arithmetic on the
// Unix clock: AddDate and Date convert to a calendar and back, the larger part of resolving an
// imported demand row.
func WeekStart(t time.Time) time.Time {
	d := unixDay(t)
	// 1970-01-01 was a Thursday: day d is (d+3) mod 7 days after a Monday.
	return time.Unix((d-floorMod(d+3, 7))*secondsPerDay, 0).UTC()
}

const secondsPerDay = 24 * 60 * 60

// unixDay is the number of t's UTC day counted from 1970-01-01 (negative before it).
func unixDay(t time.Time) int64 {
	s := t.Unix()
	return (s - floorMod(s, secondsPerDay)) / secondsPerDay
}

func floorMod(a, n int64) int64 {
	m := a % n
	if m < 0 {
		m += n
	}
	return m
}

// parseDate parses exactly YYYY-MM-DD.
func parseDate(s string) (time.Time, bool) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return time.Time{}, false
	}
	num := func(b string) (int, bool) {
		n := 0
		for i := 0; i < len(b); i++ {
			if b[i] < '0' || b[i] > '9' {
				return 0, false
			}
			n = n*10 + int(b[i]-'0')
		}
		return n, true
	}
	y, ok1 := num(s[0:4])
	m, ok2 := num(s[5:7])
	d, ok3 := num(s[8:10])
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 || d > 31 {
		return time.Time{}, false
	}
	t := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
	if t.Day() != d { // 2026-02-30 normalizes to March: not a date
		return time.Time{}, false
	}
	return t, true
}
