package supplyplan

import (
	"strings"
	"time"
)

// Now returns the current time in UTC truncated to milliseconds, the precision the API stores.
func Now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// ParseTime accepts an RFC 3339 date-time (with or without fractional seconds or zone; a missing
// zone means UTC) or a plain ISO date (midnight UTC).
func ParseTime(s string) (time.Time, bool) {
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
	_, err := time.Parse("2006-01-02", s)
	return err == nil
}

// StartOfDay returns midnight UTC of t's day.
func StartOfDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// WeekStart returns the Monday (00:00 UTC) of the ISO week containing t.
func WeekStart(t time.Time) time.Time {
	d := StartOfDay(t)
	wd := (int(d.Weekday()) + 6) % 7 // Monday = 0
	return d.AddDate(0, 0, -wd)
}
