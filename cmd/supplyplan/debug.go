package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof on the default mux, served only on the operations listener
	"runtime"
	"runtime/debug"
	"time"

	"github.com/supplyplan/supplyplan/internal/telemetry"
)

// startOps serves the operations listener on addr (--ops-addr, or its older name --debug-addr):
// Prometheus metrics at /metrics, Go's pprof handlers and /debug/memory. It is an operator-only
// port without authentication: never expose it.
func startOps(addr string, m *telemetry.Metrics) (io.Closer, string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("listen ops: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/debug/pprof/", http.DefaultServeMux)
	mux.HandleFunc("/debug/memory", memoryHandler)
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		m.WritePrometheus(w)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return srv, ln.Addr().String(), nil
}

// memoryReport is the answer of /debug/memory: the Go runtime's figures after a collection.
type memoryReport struct {
	HeapAlloc    uint64 `json:"heapAlloc"`    // bytes of live objects
	HeapInuse    uint64 `json:"heapInuse"`    // bytes of spans holding objects
	HeapIdle     uint64 `json:"heapIdle"`     // bytes of free spans
	HeapReleased uint64 `json:"heapReleased"` // bytes of free spans returned to the OS
	StackInuse   uint64 `json:"stackInuse"`
	Sys          uint64 `json:"sys"` // everything the runtime obtained from the OS
	NumGC        uint32 `json:"numGC"`
	Released     bool   `json:"released"`
}

// memoryHandler runs a garbage collection, with ?release=1 hands every free page back to the OS
// (debug.FreeOSMemory), and answers the runtime's memory figures.
func memoryHandler(w http.ResponseWriter, r *http.Request) {
	rep := memoryReport{Released: r.URL.Query().Get("release") == "1"}
	if rep.Released {
		debug.FreeOSMemory()
	} else {
		runtime.GC()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rep.HeapAlloc, rep.HeapInuse, rep.HeapIdle, rep.HeapReleased = ms.HeapAlloc, ms.HeapInuse, ms.HeapIdle, ms.HeapReleased
	rep.StackInuse, rep.Sys, rep.NumGC = ms.StackInuse, ms.Sys, ms.NumGC
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(rep)
}
