package http

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/supplyplan/supplyplan"
)

// sameAsGeneral fails when the fast event decoder takes body but the general decoder gives
// another value or another error; it reports whether the fast decoder took it.
func sameAsGeneral(t *testing.T, body string) bool {
	t.Helper()
	var fast supplyplan.EventInput
	if !decodeEventFast([]byte(body), &fast) {
		return false
	}
	fastErr := supplyplan.CheckInput(&fast) // what decodeEvent does after the fast decoder
	if eventInBounds(&fast) != (fastErr == nil) {
		t.Fatalf("%s: eventInBounds %v, CheckInput %v", body, eventInBounds(&fast), fastErr)
	}
	var general supplyplan.EventInput
	generalErr := decodeJSON([]byte(body), 1<<20, &general)
	if !reflect.DeepEqual(fastErr, generalErr) {
		t.Fatalf("%s: fast decoder error %v, general %v", body, fastErr, generalErr)
	}
	if !reflect.DeepEqual(fast, general) {
		f, _ := json.Marshal(fast)
		g, _ := json.Marshal(general)
		t.Fatalf("%s:\nfast    %s\ngeneral %s", body, f, g)
	}
	return true
}

// TestDecodeEventFast: the bodies the fast decoder takes decode as the general decoder decodes
// them; the others (errors, unknown or repeated keys, escapes) are left to the general decoder.
func TestDecodeEventFast(t *testing.T) {
	taken := []string{
		`{}`, ` { } `,
		`{"name":"Promo 1-2","type":"PROMOTION","startsAt":"2027-03-01T00:00:00Z","endsAt":"2027-03-08T00:00:00Z","value":{"liftPct":0.25,"stackingMode":"MULTIPLICATIVE"},"productMasterId":"sku-1"}`,
		"{\n \"name\" : \"é ü 中\" ,\t\"isGlobal\":true,\"isOrgWide\":false,\"locationId\":null,\"value\":null}",
		`{"value":{"liftPct":-0,"priceChangePct":-1.5e-3,"intensity":1E+2,"description":"","mechanic":"BOGO"}}`,
		`{"value":{}}`, `{"value":{"liftPct":null,"stackingMode":null}}`, `{"isGlobal":null,"isOrgWide":null}`,
		`{"value":{"liftPct":0.1,"intensity":12345678901234567890}}`,
	}
	for _, body := range taken {
		if !sameAsGeneral(t, body) {
			t.Errorf("fast decoder refused %s", body)
		}
	}
	left := []string{
		``, ` `, `[]`, `null`, `"x"`, `{`, `{"name":"a"`, `{"name":"a",}`, `{"name":"a"} x`, `{"name":"a"}{}`,
		`{"name":"a","name":"b"}`, `{"Name":"a"}`, `{"other":1}`, `{"name":"a\"b"}`, `{"name":"a\u0041"}`, "{\"name\":\"a\tb\"}",
		"{\"name\":\"\xff\"}", `{"name":5}`, `{"isGlobal":"true"}`, `{"isGlobal":tru}`, `{"value":[]}`, `{"value":{"liftPct":"1"}}`,
		`{"value":{"liftPct":01}}`, `{"value":{"liftPct":1.}}`, `{"value":{"liftPct":.5}}`, `{"value":{"liftPct":+1}}`,
		`{"value":{"liftPct":1e}}`, `{"value":{"liftPct":1e400}}`, `{"value":{"liftPct":1,"liftPct":2}}`, `{"value":{"x":1}}`,
		`{"value":null,"value":null}`, `{"name":nul}`, `{name:"a"}`, `{"name" "a"}`,
	}
	for _, body := range left {
		if sameAsGeneral(t, body) {
			t.Errorf("fast decoder took %s", body)
		}
	}
	// Checked (CheckInput passed) is never read from a body.
	for _, body := range []string{`{"Checked":true}`, `{"checked":true}`, `{"-":true}`} {
		var in supplyplan.EventInput
		if decodeEventFast([]byte(body), &in) || decodeJSON([]byte(body), 1<<20, &in) != nil || in.Checked {
			t.Errorf("%s: decoded %+v", body, in)
		}
	}
}

