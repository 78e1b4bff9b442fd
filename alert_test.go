package supplyplan

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestGateNoRepeatWithinCooldownAndRearmAfterRecovery(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	cd := 60 * time.Minute
	steps := []struct {
		at   time.Duration
		st   CondState
		fire bool
	}{
		{0, CondOn, true},                   // condition starts: fires
		{5 * time.Minute, CondOn, false},    // still on: not again
		{90 * time.Minute, CondOn, false},   // still on past the cooldown: not again (not cleared)
		{95 * time.Minute, CondHold, false}, // in the hysteresis band: not cleared
		{100 * time.Minute, CondOn, false},  // back on without clearing: nothing
		{110 * time.Minute, CondOff, false}, // cleared: re-armed
		{120 * time.Minute, CondOn, true},   // starts again, cooldown passed: fires
		{121 * time.Minute, CondOff, false}, // cleared
		{130 * time.Minute, CondOn, false},  // starts again within the cooldown: waits
		{150 * time.Minute, CondOn, false},  // still within the cooldown
		{181 * time.Minute, CondOn, true},   // cooldown over, still on, armed: fires
	}
	var e *GateEntry
	for i, s := range steps {
		fire, next := GateStep(e, s.st, cd, t0.Add(s.at))
		if fire != s.fire {
			t.Fatalf("step %d (%s, state %d): fire = %v, want %v", i, s.at, s.st, fire, s.fire)
		}
		e = next
	}
}

func TestApplyGateOverAnEvaluation(t *testing.T) {
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	entries := map[string]*GateEntry{
		"a": {Armed: false, LastFired: now.Add(-2 * time.Hour)}, // fired, not observed now: re-arms... and is forgotten (cooled)
		"b": {Armed: false, LastFired: now.Add(-time.Minute)},   // fired, still on
		"c": {Armed: false, LastFired: now.Add(-time.Minute)},   // fired, now off within cooldown: armed, kept
	}
	fired, changes := ApplyGate(entries, []GateObservation{{"b", CondOn}, {"d", CondOn}, {"e", CondHold}}, time.Hour, now)
	if fmt.Sprint(fired) != "[d]" {
		t.Fatalf("fired = %v", fired)
	}
	if v, ok := changes["a"]; !ok || v != nil {
		t.Errorf("a: %v %v, want deleted", v, ok)
	}
	if _, ok := changes["b"]; ok {
		t.Errorf("b changed: %v", changes["b"])
	}
	if v := changes["c"]; v == nil || !v.Armed {
		t.Errorf("c = %v, want armed", v)
	}
	if v := changes["d"]; v == nil || v.Armed || !v.LastFired.Equal(now) {
		t.Errorf("d = %v", v)
	}
	if _, ok := changes["e"]; ok {
		t.Errorf("e (hold, no entry) changed")
	}
}

func TestGateTrigger(t *testing.T) {
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	fire, _, e := GateTrigger(nil, time.Hour, now, false)
	if !fire || e == nil || !e.Armed {
		t.Fatalf("first trigger = %v %v", fire, e)
	}
	fire, wait, _ := GateTrigger(e, time.Hour, now.Add(10*time.Minute), false)
	if fire || wait != 50*time.Minute {
		t.Fatalf("within cooldown = %v %v", fire, wait)
	}
	if fire, _, _ := GateTrigger(e, time.Hour, now.Add(10*time.Minute), true); !fire {
		t.Fatal("bypass did not fire")
	}
	if fire, _, _ := GateTrigger(e, time.Hour, now.Add(61*time.Minute), false); !fire {
		t.Fatal("after cooldown did not fire")
	}
}

// evalNow is a Wednesday noon: the current week started on Monday.
var evalNow = time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)

func weeksOf(qty ...float64) []WeekValue {
	cur := WeekStart(evalNow)
	out := make([]WeekValue, len(qty))
	for i, q := range qty {
		out[i] = WeekValue{Week: cur.AddDate(0, 0, -7*(len(qty)-i)), Actual: q, Forecasted: q}
	}
	return out
}

