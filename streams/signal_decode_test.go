package streams

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/jsonscan"
)

func TestDecodeSignal(t *testing.T) {
	at := time.Date(2026, 3, 4, 10, 20, 30, 123000000, time.UTC)
	good := supplyplan.DemandSignal{SignalID: "s1", OrganizationID: "org_1", SKU: "SKU-1", Location: "WH-1",
		Channel: "web", Quantity: 2.5, OccurredAt: at}
	tests := []struct {
		name, key, value string
		want             supplyplan.DemandSignal
		reason           string
		msg              string // substring
	}{
		{name: "fast path", key: "org_1", want: good,
			value: `{"signalId":"s1","organizationId":"org_1","skuId":"SKU-1","locationId":"WH-1","channel":"web","quantity":2.5,"occurredAt":"2026-03-04T10:20:30.123Z"}`},
		{name: "spaces, extra fields, offset zone", key: "org_1", want: good,
			value: " {\n \"extra\": {\"a\":[1]}, \"signalId\" : \"s1\", \"organizationId\":\"org_1\",\"skuId\":\"SKU-1\",\"locationId\":\"WH-1\",\"channel\":\"web\",\"quantity\":25e-1,\"occurredAt\":\"2026-03-04T12:20:30.123456+02:00\"} "},
		{name: "escaped strings", key: "org_1", want: good,
			value: `{"signalId":"s\u0031","organizationId":"org_1","skuId":"SKU-1","locationId":"WH-1","channel":"web","quantity":2.5,"occurredAt":"2026-03-04T10:20:30.123Z"}`},
		{name: "case-insensitive key", key: "org_1", want: good,
			value: `{"SIGNALID":"s1","organizationId":"org_1","skuId":"SKU-1","locationId":"WH-1","channel":"web","quantity":2.5,"occurredAt":"2026-03-04T10:20:30.123Z"}`},
		{name: "default channel", key: "org_1",
			want:  supplyplan.DemandSignal{SignalID: "s1", OrganizationID: "org_1", SKU: "SKU-1", Location: "WH-1", Channel: "ALL", Quantity: 1, OccurredAt: time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)},
			value: `{"signalId":"s1","organizationId":"org_1","skuId":"SKU-1","locationId":"WH-1","quantity":1,"occurredAt":"2026-03-04"}`},
		{name: "not json", key: "org_1", value: `hello`, reason: ReasonMalformed},
		{name: "truncated", key: "org_1", value: `{"signalId":"s1"`, reason: ReasonMalformed},
		{name: "empty signal id", key: "org_1", reason: ReasonInvalid, msg: "signalId: is required",
			value: `{"signalId":"","organizationId":"org_1","skuId":"S","locationId":"L","quantity":1,"occurredAt":"2026-03-04T10:20:30Z"}`},
		{name: "quantity string", key: "org_1", reason: ReasonInvalid, msg: "quantity",
			value: `{"signalId":"s","organizationId":"org_1","skuId":"S","locationId":"L","quantity":"1","occurredAt":"2026-03-04T10:20:30Z"}`},
		{name: "quantity missing", key: "org_1", reason: ReasonInvalid, msg: "quantity: is required",
			value: `{"signalId":"s","organizationId":"org_1","skuId":"S","locationId":"L","occurredAt":"2026-03-04T10:20:30Z"}`},
		{name: "quantity overflow", key: "org_1", reason: ReasonInvalid, msg: "quantity",
			value: `{"signalId":"s","organizationId":"org_1","skuId":"S","locationId":"L","quantity":1e999,"occurredAt":"2026-03-04T10:20:30Z"}`},
		{name: "bad time", key: "org_1", reason: ReasonInvalid, msg: "occurredAt: is required",
			value: `{"signalId":"s","organizationId":"org_1","skuId":"S","locationId":"L","quantity":1,"occurredAt":"yesterday"}`},
		{name: "impossible date", key: "org_1", reason: ReasonInvalid, msg: "occurredAt",
			value: `{"signalId":"s","organizationId":"org_1","skuId":"S","locationId":"L","quantity":1,"occurredAt":"2026-02-30T10:20:30Z"}`},
		{name: "key mismatch", key: "org_2", reason: ReasonKeyMismatch, msg: `"org_1"`,
			value: `{"signalId":"s","organizationId":"org_1","skuId":"S","locationId":"L","quantity":1,"occurredAt":"2026-03-04T10:20:30Z"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newSignalDecoder()
			var got supplyplan.DemandSignal
			reason, msg := d.decode([]byte(tt.key), []byte(tt.value), &got)
			if reason != tt.reason || !strings.Contains(msg, tt.msg) {
				t.Fatalf("reason %q %q, want %q containing %q", reason, msg, tt.reason, tt.msg)
			}
			if tt.reason == "" && !sameSignal(got, tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestDecodeSignalAllocs(t *testing.T) {
	d := newSignalDecoder()
	v := []byte(`{"signalId":"sig-000001","organizationId":"org_1","skuId":"SKU-1","locationId":"WH-1","channel":"web","quantity":2.5,"occurredAt":"2026-03-04T10:20:30.123Z"}`)
	var s supplyplan.DemandSignal
	d.decode([]byte("org_1"), v, &s)
	allocs := testing.AllocsPerRun(100, func() { d.decode([]byte("org_1"), v, &s) })
	if allocs > 1 {
		t.Fatalf("decode allocates %v times, want at most 1 (the signal id)", allocs)
	}
}

// FuzzDecodeSignal checks that the fast parser agrees with encoding/json wherever it answers.
func FuzzDecodeSignal(f *testing.F) {
	seeds := []string{
		`{"signalId":"s1","organizationId":"o","skuId":"S","locationId":"L","channel":"web","quantity":2.5,"occurredAt":"2026-03-04T10:20:30.123Z"}`,
		`{"signalId":"s1","organizationId":"o","skuId":"S","locationId":"L","quantity":-0.0e+1,"occurredAt":"2026-03-04"}`,
		`{"signalId":"s1","signalId":null,"quantity":1,"quantity":null,"x":true,"y":[1],"z":"\u00e9"}`,
		`{"Channel":"a","channel":"b"}`, `{"occurredAt":"2024-02-29T23:59:59.999999999Z"}`, `null`, `[]`, `{}`, ``,
		`{"quantity":01}`, `12.5`, `-0`, `0.000000000000001`, `123456789012345.5`, "abcdefgh\\ijk", "abcdefghij\x1f", "abcdefghijklmn\x80", `{"skuId":"\xff"}`, `{"ſkuId":"x"}`, `{"occurredAt":"2026-03-04T10:20:30.1234567891Z"}`,
	}
	for _, s := range seeds {
		f.Add("o", s)
	}
	f.Fuzz(func(t *testing.T, key, value string) {
		d := newSignalDecoder()
		var fast, slow supplyplan.DemandSignal
		r1, m1 := d.decode([]byte(key), []byte(value), &fast)
		r2, m2 := d.decodeSlow([]byte(key), []byte(value), &slow)
		if r1 != r2 || m1 != m2 || (r1 == "" && !sameSignal(fast, slow)) {
			t.Fatalf("fast %q %q %+v\nslow %q %q %+v", r1, m1, fast, r2, m2, slow)
		}
		if v, ok := jsonscan.ParseDecimal([]byte(value)); ok {
			if w, err := strconv.ParseFloat(value, 64); err != nil || math.Float64bits(v) != math.Float64bits(w) {
				t.Fatalf("ParseDecimal(%q) = %v, ParseFloat %v %v", value, v, w, err)
			}
		}
		noQuotes := strings.ReplaceAll(value, `"`, "x") // PlainASCII is never asked about quotes
		plain := true
		for _, c := range []byte(noQuotes) {
			plain = plain && jsonscan.IsPlain(c)
		}
		if got := jsonscan.PlainASCII([]byte(noQuotes)); got != plain {
			t.Fatalf("PlainASCII(%q) = %v, want %v", noQuotes, got, plain)
		}
		var f rawSignal
		if f.parse([]byte(value)) {
			if t1, ok := parseRFC3339UTC(f.at); ok {
				if t2, _ := supplyplan.ParseTime(string(f.at)); !t1.Equal(t2) {
					t.Fatalf("time %q: fast %v, ParseTime %v", f.at, t1, t2)
				}
			}
		}
	})
}

