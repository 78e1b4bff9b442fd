package main

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
	"time"
)

func monday(offsetWeeks int) time.Time {
	now := time.Now().UTC()
	d := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	d = d.AddDate(0, 0, -((int(d.Weekday()) + 6) % 7))
	return d.AddDate(0, 0, 7*offsetWeeks)
}

// seedForecastData imports products P (juice) and Q (snacks) at L1 and L2 with 104 weeks of history:
// P@L1 runs about 100 a week with a promotion every 8th week that lifts demand by half (events
// without liftPct); P@L2 sells through ONLINE (30) and STORE (70); Q@L1 about 40.
func seedForecastData(t *testing.T, s *testServer) (promoWeeks []int) {
	t.Helper()
	s.Import("catalog", map[string]any{"products": []any{
		map[string]any{"externalId": "P", "categoryId": "juice", "unitPrice": 10, "unitCost": 4},
		map[string]any{"externalId": "Q", "categoryId": "snacks"},
	}})
	s.Import("inventory", map[string]any{"levels": []any{
		map[string]any{"skuId": "P", "locationId": "L1", "quantityOnHand": 50},
		map[string]any{"skuId": "P", "locationId": "L2", "quantityOnHand": 900},
		map[string]any{"skuId": "Q", "locationId": "L1", "quantityOnHand": 100},
	}})
	rng := rand.New(rand.NewSource(7))
	var recs []any
	for w := -104; w <= -1; w++ {
		wk := monday(w).Format("2006-01-02")
		p := 100 + rng.NormFloat64()*6
		if (w+104)%8 == 3 {
			p *= 1.5
			promoWeeks = append(promoWeeks, w)
		}
		recs = append(recs,
			map[string]any{"skuId": "P", "locationId": "L1", "weekStarting": wk, "actualDemand": math.Round(p)},
			map[string]any{"skuId": "P", "locationId": "L2", "weekStarting": wk, "channel": "ONLINE", "actualDemand": math.Round(30 + rng.NormFloat64()*3)},
			map[string]any{"skuId": "P", "locationId": "L2", "weekStarting": wk, "channel": "STORE", "actualDemand": math.Round(70 + rng.NormFloat64()*5)},
			map[string]any{"skuId": "Q", "locationId": "L1", "weekStarting": wk, "actualDemand": math.Round(40 + rng.NormFloat64()*4)},
		)
	}
	checkCounts(t, s.Import("demand-history", map[string]any{"records": recs}), len(recs), 0)
	k := s.Key("ADMIN")
	for _, w := range promoWeeks {
		s.Do("POST", "/api/forecast/events", k, map[string]any{"name": fmt.Sprintf("promo %d", w), "type": "PROMOTION",
			"startsAt": monday(w).Format(time.RFC3339), "endsAt": monday(w + 1).Format(time.RFC3339),
			"productMasterId": "P", "locationId": "L1"}).Must(t, 201)
	}
	return promoWeeks
}