func f64(v float64) *float64 { return &v }

func kinds(conds []Condition) map[string]Condition {
	m := map[string]Condition{}
	for _, c := range conds {
		m[c.Key.Kind] = c
	}
	return m
}

func TestEvaluateItemTable(t *testing.T) {
	th := DefaultAlertThresholds()
	prod := &Product{ID: "P1", SKU: "P1", UnitPrice: f64(50), UnitCost: f64(20), CreatedAt: evalNow.AddDate(-1, 0, 0)}
	exp := func(days float64) *time.Time {
		t := evalNow.Add(time.Duration(days * 24 * float64(time.Hour)))
		return &t
	}
	flat := weeksOf(10, 10, 10, 10, 10, 10, 10, 10) // 10 units/week
	cases := []struct {
		name string
		it   EvalItem
		want map[string]CondState // kinds expected (others absent)
		sev  map[string]Severity
	}{
		{"stockout with demand", EvalItem{Level: &InventoryLevel{SKU: "P1", LocationID: "L1", QuantityOnHand: 0, ReorderPoint: 5}, LeadTimeDays: 14, History: flat},
			map[string]CondState{"stockout": CondOn}, map[string]Severity{"stockout": SeverityHigh}},
		{"no stock and no demand is not a stockout", EvalItem{Level: &InventoryLevel{SKU: "P1", LocationID: "L1"}, LeadTimeDays: 14},
			map[string]CondState{}, nil},
		{"reserved stock counts as gone", EvalItem{Level: &InventoryLevel{SKU: "P1", LocationID: "L1", QuantityOnHand: 5, QuantityReserved: 5}, LeadTimeDays: 14, History: flat},
			map[string]CondState{"stockout": CondOn}, nil},
		{"low ATP over the lead time", EvalItem{Level: &InventoryLevel{SKU: "P1", LocationID: "L1", QuantityOnHand: 30, ReorderPoint: 20}, LeadTimeDays: 14, History: flat},
			map[string]CondState{"lowAtp": CondOn}, nil},
		{"inbound purchase order lifts ATP", EvalItem{Level: &InventoryLevel{SKU: "P1", LocationID: "L1", QuantityOnHand: 30, ReorderPoint: 20}, LeadTimeDays: 14, InboundDue: 20, History: flat},
			map[string]CondState{}, nil},
		{"ATP in the release band holds", EvalItem{Level: &InventoryLevel{SKU: "P1", LocationID: "L1", QuantityOnHand: 41, ReorderPoint: 20}, LeadTimeDays: 14, History: flat},
			map[string]CondState{"lowAtp": CondHold}, nil},
		{"overstock", EvalItem{Level: &InventoryLevel{SKU: "P1", LocationID: "L1", QuantityOnHand: 300}, LeadTimeDays: 14, History: flat},
			map[string]CondState{"overstock": CondOn}, nil},
		{"overstock release band", EvalItem{Level: &InventoryLevel{SKU: "P1", LocationID: "L1", QuantityOnHand: 240}, LeadTimeDays: 14, History: flat},
			map[string]CondState{"overstock": CondHold}, nil},
		{"slow-moving: stock and 8 weeks without demand", EvalItem{Level: &InventoryLevel{SKU: "P1", LocationID: "L1", QuantityOnHand: 40}, LeadTimeDays: 14,
			History: weeksOf(5, 3, 0, 0, 0, 0, 0, 0, 0, 0)}, map[string]CondState{"slowMoving": CondOn}, nil},
		{"slow-moving needs an old enough series", EvalItem{Level: &InventoryLevel{SKU: "P1", LocationID: "L1", QuantityOnHand: 40}, LeadTimeDays: 14,
			History: weeksOf(0, 0, 0)}, map[string]CondState{}, nil},
		{"expiry: lot expires before it sells", EvalItem{Level: &InventoryLevel{SKU: "P1", LocationID: "L1", QuantityOnHand: 60,
			Lots: []Lot{{LotID: "A", Quantity: 20, ExpiresAt: exp(7)}, {LotID: "B", Quantity: 40, ExpiresAt: exp(20)}}}, LeadTimeDays: 14, History: flat},
			map[string]CondState{"expiry": CondOn}, nil},
		{"expiry: lots sell through in time", EvalItem{Level: &InventoryLevel{SKU: "P1", LocationID: "L1", QuantityOnHand: 30,
			Lots: []Lot{{LotID: "A", Quantity: 10, ExpiresAt: exp(14)}, {LotID: "B", Quantity: 10, ExpiresAt: exp(30)}}}, LeadTimeDays: 0, History: flat},
			map[string]CondState{}, nil},
		{"expired lot is immediate", EvalItem{Level: &InventoryLevel{SKU: "P1", LocationID: "L1", QuantityOnHand: 30,
			Lots: []Lot{{LotID: "OLD", Quantity: 10, ExpiresAt: exp(-1)}}}, LeadTimeDays: 0, History: flat},
			map[string]CondState{"expiry": CondOn}, map[string]Severity{"expiry": SeverityHigh}},
		{"stockout risk signal from this week's run rate", EvalItem{Level: &InventoryLevel{SKU: "P1", LocationID: "L1", QuantityOnHand: 12}, LeadTimeDays: 0,
			History: append(weeksOf(10, 10), WeekValue{Week: WeekStart(evalNow), Actual: 30})},
			map[string]CondState{EventDemandStockoutRisk: CondOn}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.it.Product = prod
			got := kinds(th.EvaluateItem(c.it, evalNow, nil))
			for k, st := range c.want {
				if g, ok := got[k]; !ok || g.State != st {
					t.Errorf("%s: got %+v, want state %d", k, got[k], st)
				}
				if sev, ok := c.sev[k]; ok && got[k].Severity != sev {
					t.Errorf("%s severity = %s, want %s", k, got[k].Severity, sev)
				}
			}
			for k, g := range got {
				if _, ok := c.want[k]; !ok {
					t.Errorf("unexpected %s: %s", k, g.Message)
				}
			}
		})
	}
}

