package supplyplan

import (
	"testing"
	"time"
)

func TestEvaluationWindowAndLeadTimes(t *testing.T) {
	th := DefaultAlertThresholds()
	th.RateWeeks, th.SlowMovingWeeks, th.SpikeBaselineWeeks, th.DeviationBiasWeeks = 4, 8, 6, 3
	if got, want := th.HistoryFrom(evalNow), WeekStart(evalNow).AddDate(0, 0, -7*10); !got.Equal(want) {
		t.Errorf("HistoryFrom = %v, want %v (the longest window, 8 weeks, plus 2)", got, want)
	}
	th.DefaultLeadTimeDays, th.StockoutHorizonWeeks = 14, 3
	lt := map[string]int{"P": 30, "Q": 1}
	if th.LeadTimeOf(lt, "P") != 30 || th.LeadTimeOf(lt, "R") != 14 {
		t.Errorf("lead times %d %d", th.LeadTimeOf(lt, "P"), th.LeadTimeOf(lt, "R"))
	}
	if got := th.ForecastHorizon(lt); got != 5 {
		t.Errorf("ForecastHorizon = %d, want 5 (30 days)", got)
	}
	if got := th.ForecastHorizon(nil); got != 3 {
		t.Errorf("ForecastHorizon without suppliers = %d, want the stockout horizon 3", got)
	}
}

// EvaluateTenant evaluates every sku-location with its own history, forecast, lead time and
// inbound quantity, then every series; stop ends it early.
func TestEvaluateTenant(t *testing.T) {
	th := DefaultAlertThresholds()
	prod := &Product{ID: "P1", SKU: "P1", UnitPrice: f64(50), UnitCost: f64(20), CreatedAt: evalNow.AddDate(-1, 0, 0)}
	flat := weeksOf(10, 10, 10, 10, 10, 10, 10, 10)
	k1 := DemandKey{SKU: "P1", Location: "L1", Channel: ChannelAll}
	k2 := DemandKey{SKU: "P1", Location: "L2", Channel: ChannelAll}
	in := TenantEval{
		Products: map[string]*Product{"P1": prod},
		Levels: []*InventoryLevel{{SKU: "P1", LocationID: "L1", QuantityOnHand: 30, ReorderPoint: 20},
			{SKU: "P1", LocationID: "L2", QuantityOnHand: 30, ReorderPoint: 20}},
		LeadTimes: map[string]int{"P1": 14},
		Inbound:   map[string]float64{InventoryKey("P1", "L2"): 20},
		History:   map[DemandKey][]WeekValue{k1: flat, k2: flat},
	}
	conds, ok := th.EvaluateTenant(in, evalNow, nil)
	if !ok {
		t.Fatal("stopped without a stop function")
	}
	var lowAtp []string
	for _, c := range conds {
		if c.Key.Kind == string(AlertLowATP) {
			lowAtp = append(lowAtp, c.Key.Location)
		}
	}
	// As TestEvaluateItemTable: low ATP at L1; the purchase order due at L2 lifts its ATP.
	if len(lowAtp) != 1 || lowAtp[0] != "L1" {
		t.Fatalf("lowAtp at %v, want L1 only", lowAtp)
	}
	many := TenantEval{Products: in.Products, History: in.History}
	for range 2048 {
		many.Levels = append(many.Levels, in.Levels[0])
	}
	asked := 0
	if _, ok := th.EvaluateTenant(many, evalNow, func() bool { asked++; return true }); ok || asked != 1 {
		t.Fatalf("stop answered true: ok=%v after %d asks, want false after 1", ok, asked)
	}
}

// Only the alert types the configuration enables take part; webhook-only signals always do.
func TestObserveEnabledTypes(t *testing.T) {
	cfg := AlertConfig{AlertTypes: map[AlertKind]bool{AlertStockout: true}}
	conds := []Condition{
		{Key: AlertKey{Kind: string(AlertStockout), Product: "P"}, State: CondOn},
		{Key: AlertKey{Kind: string(AlertOverstock), Product: "P"}, State: CondOn},
		{Key: AlertKey{Kind: EventDemandStockoutRisk, Product: "P"}, State: CondHold},
	}
	obs, byKey := cfg.Observe(conds)
	if len(obs) != 2 || len(byKey) != 2 {
		t.Fatalf("observations %v", obs)
	}
	if _, ok := byKey[conds[1].Key.String()]; ok {
		t.Error("a disabled type was observed")
	}
	if obs[1].Key != conds[2].Key.String() || obs[1].State != CondHold {
		t.Errorf("the signal's observation = %+v", obs[1])
	}
}

// Fired conditions become alerts, most severe then most valuable first, delivered up to the cap
// and suppressed past it; signal conditions become events of the organization.
func TestPlanFirings(t *testing.T) {
	v := func(x float64) *float64 { return &x }
	cond := func(kind, product string, sev Severity, value *float64) Condition {
		return Condition{Key: AlertKey{Kind: kind, Product: product}, State: CondOn, Severity: sev, Message: kind + " " + product, Value: value}
	}
	all := []Condition{
		cond(string(AlertStockout), "low", SeverityLow, v(1)),
		cond(string(AlertStockout), "big", SeverityHigh, v(500)),
		cond(string(AlertStockout), "small", SeverityHigh, v(5)),
		cond(string(AlertExpiry), "crit", SeverityCritical, nil),
		{Key: AlertKey{Kind: EventDemandSpike, Product: "spike"}, State: CondOn, Severity: SeverityMedium, Data: map[string]any{"x": 1}},
	}
	byKey := map[string]Condition{}
	var keys []string
	for _, c := range all {
		byKey[c.Key.String()] = c
		keys = append(keys, c.Key.String())
	}
	keys = append(keys, "gone") // a key the gate fired that this evaluation did not observe
	cfg := AlertConfig{Destinations: []AlertDestination{{ID: "d1", Type: DestEmail, Value: "ops@example.com", Enabled: true}}}
	stamp := evalNow.Truncate(time.Millisecond)
	got := PlanFirings("org", keys, byKey, cfg, 2, stamp)
	var order []string
	for _, f := range got {
		switch {
		case f.Alert != nil:
			a := f.Alert
			order = append(order, a.ProductMasterID)
			if a.Source != "evaluation" || !a.TriggeredAt.Equal(stamp) {
				t.Errorf("alert %+v", a)
			}
			if delivered := len(order) <= 2; a.Suppressed == delivered || (len(a.Destinations) > 0) != delivered {
				t.Errorf("alert %d (%s): suppressed=%v with %d destinations; the cap is 2", len(order), a.ProductMasterID, a.Suppressed, len(a.Destinations))
			}
		case f.Event != nil:
			order = append(order, "event:"+f.Event.Type)
			if f.Event.OrganizationID != "org" || f.Event.Data == nil || !f.Event.Timestamp.Equal(stamp) {
				t.Errorf("event %+v", f.Event)
			}
		}
	}
	want := []string{"crit", "big", "small", "event:" + EventDemandSpike, "low"}
	if len(order) != len(want) {
		t.Fatalf("firings %v, want %v", order, want)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("firings %v, want %v", order, want)
		}
	}
	// Without destinations every alert is suppressed and none counts against the cap.
	for _, f := range PlanFirings("org", keys, byKey, AlertConfig{}, 1, stamp) {
		if f.Alert != nil && !f.Alert.Suppressed {
			t.Errorf("alert without destinations not suppressed: %+v", f.Alert)
		}
	}
}
