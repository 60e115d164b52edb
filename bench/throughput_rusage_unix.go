//go:build unix

package bench

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// usage is a process's CPU time and peak resident memory.
type usage struct {
	CPU    time.Duration // user + system
	MaxRSS int64         // bytes; the peak over the process's life
}

// selfUsage reads this process's usage with getrusage(2). It reports what
// the kernel charged the whole process, so the embedded NATS server, the
// coordinator, the workers and the garbage collector are all included.
func selfUsage() usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return usage{}
	}
	rss := int64(ru.Maxrss)
	if runtime.GOOS != "darwin" {
		rss *= 1024 // Linux and the BSDs report KiB, macOS bytes
	}
	return usage{CPU: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), MaxRSS: rss}
}

// procCPU reads the CPU time of another process from /proc (Linux only),
// to charge the page server's share separately; ok is false elsewhere.
func procCPU(pid int) (cpu time.Duration, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// Fields after the command name (which may hold spaces) start at ")".
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, false
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	const clkTck = 100 // USER_HZ on every Linux architecture Go supports
	return time.Duration(ut+st) * time.Second / clkTck, true
}
