package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
)

// weekQuantities reads the "quantity" (or key) of each element of a list of weeks.
func weekQuantities(weeks []any, key string) []float64 {
	out := make([]float64, len(weeks))
	for i, w := range weeks {
		out[i] = num(w.(map[string]any), key)
	}
	return out
}

// TestForecastIsTheSameEverywhere: one series with past and planned promotions (learned lifts),
// through every endpoint that shows or uses its forecast, at several horizons: week k is the same
// number everywhere (issue 10, item 9: week 1 read 68.66, 69.55, 71.00, 71.39 and 69.81 on as many
// endpoints and horizons).
func TestForecastIsTheSameEverywhere(t *testing.T) {
	s := MustStart(t, "")
	seedForecastData(t, s)
	k := s.Key("PLANNER")
	s.Do("POST", "/api/forecast/events", k, map[string]any{"name": "next promo", "type": "PROMOTION",
		"startsAt": monday(2).Format(time.RFC3339), "endsAt": monday(3).Format(time.RFC3339), "productMasterId": "P", "locationId": "L1"}).Must(t, 201)
	get := func(h int) []float64 {
		f := list(s.Do("GET", fmt.Sprintf("/api/forecast?productMasterId=P&locationId=L1&horizonWeeks=%d", h), k, nil).Must(t, 200), "forecasts")[0].(map[string]any)
		return weekQuantities(list(f, "periods"), "quantity")
	}
	ref := get(104)
	if ref[2] <= ref[1]*1.2 {
		t.Fatalf("the planned promotion does not show in week 3: %v", ref[:4])
	}
	same := func(where string, got []float64) {
		t.Helper()
		if len(got) == 0 {
			t.Errorf("%s: no weeks", where)
		}
		for i, v := range got {
			if v != ref[i] {
				t.Errorf("%s: week %d is %v, GET /api/forecast?horizonWeeks=104 says %v", where, i+1, v, ref[i])
			}
		}
	}
	for _, h := range []int{1, 2, 3, 4, 8, 13, 14, 26, 52} {
		same(fmt.Sprintf("GET /api/forecast?horizonWeeks=%d", h), get(h))
	}
	base := str(s.Do("POST", "/api/forecast/scenarios", k, map[string]any{"name": "Base", "type": "BASELINE"}).Must(t, 201), "scenario", "id")
	other := str(s.Do("POST", "/api/forecast/scenarios", k, map[string]any{"name": "Other", "type": "BASELINE"}).Must(t, 201), "scenario", "id")
	for _, h := range []int{2, 8, 13, 30} {
		g := s.Do("POST", "/api/forecast/scenarios/"+base+"/generate", k, map[string]any{"horizonWeeks": h,
			"productMasterIds": []string{"P"}, "locationIds": []string{"L1"}}).Must(t, 200)
		same(fmt.Sprintf("generate %d weeks", h), weekQuantities(list(g, "weekly"), "quantity"))
	}
	for _, h := range []int{4, 13} {
		c := s.Do("POST", "/api/forecast/scenarios/compare", k, map[string]any{"scenarioIds": []string{base, other}, "horizonWeeks": h,
			"productMasterId": "P", "locationId": "L1"}).Must(t, 200)
		for _, sc := range list(c, "scenarios") {
			same(fmt.Sprintf("compare %d weeks", h), weekQuantities(list(sc.(map[string]any), "weekly"), "quantity"))
		}
	}
	for _, h := range []int{3, 13} {
		cp := s.Do("GET", fmt.Sprintf("/api/forecast/channel-projection?productMasterId=P&locationId=L1&horizonWeeks=%d", h), k, nil).Must(t, 200)
		same(fmt.Sprintf("channel projection %d weeks", h), weekQuantities(list(cp, "total"), "quantity"))
	}
	tools := sdkSession(t, "http://"+s.Main.Tools.Addr()+"/mcp?org=demo", s.Key(supplyplan.CredDemoTool), "")
	for _, w := range []int{2, 5} {
		fc := sdkCall(t, tools, "get_demand_forecast", map[string]any{"productId": "P", "locationId": "L1", "weeks": w})
		same(fmt.Sprintf("MCP get_demand_forecast %d weeks", w), weekQuantities(fc["weeks"].([]any), "forecast"))
	}
	// Sums of the same weeks: a month of the long-term forecast (weeks split by days) and the
	// 8-week demand behind a transfer recommendation (rendered to one decimal there).
	lt := s.Do("GET", "/api/forecast/long-term?productMasterId=P&locationId=L1&horizonMonths=6", k, nil).Must(t, 200)
	month := list(lt, "buckets")[1].(map[string]any)
	from, _ := time.Parse("2006-01-02", month["start"].(string))
	to, _ := time.Parse("2006-01-02", month["end"].(string))
	want := 0.0
	for i, q := range ref {
		for d := range 7 {
			if day := monday(i).AddDate(0, 0, d); !day.Before(from) && day.Before(to) {
				want += q / 7
			}
		}
	}
	if got := num(month, "quantity"); math.Abs(got-want) > 0.05 {
		t.Errorf("long-term %s: %v, the weeks of GET /api/forecast give %.2f", month["period"], got, want)
	}
	gen := s.Do("POST", "/api/transfers/recommendations", k, map[string]any{"productMasterId": "P"}).Must(t, 200)
	recs := list(gen, "recommendations")
	if len(recs) != 1 {
		t.Fatalf("recommendations = %v", gen)
	}
	dest := recs[0].(map[string]any)["explanation"].(map[string]any)["destination"].(map[string]any)
	window := 0.0
	for _, q := range ref[:8] {
		window += q
	}
	if got := num(dest, "forecastOverWindow"); math.Abs(got-window) > 0.06 {
		t.Errorf("transfer recommendation: forecast over 8 weeks at L1 %v, the weeks of GET /api/forecast give %.2f", got, window)
	}
}

