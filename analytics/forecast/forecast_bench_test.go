package forecast

import (
	"math"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// syntheticJobs builds n weekly series of weeks length: level, trend, yearly season and noise
// in varying mixes, some intermittent, a few with missing weeks.
func syntheticJobs(n, weeks int, seed uint64) []Job {
	rng := rand.New(rand.NewPCG(seed, 1))
	start := time.Date(2023, 1, 2, 0, 0, 0, 0, time.UTC)
	jobs := make([]Job, n)
	for i := range jobs {
		v := make([]float64, weeks)
		level := 20 + rng.Float64()*200
		trend := (rng.Float64() - 0.5) * level / 150
		season := rng.Float64() * 0.4 * level
		noise := 0.05 + rng.Float64()*0.25
		intermittent := i%7 == 0
		for t := range v {
			x := level + trend*float64(t) + season*math.Sin(2*math.Pi*float64(t)/52)
			x *= 1 + noise*rng.NormFloat64()
			if intermittent {
				x = 0
				if rng.Float64() < 0.3 {
					x = float64(1 + rng.IntN(6))
				}
			}
			v[t] = math.Max(0, math.Round(x))
			if i%11 == 0 && rng.Float64() < 0.03 {
				v[t] = math.NaN()
			}
		}
		jobs[i] = Job{Series: Series{Start: start, Values: v}}
	}
	return jobs
}

// cpuTime is the CPU time (user + system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAuto10k forecasts 10,000 series of 156 weeks, 13 weeks ahead with automatic selection,
// on GOMAXPROCS workers, and reports series per second of wall time and the CPU time per
// series (which other processes on the machine do not inflate).
func BenchmarkAuto10k(b *testing.B) {
	jobs := syntheticJobs(10000, 156, 1)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	defer func() {
		b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Millisecond)/float64(len(jobs)*b.N), "cpu-ms/series")
	}()
	for b.Loop() {
		_, errs := ForecastBatch(jobs, nil, Options{Horizon: 13})
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(len(jobs)*b.N)/b.Elapsed().Seconds(), "series/s")
	b.ReportMetric(float64(runtime.GOMAXPROCS(0)), "workers")
}

// BenchmarkForecastOne is the latency of one forecast (156 weeks, auto, 13 weeks ahead).
func BenchmarkForecastOne(b *testing.B) {
	jobs := syntheticJobs(64, 156, 2)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := Forecast(jobs[i%len(jobs)].Series, nil, nil, Options{Horizon: 13}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
