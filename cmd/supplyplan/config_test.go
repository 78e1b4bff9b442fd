package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

func TestEnvironmentSettings(t *testing.T) {
	t.Setenv("SUPPLYPLAN_ALERT_SIGNAL_DEBOUNCE", "250ms")
	t.Setenv("SUPPLYPLAN_IMPORT_WORKERS", "3")
	cfg := DefaultConfig()
	if err := cfg.EnvError(); err != nil {
		t.Fatal(err)
	}
	if cfg.AlertSignalDebounce != 250*time.Millisecond || cfg.ImportWorkers != 3 {
		t.Fatalf("debounce %v, workers %d", cfg.AlertSignalDebounce, cfg.ImportWorkers)
	}
}

func TestUnparsableEnvironmentStopsStartup(t *testing.T) {
	t.Setenv("SUPPLYPLAN_BODY_LIMIT", "1MB")
	t.Setenv("SUPPLYPLAN_DATA_DIR", t.TempDir())
	err := run([]string{"serve"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "SUPPLYPLAN_BODY_LIMIT") {
		t.Fatalf("err = %v, want one naming SUPPLYPLAN_BODY_LIMIT", err)
	}
}