// TestLongTermQuarterIncludesCurrentQuarter: like MONTH with the current month, QUARTER starts with
// the current quarter, and a quarter is the sum of its months.
func TestLongTermQuarterIncludesCurrentQuarter(t *testing.T) {
	s := MustStart(t, "")
	seedForecastData(t, s)
	k := s.Key("VIEWER")
	now := time.Now().UTC()
	qs := time.Date(now.Year(), time.Month((int(now.Month())-1)/3*3+1), 1, 0, 0, 0, 0, time.UTC)
	quarters := list(s.Do("GET", "/api/forecast/long-term?productMasterId=Q&locationId=L1&granularity=QUARTER&horizonMonths=12", k, nil).Must(t, 200), "buckets")
	months := list(s.Do("GET", "/api/forecast/long-term?productMasterId=Q&locationId=L1&horizonMonths=18", k, nil).Must(t, 200), "buckets")
	first := quarters[0].(map[string]any)
	if want := fmt.Sprintf("%d-Q%d", now.Year(), (int(now.Month())-1)/3+1); first["period"] != want || first["start"] != qs.Format("2006-01-02") {
		t.Fatalf("first quarter %v %v, want %s starting %s", first["period"], first["start"], want, qs.Format("2006-01-02"))
	}
	if month0 := months[0].(map[string]any); month0["period"] != now.Format("2006-01") {
		t.Fatalf("first month %v, want %s", month0["period"], now.Format("2006-01"))
	}
	if partial := qs.Before(supplyplan.WeekStart(now)); first["partial"] != partial {
		t.Errorf("current quarter partial = %v, want %v", first["partial"], partial)
	}
	if n := len(quarters); n != 4 && n != 5 {
		t.Errorf("12 months make %d quarters", n)
	}
	// The next quarter is whole, and the sum of its three months.
	next := quarters[1].(map[string]any)
	sum, n := 0.0, 0
	for _, m := range months {
		mm := m.(map[string]any)
		if mm["start"].(string) >= next["start"].(string) && mm["start"].(string) < next["end"].(string) {
			sum += num(mm, "quantity")
			n++
		}
	}
	if next["partial"] != false || n != 3 || math.Abs(num(next, "quantity")-sum) > 0.03 {
		t.Errorf("quarter %v = %v (partial %v), its %d months sum to %.2f", next["period"], num(next, "quantity"), next["partial"], n, sum)
	}
}