// TestDecodeEventFastRandom: random bodies built from the pieces of both kinds decode alike.
func TestDecodeEventFastRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 34))
	keys := []string{"name", "type", "startsAt", "endsAt", "productMasterId", "locationId", "isGlobal", "isOrgWide", "value", "Name", "x"}
	vkeys := []string{"liftPct", "stackingMode", "description", "priceChangePct", "mechanic", "intensity", "LiftPct"}
	vals := []string{`"a"`, `""`, `"2027-03-01T00:00:00Z"`, `"é"`, `"a\nb"`, `null`, `true`, `false`, `0`, `-0.5`, `1e3`, `1e999`, `01`, `{}`, `[]`, `"` + strings.Repeat("x", 300) + `"`, `"` + strings.Repeat("y", 5001) + `"`, `1e12`, `-1e12`, `1.0000001e12`, `-2e12`}
	obj := func(keys []string, inner func() string) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range rng.IntN(6) {
			if i > 0 {
				b.WriteString([]string{",", " , ", ",\n"}[rng.IntN(3)])
			}
			k := keys[rng.IntN(len(keys))]
			b.WriteString(`"` + k + `":`)
			if inner != nil && k == "value" && rng.IntN(3) > 0 {
				b.WriteString(inner())
			} else {
				b.WriteString(vals[rng.IntN(len(vals))])
			}
		}
		b.WriteString("}")
		return b.String()
	}
	took := 0
	for range 20000 {
		body := obj(keys, func() string { return obj(vkeys, nil) })
		if sameAsGeneral(t, body) {
			took++
		}
	}
	if took < 1000 {
		t.Fatalf("the fast decoder took only %d of 20000 bodies", took)
	}
}

// FuzzDecodeEventFast: whatever the fast decoder takes, the general one decodes the same way.
func FuzzDecodeEventFast(f *testing.F) {
	for _, s := range []string{
		`{"name":"e","startsAt":"2030-01-01","endsAt":"2030-01-02"}`,
		`{"name":"e","type":"PROMOTION","value":{"liftPct":0.3,"stackingMode":"ADDITIVE"},"productMasterId":"p","isGlobal":false}`,
		`{"value":{"liftPct":-1.5e-3}}`, `{"name":"a","name":"b"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { sameAsGeneral(t, string(body)) })
}

// BenchmarkDecodeEvent measures the event decoder on the benchmark's event body (fast path)
// next to the general decoder.
func BenchmarkDecodeEvent(b *testing.B) {
	body := []byte(`{"name":"Promo 3-17","type":"PROMOTION","startsAt":"2027-03-01T00:00:00Z","endsAt":"2027-03-08T00:00:00Z","value":{"liftPct":0.25,"stackingMode":"MULTIPLICATIVE"},"productMasterId":"sku-17"}`)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var in supplyplan.EventInput
			if !decodeEventFast(body, &in) || !eventInBounds(&in) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("general", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var in supplyplan.EventInput
			if err := decodeJSON(body, 1<<20, &in); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// An event's type and stacking mode among their known values are the enum's own strings (nothing
// copied for what the event keeps as long as it lives); another value decodes as it is written.
func TestDecodeEventFastSharesEnumValues(t *testing.T) {
	var in supplyplan.EventInput
	body := []byte(`{"type":"PROMOTION","value":{"stackingMode":"ADDITIVE"}}`)
	if !decodeEventFast(body, &in) {
		t.Fatal("fast decoder refused the body")
	}
	if unsafe.StringData(*in.Type) != unsafe.StringData(string(supplyplan.EventPromotion)) ||
		unsafe.StringData(*in.Value.StackingMode) != unsafe.StringData(string(supplyplan.StackAdditive)) {
		t.Error("known enum values were copied")
	}
	for _, body := range []string{`{"type":"PROMO","value":{"stackingMode":"multiplicative"}}`, `{"type":"","value":{"stackingMode":"ADDITIVE "}}`} {
		if !sameAsGeneral(t, body) {
			t.Errorf("fast decoder refused %s", body)
		}
	}
}
