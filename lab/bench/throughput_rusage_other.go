//go:build !unix

package bench

import "time"

// procUsage is a process's CPU time and peak resident memory.
type procUsage struct {
	CPU    time.Duration
	MaxRSS int64
}

// selfUsage is not measured on this platform: the figures read zero.
func selfUsage() procUsage { return procUsage{} }

// procCPU is not available on this platform.
func procCPU(int) (time.Duration, bool) { return 0, false }