// quantityKeys are the response fields that hold quantities (2 decimals); ratioKeys hold ratios (4).
var (
	quantityKeys = map[string]bool{"baseline": true, "quantity": true, "lower": true, "upper": true, "totalQuantity": true,
		"totalBaseline": true, "previousTotal": true, "newTotal": true, "delta": true, "deltaVsFirst": true,
		"weeklyDeltaVsFirst": true, "actualTotal": true, "forecastTotal": true, "base": true, "planned": true, "actual": true,
		"forecast": true, "actualDemand": true, "forecastedDemand": true, "totalActualDemand": true}
	ratioKeys = map[string]bool{"liftPct": true, "weight": true, "share": true, "wape": true, "mape": true, "bias": true,
		"mase": true, "smape": true, "deltaPctVsFirst": true, "plannedLiftPct": true, "plannedEffectPct": true, "realisedLiftPct": true}
)

// checkDecimals walks a JSON body (numbers kept as text) and reports quantities with more than 2
// decimals and ratios with more than 4.
func checkDecimals(t *testing.T, where string, body []byte) int {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	checked := 0
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(k, e)
			}
		case []any:
			for _, e := range x {
				walk(key, e)
			}
		case json.Number:
			limit := -1
			switch {
			case quantityKeys[key]:
				limit = supplyplan.QuantityDecimals
			case ratioKeys[key]:
				limit = supplyplan.RatioDecimals
			}
			if limit < 0 {
				return
			}
			checked++
			if _, frac, ok := strings.Cut(string(x), "."); ok && len(strings.TrimRight(frac, "0")) > limit {
				t.Errorf("%s: %s = %s has more than %d decimals", where, key, x, limit)
			}
		}
	}
	walk("", v)
	return checked
}

