package sim

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// t0 is a whole second, so Last-Modified truncation is easy to reason about.
var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// fakeClock is the injected clock: tests move it explicitly instead of
// sleeping.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: t0} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// At sets the clock to t0 + d.
func (c *fakeClock) At(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t0.Add(d)
}

func secs(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

func mustNew(t testing.TB, cfg Config) *Sim {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

// do sends one request straight to host h's handler (no network).
func do(t testing.TB, s *Sim, h int, method, path string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, "http://"+hostIP(h)+"/"+path[1:], nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	s.hostHandler(h).ServeHTTP(rec, req)
	return rec
}

func get(t testing.TB, s *Sim, h int, path string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	return do(t, s, h, http.MethodGet, path, hdr)
}

func near(a, b, eps float64) bool {
	d := a - b
	return d < eps && -d < eps
}