func TestForecastLearnsPromotionLift(t *testing.T) {
	s := MustStart(t, "")
	promos := seedForecastData(t, s)
	k := s.Key("PLANNER")
	future := s.Do("POST", "/api/forecast/events", k, map[string]any{"name": "next promo", "type": "PROMOTION",
		"startsAt": monday(2).Format(time.RFC3339), "endsAt": monday(3).Format(time.RFC3339), "productMasterId": "P", "locationId": "L1"}).Must(t, 201)
	res := s.Do("GET", "/api/forecast?productMasterId=P&locationId=L1", s.Key("VIEWER"), nil).Must(t, 200)
	if num(res, "horizonWeeks") != 13 || num(res, "total") != 1 || res["generatedAt"] == nil {
		t.Fatalf("envelope = %v", res)
	}
	f := list(res, "forecasts")[0].(map[string]any)
	periods := list(f, "periods")
	if len(periods) != 13 || f["channel"] != "ALL" || f["model"] == "" {
		t.Fatalf("forecast = %v", f)
	}
	if got := periods[0].(map[string]any)["weekStarting"]; got != monday(0).Format("2006-01-02") {
		t.Fatalf("first week %v, want this week's Monday", got)
	}
	var base float64
	for i, p := range periods {
		pm := p.(map[string]any)
		if !(num(pm, "lower") <= num(pm, "quantity") && num(pm, "quantity") <= num(pm, "upper")) || num(pm, "lower") < 0 {
			t.Fatalf("week %d interval %v", i, pm)
		}
		if i != 2 {
			base += num(pm, "baseline")
		}
	}
	base /= 12
	// Past promotions are de-lifted: the baseline stays near 100, not pulled up by promo weeks.
	if base < 90 || base > 110 {
		t.Fatalf("baseline %.1f, want about 100 (%d past promotions de-lifted)", base, len(promos))
	}
	promoWeek := periods[2].(map[string]any)
	evs := list(promoWeek, "events")
	if len(evs) != 1 {
		t.Fatalf("promo week events = %v", promoWeek)
	}
	ev := evs[0].(map[string]any)
	if ev["id"] != future["id"] || ev["learned"] != true || ev["type"] != "PROMOTION" {
		t.Fatalf("applied event = %v", ev)
	}
	if lift := num(ev, "liftPct"); lift < 0.35 || lift > 0.65 {
		t.Fatalf("learned lift %.3f, want about 0.5", lift)
	}
	if ratio := num(promoWeek, "quantity") / num(promoWeek, "baseline"); ratio < 1.35 || ratio > 1.65 {
		t.Fatalf("promo week quantity/baseline = %.2f", ratio)
	}
	acc := f["accuracy"].(map[string]any)
	if num(acc, "window") == 0 || acc["wape"] == nil || num(acc, "wape") > 0.2 {
		t.Fatalf("accuracy = %v", acc)
	}
	// Wider interval levels give wider bands.
	width := func(level string) float64 {
		p := list(list(s.Do("GET", "/api/forecast?productMasterId=P&locationId=L1&interval="+level, k, nil).Must(t, 200), "forecasts")[0].(map[string]any), "periods")[5].(map[string]any)
		return num(p, "upper") - num(p, "lower")
	}
	if w5, w8, w95 := width("0.5"), width("0.8"), width("0.95"); !(w5 < w8 && w8 < w95) {
		t.Fatalf("interval widths 0.5=%v 0.8=%v 0.95=%v", w5, w8, w95)
	}
	// The lift report of a past promotion: realised close to the true +50%.
	past := list(s.Do("GET", "/api/forecast/events?from="+monday(promos[len(promos)-1]).Format("2006-01-02")+"&to="+monday(promos[len(promos)-1]).Format("2006-01-02"), k, nil).Must(t, 200), "events")
	if len(past) == 0 {
		t.Fatal("past promotion not listed")
	}
	lr := s.Do("GET", "/api/forecast/events/"+past[0].(map[string]any)["id"].(string)+"/lift", k, nil).Must(t, 200)
	if lr["status"] != "COMPLETE" || lr["learned"] != true || num(lr, "realisedLiftPct") < 0.3 || num(lr, "realisedLiftPct") > 0.7 || len(list(lr, "weeks")) != 1 {
		t.Fatalf("lift report = %v", lr)
	}
	fl := s.Do("GET", "/api/forecast/events/"+future["id"].(string)+"/lift", k, nil).Must(t, 200)
	if fl["status"] != "PENDING" || fl["plannedLiftPct"] == nil {
		t.Fatalf("future lift report = %v", fl)
	}
}