func TestEvaluateSeriesTable(t *testing.T) {
	th := DefaultAlertThresholds()
	key := DemandKey{SKU: "P1", Location: "L1", Channel: ChannelAll}
	last := WeekStart(evalNow).AddDate(0, 0, -7)
	biased := weeksOf(10, 10, 10, 10, 14, 15, 13, 16)
	for i := range biased {
		biased[i].Forecasted = 10
	}
	cases := []struct {
		name string
		s    EvalSeries
		want map[string]CondState
	}{
		{"steady", EvalSeries{Key: key, History: weeksOf(10, 11, 9, 10, 10, 12, 10, 9)}, map[string]CondState{}},
		{"persistent bias", EvalSeries{Key: key, History: biased}, map[string]CondState{"forecastDeviation": CondOn}},
		{"outside the forecast interval", EvalSeries{Key: key, History: weeksOf(10, 10, 10, 10, 10, 10, 10, 25),
			LastWeek: &SeriesForecast{Start: last, Quantity: []float64{10}, Lower: []float64{6}, Upper: []float64{14}}},
			map[string]CondState{"forecastDeviation": CondOn, EventDemandSpike: CondOn}},
		{"inside the interval", EvalSeries{Key: key, History: weeksOf(10, 10, 10, 10, 10, 10, 10, 13),
			LastWeek: &SeriesForecast{Start: last, Quantity: []float64{10}, Lower: []float64{6}, Upper: []float64{14}}},
			map[string]CondState{}},
		{"spike this week", EvalSeries{Key: key, History: append(weeksOf(10, 12, 9, 11, 10, 10, 11, 9), WeekValue{Week: WeekStart(evalNow), Actual: 60})},
			map[string]CondState{EventDemandSpike: CondOn}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := kinds(th.EvaluateSeries(c.s, evalNow, nil))
			for k, st := range c.want {
				if g, ok := got[k]; !ok || g.State != st {
					t.Errorf("%s: got %+v, want state %d", k, got[k], st)
				}
			}
			for k, g := range got {
				if _, ok := c.want[k]; !ok {
					t.Errorf("unexpected %s: %s %v", k, g.Message, g.Data)
				}
			}
		})
	}
}

