package main

import (
	"strings"
	"testing"
)

// TestMachineSpeed: the api section's CPU line gives every round's figures and says the machine's
// speed moved only when the bare handler's CPU per request spread by more than 15 %.
func TestMachineSpeed(t *testing.T) {
	quiet := machineSpeed([]float64{9.8, 9.9, 10.0}, []float64{42.7, 37.2, 43.4}, []float64{17.4, 14.7, 15.1})
	if !strings.Contains(quiet, "42.7 / 37.2 / 43.4") || !strings.Contains(quiet, "9.8 / 9.9 / 10.0") || strings.Contains(quiet, "moved") {
		t.Errorf("quiet machine: %q", quiet)
	}
	busy := machineSpeed([]float64{13.9, 9.9, 13.3}, []float64{48.3, 42.1, 50.3}, []float64{19.9, 16.8, 18.2})
	if !strings.Contains(busy, "moved by 40 %") {
		t.Errorf("busy machine: %q", busy)
	}
	if machineSpeed(nil, nil, nil) != "" || machineSpeed([]float64{0, 1}, []float64{1, 1}, []float64{1, 1}) != "" {
		t.Error("a line without figures")
	}
}
