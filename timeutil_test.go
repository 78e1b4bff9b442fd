package supplyplan

import (
	"testing"
	"time"
)

// The day arithmetic of StartOfDay and WeekStart against the calendar's, over four centuries each
// side of 1970 and every hour boundary of a few weeks, in UTC and in another zone.
func TestWeekStartMatchesTheCalendar(t *testing.T) {
	calendarDay := func(t time.Time) time.Time {
		y, m, d := t.UTC().Date()
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	}
	calendarWeek := func(t time.Time) time.Time {
		d := calendarDay(t)
		return d.AddDate(0, 0, -((int(d.Weekday()) + 6) % 7))
	}
	zone := time.FixedZone("UTC+13", 13*3600)
	check := func(at time.Time) {
		t.Helper()
		if got, want := StartOfDay(at), calendarDay(at); got != want {
			t.Fatalf("StartOfDay(%v) = %v, want %v", at, got, want)
		}
		got, want := WeekStart(at), calendarWeek(at)
		if got != want {
			t.Fatalf("WeekStart(%v) = %v, want %v", at, got, want)
		}
		if got.Weekday() != time.Monday || got.After(at) || at.Sub(got) >= 7*24*time.Hour {
			t.Fatalf("WeekStart(%v) = %v is not the Monday of its week", at, got)
		}
	}
	for at := time.Date(1969, 12, 1, 0, 0, 0, 0, time.UTC); at.Before(time.Date(1970, 2, 1, 0, 0, 0, 0, time.UTC)); at = at.Add(time.Hour) {
		check(at)
		check(at.Add(-time.Nanosecond))
		check(at.In(zone))
	}
	for at := time.Date(1570, 1, 1, 0, 0, 0, 0, time.UTC); at.Year() < 2370; at = at.Add(97*time.Hour + 13*time.Minute + 7*time.Second) {
		check(at)
		check(at.In(zone))
	}
}