func TestSeverityOf(t *testing.T) {
	th := DefaultAlertThresholds()
	for _, c := range []struct {
		urg    int
		value  float64
		priced bool
		want   Severity
	}{
		{urgencyImmediate, 20000, true, SeverityCritical},
		{urgencyImmediate, 500, true, SeverityHigh},
		{urgencyImmediate, 0, false, SeverityHigh},
		{urgencyImmediate, 10, true, SeverityMedium},
		{urgencyLow, 20000, true, SeverityMedium},
		{urgencyLow, 50, true, SeverityLow},
		{urgencyMedium, 2000, true, SeverityMedium},
		{urgencyHigh, 2000, true, SeverityHigh},
	} {
		if got := th.SeverityOf(c.urg, c.value, c.priced); got != c.want {
			t.Errorf("SeverityOf(%d, %g, %v) = %s, want %s", c.urg, c.value, c.priced, got, c.want)
		}
	}
}

func TestAlertConfigValidation(t *testing.T) {
	tr, fa := true, false
	types := func() *map[string]*bool {
		m := map[string]*bool{}
		for _, k := range AlertKinds {
			m[string(k)] = &tr
		}
		return &m
	}
	s := func(v string) *string { return &v }
	n := func(v float64) *float64 { return &v }
	dests := func(d ...AlertDestinationInput) *[]AlertDestinationInput { return &d }
	now := evalNow
	cases := []struct {
		name  string
		in    AlertConfigInput
		field string // "" = valid
	}{
		{"valid", AlertConfigInput{Enabled: &tr, CooldownMinutes: n(5), AlertTypes: types(), Destinations: dests(
			AlertDestinationInput{Type: s("EMAIL"), Value: s("a@b.co")}, AlertDestinationInput{Type: s("CHAT"), Value: s("https://chat.example/hook")})}, ""},
		{"cooldown low", AlertConfigInput{Enabled: &tr, CooldownMinutes: n(4), AlertTypes: types(), Destinations: dests()}, "config.cooldownMinutes"},
		{"cooldown high", AlertConfigInput{Enabled: &tr, CooldownMinutes: n(1441), AlertTypes: types(), Destinations: dests()}, "config.cooldownMinutes"},
		{"cooldown fraction", AlertConfigInput{Enabled: &tr, CooldownMinutes: n(7.5), AlertTypes: types(), Destinations: dests()}, "config.cooldownMinutes"},
		{"missing enabled", AlertConfigInput{CooldownMinutes: n(60), AlertTypes: types(), Destinations: dests()}, "config.enabled"},
		{"missing destinations", AlertConfigInput{Enabled: &fa, CooldownMinutes: n(60), AlertTypes: types()}, "config.destinations"},
		{"bad email", AlertConfigInput{Enabled: &tr, CooldownMinutes: n(60), AlertTypes: types(), Destinations: dests(
			AlertDestinationInput{Type: s("EMAIL"), Value: s("https://x.example")})}, "config.destinations[0].value"},
		{"webhook needs a URL", AlertConfigInput{Enabled: &tr, CooldownMinutes: n(60), AlertTypes: types(), Destinations: dests(
			AlertDestinationInput{Type: s("WEBHOOK"), Value: s("ops@example.com")})}, "config.destinations[0].value"},
		{"unknown type", AlertConfigInput{Enabled: &tr, CooldownMinutes: n(60), AlertTypes: types(), Destinations: dests(
			AlertDestinationInput{Type: s("SMS"), Value: s("+1")})}, "config.destinations[0].type"},
		{"duplicate ids", AlertConfigInput{Enabled: &tr, CooldownMinutes: n(60), AlertTypes: types(), Destinations: dests(
			AlertDestinationInput{ID: s("x"), Type: s("EMAIL"), Value: s("a@b.co")}, AlertDestinationInput{ID: s("x"), Type: s("EMAIL"), Value: s("c@d.co")})}, "config.destinations[1].id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := c.in.ResolveConfig(DefaultAlertConfig(), now)
			if c.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range cfg.Destinations {
					if d.ID == "" || !d.Enabled {
						t.Fatalf("destination = %+v", d)
					}
				}
				return
			}
			e, ok := err.(*Error)
			if !ok || e.Code != EVALIDATION || len(e.Details[c.field]) == 0 {
				t.Fatalf("err = %v, want a detail on %s", err, c.field)
			}
		})
	}
	// A missing alert type and an unknown one are both named.
	m := *types()
	delete(m, "expiry")
	m["weather"] = &tr
	_, err := AlertConfigInput{Enabled: &tr, CooldownMinutes: n(60), AlertTypes: &m, Destinations: dests()}.ResolveConfig(DefaultAlertConfig(), now)
	if e := err.(*Error); len(e.Details["config.alertTypes.expiry"]) == 0 || len(e.Details["config.alertTypes.weather"]) == 0 {
		t.Fatalf("details = %v", e.Details)
	}
}

