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

// procUsage is a process's CPU time and peak resident memory.
type procUsage struct {
	CPU    time.Duration // user + system
	MaxRSS int64         // bytes; the peak over the process's life
}

// selfUsage reads this process's usage with getrusage(2). It reports what
// the kernel charged the whole process, so the embedded NATS server, the
// coordinator, the workers and the garbage collector are all included.
func selfUsage() procUsage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return procUsage{}
	}
	rss, ok := vmHWM()
	if !ok {
		rss = int64(ru.Maxrss)
		if runtime.GOOS != "darwin" {
			rss *= 1024 // Linux and the BSDs report KiB, macOS bytes
		}
	}
	return procUsage{CPU: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), MaxRSS: rss}
}

// vmHWM is the peak RSS of this process's own address space (Linux). It is
// preferred to getrusage's ru_maxrss, which Linux carries across execve: a
// process started by a large parent (go test, a shell script from a big
// process) would report the parent's peak.
func vmHWM() (int64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, false
			}
			return kb * 1024, true
		}
	}
	return 0, false
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
