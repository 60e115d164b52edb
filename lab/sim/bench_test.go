package sim

import (
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkPageHandler measures the page handler alone (no network): version
// lookup, render cache, conditional headers and logging, under parallel load.
func BenchmarkPageHandler(b *testing.B) {
	for _, cond := range []bool{false, true} {
		name := "200"
		if cond {
			name = "304"
		}
		b.Run(name, func(b *testing.B) {
			s := mustNew(b, Config{Pages: 1000, Day: 100 * time.Millisecond})
			var etags [1000]string
			for i := range etags {
				etags[i] = get(b, s, i%4, "/p/"+strconv.Itoa(i), nil).Header().Get("ETag")
			}
			var next atomic.Int64
			start := time.Now()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				// Requests are built once per goroutine, so the benchmark
				// measures the handler rather than httptest.
				reqs := make([]*http.Request, 1000)
				handlers := make([]http.Handler, 4)
				for i := range reqs {
					reqs[i] = httptest.NewRequest(http.MethodGet, "/p/"+strconv.Itoa(i), nil)
					if cond {
						reqs[i].Header.Set("If-None-Match", etags[i])
					}
				}
				for h := range handlers {
					handlers[h] = s.hostHandler(h)
				}
				w := &discardWriter{h: http.Header{}}
				for pb.Next() {
					i := int(next.Add(1) % 1000)
					clear(w.h)
					handlers[i%4].ServeHTTP(w, reqs[i])
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
		})
	}
}

// BenchmarkPageHTTP measures requests/s over real loopback connections with
// keep-alive, which is what a crawler sees.
func BenchmarkPageHTTP(b *testing.B) {
	s := mustNew(b, Config{Pages: 1000})
	if err := s.Start(b.Context()); err != nil {
		b.Fatalf("Start: %v", err)
	}
	defer s.Close()
	urls := s.URLs()
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var next atomic.Int64
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Get(urls[next.Add(1)%int64(len(urls))])
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}

// BenchmarkTruth: 10 000 pages (Table 6 mix, Day = 1s) and 100 000 page
// fetches spread over 100 simulated days, with a 1 s time series.
func BenchmarkTruth(b *testing.B) {
	const pages, requests = 10_000, 100_000
	const window = 100 * time.Second
	s := mustNew(b, Config{Pages: pages, Seed: 1, Now: newFakeClock().Now})
	rng := rand.New(rand.NewPCG(1, 2))
	for k := range requests {
		off := window * time.Duration(k) / requests
		fetchAt(s, rng.IntN(pages), off)
	}
	b.ResetTimer()
	for b.Loop() {
		rep := s.Truth(t0, t0.Add(window), WithStep(time.Second))
		if rep.Fetches != requests {
			b.Fatalf("fetches %d", rep.Fetches)
		}
	}
}

// discardWriter is a reusable http.ResponseWriter that drops the body.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}