func TestSignWebhookMatchesTheSpec(t *testing.T) {
	// Independent computation: HMAC-SHA256(base64-decoded key, "id.ts.body"), base64.
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	ts := time.Unix(1614265330, 0)
	body := []byte(`{"test": 2432232314}`)
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("msg_p5jXN8AQM9LWM0D4loKWxJek.1614265330." + string(body)))
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	got, err := SignWebhook([]string{secret}, "msg_p5jXN8AQM9LWM0D4loKWxJek", ts, body)
	if err != nil || got != want {
		t.Fatalf("got %q %v, want %q", got, err, want)
	}
	// The example published with the Standard Webhooks specification.
	if got != "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" {
		t.Fatalf("does not match the specification's example: %s", got)
	}
	two, _ := SignWebhook([]string{secret, NewWebhookSecret()}, "msg_p5jXN8AQM9LWM0D4loKWxJek", ts, body)
	if parts := strings.Fields(two); len(parts) != 2 || parts[0] != want {
		t.Fatalf("two secrets = %q", two)
	}
}

func TestVerifyPaymentSignature(t *testing.T) {
	body := []byte(`{"id":"evt_1"}`)
	now := time.Unix(1_700_000_000, 0)
	good := PaymentSignatureHeader(body, now, "sek")
	cases := []struct {
		name   string
		header string
		body   []byte
		now    time.Time
		want   error
	}{
		{"valid", good, body, now, nil},
		{"valid among several v1", PaymentSignatureHeader(body, now, "old", "sek"), body, now, nil},
		{"wrong secret", PaymentSignatureHeader(body, now, "other"), body, now, ErrSignatureInvalid},
		{"tampered body", good, []byte(`{"id":"evt_2"}`), now, ErrSignatureInvalid},
		{"stale", good, body, now.Add(301 * time.Second), ErrSignatureStale},
		{"future", good, body, now.Add(-301 * time.Second), ErrSignatureStale},
		{"within tolerance", good, body, now.Add(299 * time.Second), nil},
		{"missing", "", body, now, ErrSignatureMissing},
		{"no timestamp", "v1=abcd", body, now, ErrSignatureFormat},
		{"garbage", "nonsense", body, now, ErrSignatureFormat},
	}
	for _, c := range cases {
		if err := VerifyPaymentSignature(c.header, c.body, "sek", c.now, PaymentSignatureTolerance); err != c.want {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

func TestRetryPolicySpansAboutThreeDays(t *testing.T) {
	p := DefaultWebhookRetry
	p.Jitter = 0
	var total time.Duration
	for n := 1; n < p.MaxAttempts; n++ {
		total += p.Delay(n)
	}
	if total < 60*time.Hour || total > 84*time.Hour {
		t.Fatalf("retries span %s, want about three days", total)
	}
	j := DefaultWebhookRetry
	for range 100 {
		if d := j.Delay(1); d < 24*time.Second || d > 36*time.Second {
			t.Fatalf("jittered first delay %s", d)
		}
	}
}

// TestFEFOLots: stock that left without naming lots (picks, shipments, transfers) is taken from
// the earliest-expiring lots first, lots without expiry last; lots that fit the stock on hand are
// returned as stored, and the stored slice is never changed.
func TestFEFOLots(t *testing.T) {
	day := func(d int) *time.Time { v := evalNow.AddDate(0, 0, d); return &v }
	lots := []Lot{{LotID: "NOEXP", Quantity: 5}, {LotID: "LATE", Quantity: 40, ExpiresAt: day(20)},
		{LotID: "EARLY", Quantity: 20, ExpiresAt: day(7)}, {LotID: "EARLY2", Quantity: 10, ExpiresAt: day(7)}}
	stored := slices.Clone(lots)
	cases := []struct {
		onHand float64
		want   []Lot
	}{
		{100, lots}, // the lots fit: as stored
		{75, lots},
		// 60 on hand: 15 of 75 left, from EARLY (stored before EARLY2, same expiry) first.
		{60, []Lot{{LotID: "NOEXP", Quantity: 5}, {LotID: "LATE", Quantity: 40, ExpiresAt: day(20)},
			{LotID: "EARLY", Quantity: 5, ExpiresAt: day(7)}, {LotID: "EARLY2", Quantity: 10, ExpiresAt: day(7)}}},
		{30, []Lot{{LotID: "NOEXP", Quantity: 5}, {LotID: "LATE", Quantity: 25, ExpiresAt: day(20)}}},
		{3, []Lot{{LotID: "NOEXP", Quantity: 3}}},
		{-4, []Lot{}},
	}
	for _, c := range cases {
		lvl := InventoryLevel{QuantityOnHand: c.onHand, Lots: lots}
		got := lvl.FEFOLots()
		if !reflect.DeepEqual(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
			t.Errorf("on hand %v: %+v, want %+v", c.onHand, got, c.want)
		}
		if !reflect.DeepEqual(lots, stored) {
			t.Fatalf("on hand %v changed the stored lots: %+v", c.onHand, lots)
		}
	}
	// The expiry alert looks at what is left: 20 on hand of lots 20 (7 days) + 40 (20 days) is 20
	// of the later lot, which sells in time at 1 a day; the stored lots alone would say 13 of the
	// early lot expire unsold (and 27 of the later one).
	th := DefaultAlertThresholds()
	lvl := &InventoryLevel{QuantityOnHand: 20, Lots: []Lot{{LotID: "A", Quantity: 20, ExpiresAt: day(7)}, {LotID: "B", Quantity: 40, ExpiresAt: day(20)}}}
	if r, ok := th.expiry(lvl, 1, evalNow); ok {
		t.Errorf("expiry risk %+v for stock that sells before it expires", r)
	}
	lvl.QuantityOnHand = 60
	if r, ok := th.expiry(lvl, 1, evalNow); !ok || r.lot != "A" || math.Abs(r.units-40) > 1e-9 {
		t.Errorf("expiry risk %+v %v, want 40 units, the first of lot A", r, ok)
	}
}
