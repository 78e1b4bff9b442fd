package http

import (
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
)

// The decoders must turn any input into either a value or a VALIDATION_ERROR/PAYLOAD_TOO_LARGE,
// never a panic, and validation must hold for everything they accept.

func FuzzDecodeScenario(f *testing.F) {
	for _, s := range []string{
		`{"name":"a"}`, `{"name":"a","type":"PROMOTIONAL","assumptions":{"globalLiftPct":0.2,"categoryAdjustments":[{"categoryId":"c","liftPct":0.1}],"includedEventIds":["e"]}}`,
		`{"name":5}`, `[]`, `{`, `{"assumptions":null}`, `{"name":"a"} x`, `{"assumptions":{"globalLiftPct":1e400}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var in supplyplan.ScenarioInput
		err := decodeJSON(body, 1<<20, &in)
		if err != nil {
			if c := supplyplan.ErrorCode(err); c != supplyplan.EVALIDATION && c != supplyplan.ETOOLARGE {
				t.Fatalf("decode error code %s: %v", c, err)
			}
			return
		}
		if in.Validate(true) != nil {
			return
		}
		sc := supplyplan.NewScenario("s", in, time.Now())
		if sc.Name == "" || sc.Status != supplyplan.ScenarioDraft {
			t.Fatalf("accepted input built %+v", sc)
		}
		if g := sc.Assumptions.GlobalLiftPct; g != nil && (*g < -1 || *g > 5) {
			t.Fatalf("out-of-range lift accepted: %v", *g)
		}
	})
}

func FuzzDecodeEvent(f *testing.F) {
	for _, s := range []string{
		`{"name":"e","startsAt":"2030-01-01","endsAt":"2030-01-02"}`,
		`{"name":"e","type":"PROMOTION","startsAt":"2030-01-01T00:00:00Z","endsAt":"2030-01-02T00:00:00+02:00","value":{"liftPct":0.3,"stackingMode":"ADDITIVE"},"productMasterId":"p"}`,
		`{"startsAt":5}`, `{"value":[]}`, `{"name":"e","startsAt":"2030-01-02","endsAt":"2030-01-01"}`, `null`, `"x"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var in supplyplan.EventInput
		if err := decodeJSON(body, 1<<20, &in); err != nil {
			if c := supplyplan.ErrorCode(err); c != supplyplan.EVALIDATION && c != supplyplan.ETOOLARGE {
				t.Fatalf("decode error code %s: %v", c, err)
			}
			return
		}
		starts, ends, err := in.Validate(true, false)
		if err != nil {
			return
		}
		e, err := supplyplan.NewEvent("e", in, starts, ends, false, time.Now())
		if err != nil {
			if supplyplan.ErrorCode(err) != supplyplan.EVALIDATION {
				t.Fatalf("NewEvent error %v", err)
			}
			return
		}
		if !e.EndsAt.After(e.StartsAt) {
			t.Fatalf("accepted event ends before it starts: %+v", e)
		}
		if v := e.Value; v != nil && v.LiftPct != nil && (*v.LiftPct < -0.99 || *v.LiftPct > 5) {
			t.Fatalf("out-of-range lift accepted: %v", *v.LiftPct)
		}
	})
}
