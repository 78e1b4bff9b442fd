package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/testdeps"
)

// copyDir copies a stopped service's data dir (the second node gets the same tenants).
func copyDir(tb testing.TB, src, dst string) {
	tb.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o700)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, info.Mode())
		if err != nil {
			return err
		}
		defer out.Close()
		_, err = io.Copy(out, in)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// TestRedisCooldownAcrossTwoInstances: two service instances holding the same tenant and sharing
// a real Redis evaluate the same stockout at the same time; the chat receiver gets one alert. A
// manual trigger on one instance puts the other in cooldown.
func TestRedisCooldownAcrossTwoInstances(t *testing.T) {
	addr := testdeps.Redis(t)
	chat := startReceiver(t)
	dirA, dirB := t.TempDir(), t.TempDir()
	prefix := "sptest:" + supplyplan.NewID("two") + ":"
	redis := func(c *Config) { c.RedisAddr, c.RedisPrefix = addr, prefix }

	seed := MustStart(t, dirA, outboundTestConfig(""), func(c *Config) { c.RedisAddr, c.RedisPrefix = addr, prefix+"seed:" })
	seed.Do("PUT", "/api/admin/alerts/config", seed.Key("ADMIN"), alertConfigBody(60,
		map[string]any{"type": "CHAT", "value": chat.URL})).Must(t, 200)
	seed.SeedCatalog([]string{"TENT"}, []string{"WH1"})
	seed.Import("demand-history", map[string]any{"records": demandWeeks("TENT", "WH1", 8, 20)})
	seed.Import("inventory", map[string]any{"levels": []map[string]any{{"skuId": "TENT", "locationId": "WH1", "quantityOnHand": 0}}})
	eventually(t, 20*time.Second, func() error {
		if len(chat.OK()) != 1 {
			return fmt.Errorf("%d chat messages while seeding", len(chat.OK()))
		}
		return nil
	})
	seed.Stop()
	copyDir(t, dirA, dirB)
	before := len(chat.OK())

	a := MustStart(t, dirA, outboundTestConfig(""), redis)
	b := MustStart(t, dirB, outboundTestConfig(""), redis)
	if a.Creds.Organization.ID != b.Creds.Organization.ID {
		t.Fatal("the copied node holds another tenant")
	}
	var wg sync.WaitGroup
	fired := make([]float64, 2)
	for i, s := range []*testServer{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				r := s.Do("POST", "/api/admin/alerts/evaluate", s.Key("ADMIN"), nil).Must(t, 200)
				fired[i] += r["evaluation"].(map[string]any)["fired"].(float64)
			}
		}()
	}
	wg.Wait()
	if fired[0]+fired[1] != 1 {
		t.Fatalf("fired on the two nodes: %v, want exactly one in total", fired)
	}
	eventually(t, 10*time.Second, func() error {
		if n := len(chat.OK()) - before; n != 1 {
			return fmt.Errorf("%d new chat messages", n)
		}
		return nil
	})
	time.Sleep(200 * time.Millisecond)
	if n := len(chat.OK()) - before; n != 1 {
		t.Fatalf("%d alerts delivered by two nodes, want 1", n)
	}

	body := map[string]any{"type": "expiry", "severity": "LOW", "message": "check lots", "productMasterId": "TENT", "locationId": "WH1"}
	a.Do("POST", "/api/admin/alerts/trigger", a.Key("ADMIN"), body).Must(t, 201)
	if r := b.Do("POST", "/api/admin/alerts/trigger", b.Key("ADMIN"), body); r.Status != 429 {
		t.Fatalf("trigger on the second node within the cooldown: %d %s", r.Status, r.Body)
	}
}