func TestForecastListingAsOfAndErrors(t *testing.T) {
	s := MustStart(t, "")
	seedForecastData(t, s)
	k := s.Key("VIEWER")
	all := s.Do("GET", "/api/forecast?horizonWeeks=4", k, nil).Must(t, 200)
	if num(all, "total") != 3 || len(list(all, "forecasts")) != 3 {
		t.Fatalf("all series = %v", all)
	}
	page := s.Do("GET", "/api/forecast?horizonWeeks=4&limit=2&offset=2", k, nil).Must(t, 200)
	if len(list(page, "forecasts")) != 1 || num(page, "offset") != 2 {
		t.Fatalf("page = %v", page)
	}
	if n := num(s.Do("GET", "/api/forecast?productMasterId=P", k, nil).Must(t, 200), "total"); n != 2 {
		t.Fatalf("product P series = %v", n)
	}
	online := list(s.Do("GET", "/api/forecast?productMasterId=P&locationId=L2&channel=ONLINE&horizonWeeks=2", k, nil).Must(t, 200), "forecasts")[0].(map[string]any)
	if q := num(list(online, "periods")[0].(map[string]any), "quantity"); q < 24 || q > 36 {
		t.Fatalf("ONLINE forecast %v, want about 30", q)
	}
	asOf := monday(-10).Format("2006-01-02")
	back := list(s.Do("GET", "/api/forecast?productMasterId=Q&locationId=L1&asOf="+asOf+"&horizonWeeks=3", k, nil).Must(t, 200), "forecasts")[0].(map[string]any)
	if list(back, "periods")[0].(map[string]any)["weekStarting"] != asOf {
		t.Fatalf("asOf forecast starts %v", list(back, "periods")[0])
	}
	none := list(s.Do("GET", "/api/forecast?productMasterId=Q&locationId=L2", k, nil).Must(t, 200), "forecasts")[0].(map[string]any)
	if none["model"] != "none" || len(list(none, "periods")) != 13 {
		t.Fatalf("series without history = %v", none)
	}
	for _, q := range []string{"horizonWeeks=105", "horizonWeeks=0", "interval=0.7", "model=magic", "productMasterId=NOPE&locationId=L1",
		"locationId=NOPE", "asOf=yesterday", "limit=1001", "point=mode"} {
		if r := s.Do("GET", "/api/forecast?"+q, k, nil); r.Status != 400 {
			t.Errorf("%s: %d %s", q, r.Status, r.Body)
		}
	}
	if r := s.Do("GET", "/api/forecast?scenarioId=scn_nope", k, nil); r.Status != 404 {
		t.Errorf("unknown scenario: %d", r.Status)
	}
	// The entitlement gates every forecasting endpoint.
	p := s.Key("platform")
	s.Do("PUT", "/api/platform/organizations/"+s.Creds.Organization.ID+"/entitlements", p, map[string]any{"entitlements": []string{}}).Must(t, 200)
	for _, path := range []string{"/api/forecast", "/api/forecast/change-history", "/api/forecast/channel-projection", "/api/forecast/long-term", "/api/forecast/accuracy"} {
		if r := s.Do("GET", path, k, nil); r.Status != 403 || r.Code() != "FEATURE_NOT_ENABLED" {
			t.Errorf("%s without entitlement: %d %s", path, r.Status, r.Body)
		}
	}
}

