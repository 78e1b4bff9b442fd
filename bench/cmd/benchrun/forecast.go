package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

// benchForecast: forecasts of 10,000 series with 156 weeks of history each (auto selection, 13-week
// horizon) through GET /api/forecast, and single-series GET latency in a tenant of 50,000 series.
func benchForecast(_ context.Context, e *env) (section, error) {
	const products, locations, weeks = 5000, 10, 156
	const series = products * locations
	svc, err := startService(e)
	if err != nil {
		return section{}, err
	}
	defer svc.Stop()
	creds, err := readCreds(svc.Data)
	if err != nil {
		return section{}, err
	}
	key := creds.Keys["import"]
	if err := disableAlerts(svc, creds); err != nil {
		return section{}, err
	}
	if _, err := importAll(svc, key, "catalog", chunked("products", products, products, func(i int, b *bytes.Buffer) {
		fmt.Fprintf(b, `{"externalId":"F%05d"}`, i)
	})); err != nil {
		return section{}, err
	}
	if _, err := importAll(svc, key, "inventory", chunked("levels", locations, locations, func(i int, b *bytes.Buffer) {
		fmt.Fprintf(b, `{"skuId":"F00000","locationId":"L%02d"}`, i)
	})); err != nil {
		return section{}, err
	}
	// Synthetic weekly demand: level, trend, yearly seasonality of varying strength, noise, and
	// some intermittent series. History ends last week.
	end := time.Now().UTC().Truncate(24 * time.Hour)
	end = end.AddDate(0, 0, -((int(end.Weekday())+6)%7)-7)
	first := end.AddDate(0, 0, -7*(weeks-1))
	setup := time.Now()
	if _, err := importAll(svc, key, "demand-history", chunked("records", series*weeks, 50000, func(i int, b *bytes.Buffer) {
		s, w := i/weeks, i%weeks
		level := 20 + float64(s%97)
		v := level * (1 + 0.002*float64(w*(s%5-2))) * (1 + float64(s%4)*0.1*math.Sin(2*math.Pi*float64(w)/52))
		v += gauss(uint64(i)) * level * 0.15
		if s%10 == 0 && uniform(uint64(i)*7+3) < 0.66 {
			v = 0
		}
		fmt.Fprintf(b, `{"skuId":"F%05d","locationId":"L%02d","weekStarting":"%s","actualDemand":%d}`, s%products, s/products,
			first.AddDate(0, 0, 7*w).Format("2006-01-02"), int(math.Max(0, math.Round(v))))
	})); err != nil {
		return section{}, err
	}
	setupTook := time.Since(setup)
	auth := map[string]string{"Authorization": "Bearer " + creds.Keys["VIEWER"]}
	// Throughput: 10 pages of 1,000 series (cold: nothing cached).
	profile("forecast-batch")
	start := time.Now()
	for page := 0; page < 10; page++ {
		st, body, err := call("GET", fmt.Sprintf("%s/api/forecast?limit=1000&offset=%d", svc.URL, page*1000), auth, nil)
		if err != nil || st != 200 {
			return section{}, fmt.Errorf("forecast page: %d %s %v", st, truncate(body), err)
		}
	}
	batch := time.Since(start)
	// Latency: single series, each asked for the first time, two clients.
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	var firstErr error
	profile("forecast-single")
	for c := 0; c < 2; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				s := 20000 + c*1000 + i
				url := fmt.Sprintf("%s/api/forecast?productMasterId=F%05d&locationId=L%02d", svc.URL, s%products, s/products)
				t0 := time.Now()
				st, body, err := call("GET", url, auth, nil)
				d := time.Since(t0)
				mu.Lock()
				if (err != nil || st != 200) && firstErr == nil {
					firstErr = fmt.Errorf("single forecast: %d %s %v", st, truncate(body), err)
				}
				lat = append(lat, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return section{}, firstErr
	}
	slices.Sort(lat)
	p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
	rate := 10000 / batch.Seconds()
	var b strings.Builder
	fmt.Fprintf(&b, "A tenant of %d series (%d products x %d locations) with %d weeks of history each (level, trend, seasonality of varying strength, noise; one in ten intermittent), imported through the API in %.1f s. Alerts are disabled for the tenant, so that their evaluation (which forecasts every series after an import) does not share the cores with the measurement.\n\n", series, products, locations, weeks, setupTook.Seconds())
	b.WriteString("| measure | result |\n|---|---|\n")
	fmt.Fprintf(&b, "| `GET /api/forecast?limit=1000` x 10 pages: 10,000 series, auto selection with rolling-origin backtests, 13 weeks, nothing cached | %.2f s, **%.0f series/s** |\n", batch.Seconds(), rate)
	fmt.Fprintf(&b, "| single-series `GET /api/forecast?productMasterId&locationId`, 2,000 series asked for the first time, 2 clients | p50 %s, **p99 %s** |\n\n", fmtDur(p50), fmtDur(p99))
	// Issue 12 raised the targets from 2,000 series/s and 20 ms.
	fmt.Fprintf(&b, "- %.0f series/s (target at least 5,000): **%s**\n", rate, verdict(rate >= 5000))
	fmt.Fprintf(&b, "- single-series p99 %s (target under 5 ms): **%s**\n", fmtDur(p99), verdict(p99 < 5*time.Millisecond))
	return section{Title: "Forecast engine: speed", Command: "go run ./bench/cmd/benchrun -only forecast", Body: b.String()}, nil
}

// forecastPage decodes the series of GET /api/forecast.
type forecastPage struct {
	Forecasts []struct {
		ProductMasterID string `json:"productMasterId"`
		LocationID      string `json:"locationId"`
		Periods         []struct {
			WeekStarting string  `json:"weekStarting"`
			Quantity     float64 `json:"quantity"`
		} `json:"periods"`
	} `json:"forecasts"`
	Total int `json:"total"`
}

func decodePage(b []byte) (forecastPage, error) {
	var p forecastPage
	err := json.Unmarshal(b, &p)
	return p, err
}

// uniform is a deterministic uniform number in [0, 1) from x (splitmix64).
func uniform(x uint64) float64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / (1 << 53)
}

// gauss is a deterministic standard normal number from x (Box-Muller).
func gauss(x uint64) float64 {
	u1, u2 := uniform(2*x), uniform(2*x+1)
	return math.Sqrt(-2*math.Log(u1+1e-300)) * math.Cos(2*math.Pi*u2)
}
