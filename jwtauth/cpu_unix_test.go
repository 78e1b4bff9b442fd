//go:build unix

package jwtauth

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system, every thread) the test process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