func TestScenariosGenerateCompareAndHistory(t *testing.T) {
	s := MustStart(t, "")
	seedForecastData(t, s)
	k := s.Key("PLANNER")
	mk := func(body map[string]any) string {
		return str(s.Do("POST", "/api/forecast/scenarios", k, body).Must(t, 201), "scenario", "id")
	}
	base := mk(map[string]any{"name": "Base", "type": "BASELINE"})
	up := mk(map[string]any{"name": "Up", "type": "OPTIMISTIC", "assumptions": map[string]any{"globalLiftPct": 0.1}})
	juice := mk(map[string]any{"name": "Juice push", "assumptions": map[string]any{"categoryAdjustments": []any{map[string]any{"categoryId": "juice", "liftPct": 0.2}}}})
	online := mk(map[string]any{"name": "Online", "assumptions": map[string]any{"channelAdjustments": []any{map[string]any{"channelId": "ONLINE", "liftPct": 1.0}}}})

	qty := func(scenario, product, loc string) float64 {
		f := list(s.Do("GET", "/api/forecast?horizonWeeks=4&productMasterId="+product+"&locationId="+loc+"&scenarioId="+scenario, k, nil).Must(t, 200), "forecasts")[0].(map[string]any)
		return num(list(f, "periods")[1].(map[string]any), "quantity")
	}
	b := qty(base, "Q", "L1")
	if u := qty(up, "Q", "L1"); math.Abs(u/b-1.1) > 0.01 {
		t.Fatalf("global lift: %v vs %v", u, b)
	}
	if j := qty(juice, "Q", "L1"); math.Abs(j-b) > 0.01 {
		t.Fatalf("juice lift moved snacks: %v vs %v", j, b)
	}
	if j, pb := qty(juice, "P", "L2"), qty(base, "P", "L2"); math.Abs(j/pb-1.2) > 0.01 {
		t.Fatalf("category lift on juice: %v vs %v", j, pb)
	}
	// A 100% ONLINE lift on a 30/70 mix lifts the total by about 30%.
	if o, pb := qty(online, "P", "L2"), qty(base, "P", "L2"); o/pb < 1.2 || o/pb > 1.4 {
		t.Fatalf("channel lift: %v vs %v", o, pb)
	}

	gen := s.Do("POST", "/api/forecast/scenarios/"+up+"/generate", k, map[string]any{"horizonWeeks": 8}).Must(t, 200)
	if gen["success"] != true || num(gen, "seriesCount") != 3 || len(list(gen, "weekly")) != 8 || num(gen, "totalQuantity") <= num(gen, "totalBaseline") || gen["previousTotal"] != nil {
		t.Fatalf("generate = %v", gen)
	}
	gen2 := s.Do("POST", "/api/forecast/scenarios/"+up+"/generate", k, map[string]any{"horizonWeeks": 8, "productMasterIds": []string{"Q"}}).Must(t, 200)
	if num(gen2, "seriesCount") != 1 || gen2["previousTotal"] == nil || math.Abs(num(gen2, "delta")-(num(gen2, "totalQuantity")-num(gen, "totalQuantity"))) > 0.02 {
		t.Fatalf("second generate = %v", gen2)
	}
	s.Do("POST", "/api/forecast/scenarios/"+up+"/publish", k, nil).Must(t, 200)
	hist := s.Do("GET", "/api/forecast/change-history?scenarioId="+up, k, nil).Must(t, 200)
	entries := list(hist, "entries")
	if len(entries) != 3 || entries[0].(map[string]any)["changeType"] != "PUBLISH" || entries[2].(map[string]any)["changeType"] != "GENERATE" {
		t.Fatalf("history = %v", hist)
	}
	e1 := entries[1].(map[string]any)
	if e1["actor"] == "" || e1["previousTotal"] == nil || e1["newTotal"] == nil || e1["delta"] == nil || e1["reason"] == "" {
		t.Fatalf("generate entry = %v", e1)
	}
	if pg := hist["pagination"].(map[string]any); num(pg, "total") != 3 || num(pg, "page") != 1 {
		t.Fatalf("pagination = %v", pg)
	}
	// An event that changes a forecast gets its entry (recorded in the background).
	s.Do("POST", "/api/forecast/events", k, map[string]any{"name": "Heatwave", "type": "WEATHER", "value": map[string]any{"liftPct": 0.3},
		"startsAt": monday(1).Format("2006-01-02"), "endsAt": monday(1).AddDate(0, 0, 6).Format("2006-01-02"), "productMasterId": "Q"}).Must(t, 201)
	eventually(t, 20*time.Second, func() error {
		es := list(s.Do("GET", "/api/forecast/change-history?productMasterId=Q", k, nil).Must(t, 200), "entries")
		for _, e := range es {
			m := e.(map[string]any)
			if m["changeType"] == "EVENT_CREATED" {
				if d := num(m, "delta"); d < 10 || d > 14 { // +30% of one week of about 40
					return fmt.Errorf("delta %v", d)
				}
				return nil
			}
		}
		return fmt.Errorf("no EVENT_CREATED entry in %v", es)
	})

	cmp := s.Do("POST", "/api/forecast/scenarios/compare", s.Key("VIEWER"), map[string]any{"scenarioIds": []string{base, up, juice}, "horizonWeeks": 6}).Must(t, 200)
	sc := list(cmp, "scenarios")
	if len(sc) != 3 || num(sc[0].(map[string]any), "deltaVsFirst") != 0 {
		t.Fatalf("compare = %v", cmp)
	}
	second := sc[1].(map[string]any)
	if d := num(second, "deltaPctVsFirst"); math.Abs(d-0.1) > 0.01 || len(list(second, "weeklyDeltaVsFirst")) != 6 {
		t.Fatalf("Up vs Base = %v", second)
	}
	for _, bad := range []map[string]any{{"scenarioIds": []string{base}}, {"scenarioIds": []string{base, "scn_nope"}}, {}} {
		if r := s.Do("POST", "/api/forecast/scenarios/compare", k, bad); r.Status != 400 {
			t.Errorf("compare %v: %d", bad, r.Status)
		}
	}
	if r := s.Do("POST", "/api/forecast/scenarios/"+base+"/generate", s.Key("VIEWER"), nil); r.Status != 403 {
		t.Errorf("viewer generates: %d", r.Status)
	}
	s.Do("DELETE", "/api/forecast/scenarios/"+base, k, nil).Must(t, 200)
	if r := s.Do("POST", "/api/forecast/scenarios/"+base+"/generate", k, nil); r.Status != 409 {
		t.Errorf("generate archived: %d", r.Status)
	}
}