// TestQuantitiesAreRounded reads every forecasting response and the demand history and checks the
// documented precision: quantities to 2 decimals, ratios to 4 (a delta came out as
// -1947.8799999999997, a week of demand as 0.30000000000000004).
func TestQuantitiesAreRounded(t *testing.T) {
	s := MustStart(t, "")
	seedForecastData(t, s)
	k := s.Key("ADMIN")
	// Demand with cents, so that sums and differences of quantities are not whole.
	var recs []any
	for w := -30; w < 0; w++ {
		recs = append(recs, map[string]any{"skuId": "Q", "locationId": "L2", "weekStarting": monday(w).Format("2006-01-02"),
			"actualDemand": 17.13 + float64((w*w)%7)*1.07})
	}
	// A week whose actual is an import per channel plus signals: 0.1 + 0.2 + 0.7 + 0.1.
	recs = append(recs, map[string]any{"skuId": "Q", "locationId": "L1", "weekStarting": monday(-1).Format("2006-01-02"), "channel": "ONLINE", "actualDemand": 0.1},
		map[string]any{"skuId": "Q", "locationId": "L1", "weekStarting": monday(-1).Format("2006-01-02"), "channel": "STORE", "actualDemand": 0.2})
	s.Import("demand-history", map[string]any{"records": recs})
	s.Do("POST", "/api/demand/signals", k, map[string]any{"signals": []any{
		map[string]any{"signalId": "a", "skuId": "Q", "locationId": "L1", "quantity": 0.7, "occurredAt": monday(-1).Add(time.Hour).Format(time.RFC3339)},
		map[string]any{"signalId": "b", "skuId": "Q", "locationId": "L1", "quantity": 0.1, "occurredAt": monday(-1).Add(2 * time.Hour).Format(time.RFC3339)},
	}}).Must(t, 200)
	ev := s.Do("POST", "/api/forecast/events", k, map[string]any{"name": "promo", "type": "PROMOTION", "value": map[string]any{"liftPct": 0.137},
		"startsAt": monday(1).Format(time.RFC3339), "endsAt": monday(1).AddDate(0, 0, 3).Format(time.RFC3339), "productMasterId": "Q"}).Must(t, 201)
	s.Do("PUT", "/api/forecast/events/"+ev["id"].(string), k, map[string]any{"value": map[string]any{"liftPct": 0.291}}).Must(t, 200)
	sc := str(s.Do("POST", "/api/forecast/scenarios", k, map[string]any{"name": "Up", "assumptions": map[string]any{"globalLiftPct": 0.0731}}).Must(t, 201), "scenario", "id")
	base := str(s.Do("POST", "/api/forecast/scenarios", k, map[string]any{"name": "Base"}).Must(t, 201), "scenario", "id")
	var bodies []struct {
		where string
		body  []byte
	}
	add := func(where string, r resp) {
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", where, r.Status, r.Body)
		}
		bodies = append(bodies, struct {
			where string
			body  []byte
		}{where, r.Body})
	}
	for _, h := range []int{3, 13} {
		add(fmt.Sprintf("generate %d", h), s.Do("POST", "/api/forecast/scenarios/"+sc+"/generate", k, map[string]any{"horizonWeeks": h}))
		add(fmt.Sprintf("generate Q %d", h), s.Do("POST", "/api/forecast/scenarios/"+sc+"/generate", k, map[string]any{"horizonWeeks": h, "productMasterIds": []string{"Q"}}))
	}
	add("backfilled generate", s.Do("POST", "/api/forecast/scenarios/"+sc+"/generate", k, map[string]any{"horizonWeeks": 6, "asOf": monday(-6).Format("2006-01-02")}))
	s.Do("POST", "/api/forecast/scenarios/"+sc+"/publish", k, nil).Must(t, 200)
	for _, q := range []string{"", "scenarioId=" + sc, "point=median&interval=0.95", "channel=ONLINE", "productMasterId=Q&locationId=L2&horizonWeeks=26"} {
		add("GET /api/forecast?"+q, s.Do("GET", "/api/forecast?"+q, k, nil))
	}
	add("compare", s.Do("POST", "/api/forecast/scenarios/compare", k, map[string]any{"scenarioIds": []string{base, sc}, "horizonWeeks": 7}))
	add("channel projection", s.Do("GET", "/api/forecast/channel-projection?horizonWeeks=9", k, nil))
	add("long-term", s.Do("GET", "/api/forecast/long-term?granularity=QUARTER", k, nil))
	add("accuracy", s.Do("GET", "/api/forecast/accuracy", k, nil))
	add("event lift", s.Do("GET", "/api/forecast/events/"+ev["id"].(string)+"/lift", k, nil))
	eventually(t, 20*time.Second, func() error { // the event entries' figures arrive a moment later
		r := s.Do("GET", "/api/forecast/change-history?productMasterId=Q", k, nil).Must(t, 200)
		for _, e := range list(r, "entries") {
			if m := e.(map[string]any); m["effectStatus"] == supplyplan.EffectPending {
				return fmt.Errorf("entry %v pending", m["id"])
			}
		}
		return nil
	})
	add("change history", s.Do("GET", "/api/forecast/change-history?limit=100", k, nil))
	add("demand history", s.Do("GET", "/api/demand/history?skuId=Q&locationId=L1", k, nil))
	checked := 0
	for _, b := range bodies {
		checked += checkDecimals(t, b.where, b.body)
	}
	if checked < 500 {
		t.Errorf("only %d numbers checked", checked)
	}
}
