package sim

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

// TestLastModifiedModes: each page serves Last-Modified the way its class
// says, the shares are exact, and LastModified reports what is served.
func TestLastModifiedModes(t *testing.T) {
	clk := newFakeClock()
	cfg := Config{Hosts: 1, Pages: 40, Day: time.Hour, Seed: 5, Now: clk.Now, Mix: []RateClass{{Share: 1, Rate: 24}},
		LastModified: []LastModifiedClass{{Share: 0.25, Mode: LMTrue}, {Share: 0.25, Mode: LMNone}, {Share: 0.25, Mode: LMResponseTime}, {Share: 0.25, Mode: LMConstant}}}
	if _, err := New(Config{Hosts: 1, Pages: 4, LastModified: []LastModifiedClass{{Share: 0.5, Mode: LMTrue}}}); err == nil {
		t.Error("shares summing to 0.5 accepted")
	}
	if _, err := New(Config{Hosts: 1, Pages: 4, LastModified: []LastModifiedClass{{Share: 1, Mode: LMEveryRequest + 1}}}); err == nil {
		t.Error("unknown mode accepted")
	}
	cfg.LastModified = append(cfg.LastModified[:3], LastModifiedClass{Share: 0.25, Mode: LMEveryRequest})
	cfg.LastModified[0].Share, cfg.LastModified[1].Share = 0.125, 0.125
	cfg.LastModified = append(cfg.LastModified, LastModifiedClass{Share: 0.25, Mode: LMConstant})
	s := mustNew(t, cfg)
	count := map[LastModifiedMode]int{}
	for _, p := range s.Pages() {
		count[p.LastModified]++
	}
	if count[LMTrue] != 5 || count[LMNone] != 5 || count[LMResponseTime] != 10 || count[LMEveryRequest] != 10 || count[LMConstant] != 10 {
		t.Fatalf("modes %v", count)
	}
	for i, p := range s.Pages() {
		var prev string
		var prevVer int
		for k, at := range []time.Duration{3 * time.Hour, 3*time.Hour + 5*time.Minute, 50 * time.Hour} {
			clk.At(at)
			rec := get(t, s, 0, "/p/"+strconv.Itoa(i), nil)
			lm := rec.Header().Get("Last-Modified")
			ver := s.VersionAt(i, clk.Now())
			want, ok := s.lastModifiedAt(i, clk.Now())
			if ok != (lm != "") || (ok && lm != want.Format(http.TimeFormat)) {
				t.Fatalf("page %d (%v): served %q, LastModified says %v %v", i, p.LastModified, lm, want, ok)
			}
			switch p.LastModified {
			case LMNone:
				if lm != "" {
					t.Errorf("page %d: none sends %q", i, lm)
				}
			case LMResponseTime:
				if lm != clk.Now().Format(http.TimeFormat) {
					t.Errorf("page %d: response time %q at %v", i, lm, clk.Now())
				}
			case LMConstant:
				if k > 0 && lm != prev {
					t.Errorf("page %d: constant date moved %q → %q", i, prev, lm)
				}
			case LMEveryRequest:
				if k > 0 && lm == prev {
					t.Errorf("page %d: every-request date did not move", i)
				}
				if tm, _ := http.ParseTime(lm); !tm.Before(clk.Now()) {
					t.Errorf("page %d: every-request date %v not before the response", i, tm)
				}
			case LMTrue:
				if k > 0 && (lm != prev) != (ver != prevVer) {
					t.Errorf("page %d: true date moved %v while the version went %d → %d", i, lm != prev, prevVer, ver)
				}
			}
			prev, prevVer = lm, ver
		}
	}
}