func TestIncludedEventsAndAccuracy(t *testing.T) {
	s := MustStart(t, "")
	seedForecastData(t, s)
	k := s.Key("PLANNER")
	ev := s.Do("POST", "/api/forecast/events", k, map[string]any{"name": "promo", "type": "PROMOTION", "value": map[string]any{"liftPct": 1.0},
		"startsAt": monday(1).Format(time.RFC3339), "endsAt": monday(2).Format(time.RFC3339), "productMasterId": "Q", "locationId": "L1"}).Must(t, 201)
	without := str(s.Do("POST", "/api/forecast/scenarios", k, map[string]any{"name": "no events", "assumptions": map[string]any{"includedEventIds": []string{}}}).Must(t, 201), "scenario", "id")
	with := str(s.Do("POST", "/api/forecast/scenarios", k, map[string]any{"name": "with", "assumptions": map[string]any{"includedEventIds": []string{ev["id"].(string)}}}).Must(t, 201), "scenario", "id")
	week1 := func(sc string) map[string]any {
		f := list(s.Do("GET", "/api/forecast?productMasterId=Q&locationId=L1&horizonWeeks=3&scenarioId="+sc, k, nil).Must(t, 200), "forecasts")[0].(map[string]any)
		return list(f, "periods")[1].(map[string]any)
	}
	w, wo := week1(with), week1(without)
	if math.Abs(num(w, "quantity")/num(w, "baseline")-2) > 0.01 {
		t.Fatalf("included event: %v", w)
	}
	if math.Abs(num(wo, "quantity")-num(wo, "baseline")) > 0.01 || list(wo, "events")[0].(map[string]any)["included"] != false {
		t.Fatalf("excluded event still applied: %v", wo)
	}

	// Accuracy from versions backfilled 8 weeks ago, scored against the actuals that came after.
	for _, sc := range []string{with, without} {
		s.Do("POST", "/api/forecast/scenarios/"+sc+"/generate", k, map[string]any{"asOf": monday(-8).Format("2006-01-02"), "horizonWeeks": 8}).Must(t, 200)
	}
	acc := s.Do("GET", "/api/forecast/accuracy?windowWeeks=13", k, nil).Must(t, 200)
	overall := acc["overall"].(map[string]any)
	if num(overall, "points") != 3*8 || overall["wape"] == nil || num(overall, "wape") > 0.25 || overall["mase"] == nil || num(acc, "versionsUsed") != 1 {
		t.Fatalf("accuracy = %v", acc)
	}
	if len(list(acc, "byProduct")) != 2 || len(list(acc, "byLocation")) != 2 || len(list(acc, "byChannel")) != 1 {
		t.Fatalf("groups = %v", acc)
	}
	if q := s.Do("GET", "/api/forecast/accuracy?productMasterId=Q", k, nil).Must(t, 200); num(q["overall"].(map[string]any), "points") != 8 {
		t.Fatalf("accuracy of Q = %v", q)
	}
	if r := s.Do("GET", "/api/forecast/accuracy?windowWeeks=0", k, nil); r.Status != 400 {
		t.Fatalf("window 0: %d", r.Status)
	}
}

