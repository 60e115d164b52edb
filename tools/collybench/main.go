// Command collybench is the Colly side of `freshcrawl bench throughput`: it
// fetches and parses the same local pages as the freshcrawl pipeline, at
// the same concurrency, and prints its rate, CPU time and memory as JSON.
//
// It lives in a module of its own so that Colly never becomes a dependency
// of the freshcrawl binary. Each visit does the work a scraper would do to
// compare with freshcrawl's extraction: Colly's goquery-based OnHTML on
// <body>, dropping script, style and the like, collecting the visible text
// with whitespace collapsed, and hashing it (SHA-256). Nothing is stored.
//
//	collybench -urls pages.txt -concurrency 32 -warmup 5s -duration 20s
package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/gocolly/colly/v2"
)

// stats is the JSON the benchmark reads; the field names match
// bench.RunStats in the freshcrawl module.
type stats struct {
	Name          string  `json:"name"`
	Fetches       int64   `json:"fetches"`
	Errors        int64   `json:"errors"`
	Seconds       float64 `json:"seconds"`
	PerSecond     float64 `json:"fetches_per_s"`
	CPUSeconds    float64 `json:"cpu_s"`
	CPUPerFetchMS float64 `json:"cpu_ms_per_fetch"`
	MaxRSSBytes   int64   `json:"max_rss_bytes"`
	PeakHeapBytes uint64  `json:"peak_heap_bytes"`
	Concurrency   int     `json:"concurrency"`
	TextBytes     int64   `json:"text_bytes"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "collybench:", err)
		os.Exit(1)
	}
}

func run() error {
	urlsFile := flag.String("urls", "", "file with one URL a line (required)")
	concurrency := flag.Int("concurrency", 32, "requests in flight at once")
	warmup := flag.Duration("warmup", 5*time.Second, "time before measuring")
	duration := flag.Duration("duration", 20*time.Second, "measurement window")
	flag.Parse()
	if *urlsFile == "" || *concurrency <= 0 {
		return errors.New("want -urls FILE and -concurrency > 0")
	}
	urls, err := readLines(*urlsFile)
	if err != nil {
		return err
	}
	if len(urls) == 0 {
		return fmt.Errorf("%s: no URLs", *urlsFile)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	c := colly.NewCollector(
		colly.AllowURLRevisit(), // the benchmark revisits the same pages
		colly.IgnoreRobotsTxt(),
		colly.MaxBodySize(4<<20), // as freshcrawl's max-body
		colly.UserAgent("collybench/1.0"),
	)
	// The same connection pooling as freshcrawl's fetcher, so neither wins
	// on connection reuse alone.
	c.WithTransport(&http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	})
	c.SetRequestTimeout(10 * time.Second)

	var fetches, errs, textBytes atomic.Int64
	c.OnHTML("body", func(e *colly.HTMLElement) {
		e.DOM.Find("script, style, noscript, template, svg").Remove()
		text := collapse(e.DOM)
		_ = sha256.Sum256([]byte(text)) // identify the version, as freshcrawl does
		textBytes.Add(int64(len(text)))
	})
	c.OnScraped(func(*colly.Response) { fetches.Add(1) })
	c.OnError(func(*colly.Response, error) { errs.Add(1) })

	// Each goroutine visits synchronously, so exactly -concurrency requests
	// are in flight, walking the list round-robin like a revisit crawl.
	var next atomic.Int64
	var wg sync.WaitGroup
	for range *concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				_ = c.Visit(urls[int(i%int64(len(urls)))]) // failures count in OnError
			}
		}()
	}
	finish := func(err error) error {
		stop()
		wg.Wait()
		return err
	}
	if !sleepCtx(ctx, *warmup) {
		return finish(ctx.Err())
	}
	var peak atomic.Uint64
	sampleStop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			select {
			case <-sampleStop:
				return
			case <-t.C:
			}
		}
	}()
	f0, e0, cpu0, t0 := fetches.Load(), errs.Load(), cpuTime(), time.Now()
	ok := sleepCtx(ctx, *duration)
	f1, e1, cpu1, t1 := fetches.Load(), errs.Load(), cpuTime(), time.Now()
	close(sampleStop)
	<-sampled
	if err := finish(nil); err != nil || !ok {
		return errors.New("interrupted")
	}
	st := stats{Name: "colly", Fetches: f1 - f0, Errors: e1 - e0, Seconds: t1.Sub(t0).Seconds(), CPUSeconds: (cpu1 - cpu0).Seconds(),
		MaxRSSBytes: maxRSS(), PeakHeapBytes: peak.Load(), Concurrency: *concurrency, TextBytes: textBytes.Load()}
	st.PerSecond = float64(st.Fetches) / st.Seconds
	if st.Fetches > 0 {
		st.CPUPerFetchMS = st.CPUSeconds * 1000 / float64(st.Fetches)
	}
	return json.NewEncoder(os.Stdout).Encode(st)
}

// collapse is the visible text of sel with runs of white space collapsed,
// as freshcrawl's extractor normalises it.
func collapse(sel *goquery.Selection) string {
	return strings.Join(strings.Fields(sel.Text()), " ")
}

func readLines(name string) ([]string, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return out, nil
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// maxRSS is the process's peak resident set in bytes. On Linux it is
// VmHWM: ru_maxrss is carried across execve, so a child of a large
// process (the benchmark) would report its parent's peak.
func maxRSS() int64 {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				var kb int64
				if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb); err == nil {
					return kb * 1024
				}
			}
		}
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss)
	}
	return int64(ru.Maxrss) * 1024
}