func sameSignal(a, b supplyplan.DemandSignal) bool {
	ta, tb := a.OccurredAt, b.OccurredAt
	a.OccurredAt, b.OccurredAt = time.Time{}, time.Time{}
	return a == b && ta.Equal(tb) && ta.Location() == tb.Location()
}

func BenchmarkDecodeSignal(b *testing.B) {
	d := newSignalDecoder()
	s := makeSignals("bench", 1000, 50)
	vals := make([][]byte, len(s))
	for i := range s {
		vals[i] = AppendSignalJSON(nil, s[i])
	}
	var out supplyplan.DemandSignal
	b.ReportAllocs()
	b.SetBytes(int64(len(vals[0])))
	for i := 0; b.Loop(); i++ {
		v := vals[i%len(vals)]
		if r, m := d.decode([]byte(s[i%len(s)].OrganizationID), v, &out); r != "" {
			b.Fatal(r, m)
		}
	}
}

func TestParseRFC3339UTC(t *testing.T) {
	for d := time.Date(1599, 12, 25, 23, 59, 59, 987654321, time.UTC); d.Year() < 2405; d = d.Add(7*24*time.Hour + 13*time.Hour + 7*time.Second) {
		for _, layout := range []string{"2006-01-02T15:04:05Z", "2006-01-02T15:04:05.000Z", "2006-01-02T15:04:05.999999999Z", "2006-01-02T15:04:05.0Z"} {
			in := d.Format(layout)
			got, ok := parseRFC3339UTC([]byte(in))
			want, wantOK := supplyplan.ParseTime(in)
			if !wantOK { // outside [MinTime, MaxTime] (issue 10): both refuse it
				if ok {
					t.Fatalf("%s: accepted outside the range, ParseTime refuses it", in)
				}
				continue
			}
			if !ok || !got.Equal(want) || got.Location() != want.Location() {
				t.Fatalf("%s: got %v %v, want %v", in, got, ok, want)
			}
		}
	}
	for _, in := range []string{"2023-02-29T00:00:00Z", "2024-13-01T00:00:00Z", "2024-04-31T00:00:00Z", "2024-01-01T24:00:00Z"} {
		if _, ok := parseRFC3339UTC([]byte(in)); ok {
			t.Errorf("%s: accepted", in)
		}
	}
}

// TestDecodeSignalIDNoCopy checks that the fast path neither allocates nor copies: the signal id
// points into the message value.
func TestDecodeSignalIDNoCopy(t *testing.T) {
	d := newSignalDecoder()
	v := []byte(`{"signalId":"sig-000001","organizationId":"org_1","skuId":"SKU-1","locationId":"WH-1","channel":"web","quantity":2.5,"occurredAt":"2026-03-04T10:20:30.123Z"}`)
	var s supplyplan.DemandSignal
	if r, m := d.decode([]byte("org_1"), v, &s); r != "" {
		t.Fatal(r, m)
	}
	if s.SignalID != "sig-000001" || unsafe.StringData(s.SignalID) != &v[bytes.Index(v, []byte("sig-"))] {
		t.Errorf("signal id %q is not the value's bytes", s.SignalID)
	}
	if allocs := testing.AllocsPerRun(100, func() { d.decode([]byte("org_1"), v, &s) }); allocs != 0 {
		t.Errorf("decode allocates %v times, want 0", allocs)
	}
}