func TestChannelProjectionAndLongTerm(t *testing.T) {
	s := MustStart(t, "")
	seedForecastData(t, s)
	k := s.Key("VIEWER")
	cp := s.Do("GET", "/api/forecast/channel-projection?productMasterId=P&locationId=L2&horizonWeeks=6", k, nil).Must(t, 200)
	chans := list(cp, "channels")
	total := list(cp, "total")
	if len(chans) != 2 || len(total) != 6 {
		t.Fatalf("projection = %v", cp)
	}
	for w := 0; w < 6; w++ {
		var share, q float64
		for _, c := range chans {
			pw := list(c.(map[string]any), "periods")[w].(map[string]any)
			share += num(pw, "share")
			q += num(pw, "quantity")
		}
		if math.Abs(share-1) > 0.001 || math.Abs(q-num(total[w].(map[string]any), "quantity")) > 0.05 {
			t.Fatalf("week %d: shares %.4f, channels %.2f vs total %v", w, share, q, total[w])
		}
	}
	online := chans[0].(map[string]any)
	if online["channel"] != "ONLINE" || num(list(online, "periods")[0].(map[string]any), "share") < 0.25 || num(list(online, "periods")[0].(map[string]any), "share") > 0.35 {
		t.Fatalf("ONLINE share = %v", online)
	}
	if tenant := s.Do("GET", "/api/forecast/channel-projection", k, nil).Must(t, 200); len(list(tenant, "channels")) != 3 { // ALL, ONLINE, STORE
		t.Fatalf("tenant-wide projection channels = %v", list(tenant, "channels"))
	}

	lt := s.Do("GET", "/api/forecast/long-term?productMasterId=Q&locationId=L1", k, nil).Must(t, 200)
	buckets := list(lt, "buckets")
	if num(lt, "horizonMonths") != 18 || lt["granularity"] != "MONTH" || len(buckets) != 18 {
		t.Fatalf("long-term = %d buckets %v", len(buckets), lt)
	}
	rel := func(b any) float64 {
		m := b.(map[string]any)
		return (num(m, "upper") - num(m, "lower")) / num(m, "quantity")
	}
	if !(rel(buckets[1]) < rel(buckets[17])) {
		t.Fatalf("relative interval width does not grow: month 2 %.3f, month 18 %.3f", rel(buckets[1]), rel(buckets[17]))
	}
	if m := num(buckets[3].(map[string]any), "quantity"); m < 140 || m > 220 { // about 40 a week
		t.Fatalf("a month of Q = %v", m)
	}
	q := s.Do("GET", "/api/forecast/long-term?granularity=QUARTER&horizonMonths=12", k, nil).Must(t, 200)
	if n := len(list(q, "buckets")); n < 4 || n > 5 {
		t.Fatalf("quarters = %d", n)
	}
	for _, bad := range []string{"horizonMonths=37", "granularity=YEAR", "interval=0.3"} {
		if r := s.Do("GET", "/api/forecast/long-term?"+bad, k, nil); r.Status != 400 {
			t.Errorf("%s: %d", bad, r.Status)
		}
	}
}

func TestRecommendationsUseForecastDemand(t *testing.T) {
	s := MustStart(t, "")
	seedForecastData(t, s)
	// P sells about 100 a week at L1, which holds 50: it runs out in about half a week. L2 holds
	// 900 against about 100 a week over 8 weeks plus nothing reserved: it can spare about 100.
	gen := s.Do("POST", "/api/transfers/recommendations", s.Key("PLANNER"), map[string]any{"productMasterId": "P"}).Must(t, 200)
	recs := list(gen, "recommendations")
	if len(recs) != 1 {
		t.Fatalf("recommendations = %v", gen)
	}
	r := recs[0].(map[string]any)
	if r["sourceLocationId"] != "L2" || r["destLocationId"] != "L1" || r["priority"] != "URGENT" || r["estimatedROI"] == nil || num(r, "estimatedROI") <= 0 {
		t.Fatalf("recommendation = %v", r)
	}
	if q := num(r, "quantity"); q < 50 || q > 110 {
		t.Fatalf("quantity %v", q)
	}
	e := r["explanation"].(map[string]any)
	if f := num(e["destination"].(map[string]any), "forecastOverWindow"); f < 700 || f > 1000 {
		t.Fatalf("destination forecast over 8 weeks = %v", f)
	}
}
