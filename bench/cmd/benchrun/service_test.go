package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServiceThatDoesNotStart: a service that exits before it listens is reported by
// startServiceOn's error, not among the section's deaths, so that a caller may start another
// (the distributed section does when a node's port was taken meanwhile).
func TestServiceThatDoesNotStart(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "supplyplan")
	script := "#!/bin/sh\necho 'supplyplan: listen api on 127.0.0.1:1: bind: address already in use' >&2\nexit 2\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	e := &env{bin: bin, tmp: dir}
	s, err := startServiceOn(e, dir)
	if err == nil || s != nil {
		t.Fatalf("started: %v, %v", s, err)
	}
	if !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("the error does not give the service's last lines: %v", err)
	}
	if len(e.started) != 0 {
		t.Errorf("%d services left in the section", len(e.started))
	}
	if d, _ := e.deaths(); d != "" {
		t.Errorf("reported among the section's deaths: %s", d)
	}
}
