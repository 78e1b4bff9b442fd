package main

import (
	"fmt"
	"os"
	"runtime"
)

// maxExtraProcs bounds --extra-procs.
const maxExtraProcs = 8

// extraProcs gives the scheduler n more Ps than the runtime chose (the CPUs, or the container's
// CPU limit) and returns a function that gives the runtime's number back; with n = 0, or when the
// operator set GOMAXPROCS, it changes nothing.
//
// Why: a durable write waits for its journal's fdatasync, and the goroutine that issues it keeps
// its P while the thread sleeps in the kernel (a Go syscall). The runtime's monitor takes the P
// back only on its second look at the same syscall, 20 µs to a few ms apart (its sleeps grow while
// it finds nothing to take, and a thread's timer slack adds to each), so for a good part of every
// fdatasync (130-400 µs here, back to back under load) one of two CPUs ran no Go code. A spare P
// lets the other goroutines use both CPUs meanwhile. When no thread is blocked, three threads
// share two CPUs: the api section measured no loss in CPU-bound work (docs/decisions.md).
//
// Setting GOMAXPROCS turns off the runtime's own updates of it when a container's CPU limit
// changes; a restart takes a new limit into account.
func extraProcs(n int) (restore func(), err error) {
	if n < 0 || n > maxExtraProcs {
		return nil, fmt.Errorf("--extra-procs %d: want 0 to %d", n, maxExtraProcs)
	}
	if n == 0 || os.Getenv("GOMAXPROCS") != "" {
		return func() {}, nil
	}
	prev := runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(prev + n)
	return func() { runtime.GOMAXPROCS(prev) }, nil
}
