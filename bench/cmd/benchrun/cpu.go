package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cpuSeconds is the user+system CPU time a process has used so far (0 when unreadable).
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which may hold spaces) start past the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ is 100 on Linux
}

// pidsNamed lists the processes whose command line contains name.
func pidsNamed(name string) []int {
	var out []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/cmdline")
		if err != nil || !bytes.Contains(b, []byte(name)) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// cpuMeter reports the CPU time the service under test, the harness and a ClickHouse server (when
// one runs on this machine) used over a phase, on stderr: where a phase's time went. On a shared
// machine these are steadier than wall times.
type cpuMeter struct {
	name   string
	start  time.Time
	pids   []int
	labels []string
	base   []float64
}

func meterCPU(name string, svc *service) *cpuMeter {
	m := &cpuMeter{name: name, start: time.Now()}
	add := func(pid int, label string) {
		m.pids, m.labels, m.base = append(m.pids, pid), append(m.labels, label), append(m.base, cpuSeconds(pid))
	}
	if svc != nil {
		add(svc.cmd.Process.Pid, "service")
	}
	add(os.Getpid(), "harness")
	for _, pid := range pidsNamed("clickhouse-server") {
		add(pid, "clickhouse")
	}
	return m
}

// done prints the phase's wall time and each process's CPU seconds over it.
func (m *cpuMeter) done() {
	parts := make([]string, len(m.pids))
	for i, p := range m.pids {
		parts[i] = fmt.Sprintf("%s %.2fs", m.labels[i], cpuSeconds(p)-m.base[i])
	}
	fmt.Fprintf(os.Stderr, "cpu %s: wall %.2fs, %s\n", m.name, time.Since(m.start).Seconds(), strings.Join(parts, ", "))
}

// loadAverage is the machine's 1, 5 and 15 minute load averages ("?" when unreadable).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}
