package supplyplan

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// benchCatalog returns a catalog whose loop acme/bench has 1,000 releases (0.0.0 to 9.9.9), every
// seventh one deprecated and every eleventh one yanked.
func benchCatalog(b *testing.B) *catalogFixture {
	b.Helper()
	f := newCatalogFixture(b, "acme")
	tmpl := string(loopManifest(b, "acme/bench", "VERSION", nil))
	i := 0
	for major := range 10 {
		for minor := range 10 {
			for patch := range 10 {
				v := fmt.Sprintf("%d.%d.%d", major, minor, patch)
				if _, err := f.publishBytes("acme/bench", v, []byte(strings.Replace(tmpl, "VERSION", v, 1))); err != nil {
					b.Fatal(err)
				}
				switch {
				case i%11 == 0:
					_, recs, err := f.s.Yank("acme/bench", v, "bench", "a", f.now)
					if err != nil {
						b.Fatal(err)
					}
					f.apply(recs)
				case i%7 == 0:
					_, recs, err := f.s.Deprecate("acme/bench", v, "bench", "a", f.now)
					if err != nil {
						b.Fatal(err)
					}
					f.apply(recs)
				}
				i++
			}
		}
	}
	return f
}

// reportLatency adds p50 and p99 of the per-operation durations as metrics.
func reportLatency(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(d[len(d)*99/100].Nanoseconds()), "p99-ns")
}

// BenchmarkLoopResolve measures resolve over a loop of 1,000 versions; "parse-range" is the
// range parsing alone, the floor of every range resolution.
func BenchmarkLoopResolve(b *testing.B) {
	f := benchCatalog(b)
	cases := []struct{ name, spec string }{
		{"caret", "^5.3"},
		{"tilde", "~9.9.0"},
		{"or-hyphen", "1.2.3 - 1.4 || >=8.1.0 <8.2.0-0"},
		{"star", "*"},
		{"tag", "latest"},
		{"no-match", "^12"},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			d := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				_, err := f.s.Resolve("acme/bench", c.spec, false)
				d = append(d, time.Since(start))
				if err != nil && c.name != "no-match" {
					b.Fatal(err)
				}
			}
			reportLatency(b, d)
		})
	}
	b.Run("parse-range", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ParseSemVerRange("^5.3", false); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkLoopPublish measures publishing a new version (canonicalize, validate, compatibility
// check against the previous release, sign, apply) of a loop that already has 1,000.
func BenchmarkLoopPublish(b *testing.B) {
	f := benchCatalog(b)
	tmpl := string(loopManifest(b, "acme/bench", "VERSION", nil))
	n := 0
	bodies := func() (string, []byte) {
		v := fmt.Sprintf("10.0.%d", n)
		n++
		return v, []byte(strings.Replace(tmpl, "VERSION", v, 1))
	}
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		v, body := bodies()
		_, recs, err := f.s.Publish(LoopPublishRequest{Name: "acme/bench", Version: v, Manifest: body, Publisher: "p"}, f.signer, f.now)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range recs {
			if err := f.s.Apply(r); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "publishes/s")
}
