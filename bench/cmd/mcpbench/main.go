// Command mcpbench measures the MCP registry and the hosted tool service over HTTP under
// concurrent load next to a bare fasthttp handler returning the same bytes, and prints a Markdown
// table (see bench/mcpbench).
//
//	go run ./bench/cmd/mcpbench -duration 5s -concurrency 32
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/supplyplan/supplyplan/bench/mcpbench"
)

func main() {
	var opt mcpbench.Options
	flag.DurationVar(&opt.Duration, "duration", 5*time.Second, "measurement time per scenario and per baseline")
	flag.IntVar(&opt.Concurrency, "concurrency", 32, "concurrent connections")
	flag.IntVar(&opt.Merchants, "merchants", 50, "listed merchants in the registry")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run (client and servers) to this file")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mcpbench:", err)
			os.Exit(1)
		}
		_ = pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := mcpbench.Run(ctx, opt)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpbench:", err)
		return
	}
	fmt.Printf("MCP surfaces vs bare fasthttp (GOMAXPROCS=%d, %s)\n\n", runtime.GOMAXPROCS(0), runtime.Version())
	mcpbench.Markdown(os.Stdout, res, opt)
}
