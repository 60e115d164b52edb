package sim

import (
	"bytes"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNewValidation(t *testing.T) {
	per := func(mut func(*PeriodicClass)) Config {
		pc := PeriodicClass{Share: 1, Period: 10 * time.Second, Phases: []time.Duration{time.Second, 6 * time.Second}, Jitter: time.Second}
		mut(&pc)
		return Config{Periodic: []PeriodicClass{pc}}
	}
	tests := []struct {
		name string
		cfg  Config
		want string // substring of the error naming the field
	}{
		{"hosts too many", Config{Hosts: 251}, "Config.Hosts"},
		{"hosts negative", Config{Hosts: -1}, "Config.Hosts"},
		{"pages negative", Config{Pages: -3}, "Config.Pages"},
		{"day negative", Config{Day: -time.Second}, "Config.Day"},
		{"port", Config{Port: 70000}, "Config.Port"},
		{"robots host", Config{Hosts: 2, Robots: map[int]string{2: ""}}, "Config.Robots[2]"},
		{"share sum", Config{Mix: []RateClass{{Share: 0.5, Rate: 1}}}, "sum to 0.5"},
		{"negative rate", Config{Mix: []RateClass{{Share: 1, Rate: -1}}}, "Config.Mix[0].Rate"},
		{"NaN share", Config{Mix: []RateClass{{Share: math.NaN(), Rate: 1}}}, "Config.Mix[0].Share"},
		{"period", per(func(p *PeriodicClass) { p.Period = 0 }), "Config.Periodic[0].Period"},
		{"no phases", per(func(p *PeriodicClass) { p.Phases = nil }), "Config.Periodic[0].Phases"},
		{"phase range", per(func(p *PeriodicClass) { p.Phases = []time.Duration{10 * time.Second} }), "Config.Periodic[0].Phases"},
		{"jitter too wide", per(func(p *PeriodicClass) { p.Jitter = 3 * time.Second }), "Config.Periodic[0].Jitter"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New error = %v, want it to mention %q", err, tc.want)
			}
		})
	}
	if _, err := New(per(func(*PeriodicClass) {})); err != nil {
		t.Fatalf("valid periodic config rejected: %v", err)
	}
}

func TestDefaultsTable6Mix(t *testing.T) {
	s := mustNew(t, Config{})
	if got := len(s.URLs()); got != 100 {
		t.Fatalf("pages = %d, want 100", got)
	}
	if got := len(s.Hosts()); got != 4 {
		t.Fatalf("hosts = %d, want 4", got)
	}
	count := map[float64]int{}
	for _, p := range s.Pages() {
		count[math.Round(p.RatePerDay*1e6)/1e6]++
		if want := hostIP(p.Index % 4); p.Host != want {
			t.Fatalf("page %d on %s, want %s (round-robin)", p.Index, p.Host, want)
		}
		// Day defaults to 1s, so changes per real second = per day.
		if !near(p.Rate, p.RatePerDay, 1e-12) {
			t.Fatalf("page %d: rate %v/s vs %v/day with Day = 1s", p.Index, p.Rate, p.RatePerDay)
		}
	}
	want := map[float64]int{1: 23, math.Round(1e6/7) / 1e6: 15, math.Round(1e6/30) / 1e6: 16, math.Round(1e6/90) / 1e6: 16, math.Round(1e6/365) / 1e6: 30}
	for r, n := range want {
		if count[r] != n {
			t.Errorf("pages at %v changes/day = %d, want %d (Cho & Garcia-Molina Table 6)", r, count[r], n)
		}
	}
	if u := s.URLs()[17]; !strings.HasPrefix(u, "http://127.0.0.3:") || !strings.HasSuffix(u, "/p/17") {
		t.Errorf("URL of page 17 = %q", u)
	}
}

func TestDeterministicVersions(t *testing.T) {
	cfg := Config{Pages: 20, Seed: 42, Mix: []RateClass{{Share: 0.5, Rate: 3}, {Share: 0.5, Rate: 0.5}}}
	c1, c2 := newFakeClock(), &fakeClock{now: t0.Add(time.Hour)}
	cfg.Now = c1.Now
	a := mustNew(t, cfg)
	cfg.Now = c2.Now
	b := mustNew(t, cfg)
	// Ask b in a different order and granularity: the schedule must not
	// depend on how it is consumed.
	for i := 19; i >= 0; i-- {
		b.VersionAt(i, b.Epoch().Add(secs(3.3)))
	}
	for i := range 20 {
		ca := a.ChangeTimes(i, a.Epoch(), a.Epoch().Add(20*time.Second))
		cb := b.ChangeTimes(i, b.Epoch(), b.Epoch().Add(20*time.Second))
		if len(ca) != len(cb) {
			t.Fatalf("page %d: %d vs %d changes", i, len(ca), len(cb))
		}
		for k := range ca {
			if ca[k].Sub(a.Epoch()) != cb[k].Sub(b.Epoch()) {
				t.Fatalf("page %d change %d: %v vs %v after epoch", i, k, ca[k].Sub(a.Epoch()), cb[k].Sub(b.Epoch()))
			}
		}
		for _, d := range []time.Duration{0, secs(1.5), secs(7), secs(19.9)} {
			if va, vb := a.VersionAt(i, a.Epoch().Add(d)), b.VersionAt(i, b.Epoch().Add(d)); va != vb {
				t.Fatalf("page %d at %v: version %d vs %d", i, d, va, vb)
			}
		}
	}
	// Same (page, version) renders the same body in both; the version moves
	// the text but not the script or style.
	c1.At(5 * time.Second)
	c2.At(time.Hour + 5*time.Second)
	ra, rb := get(t, a, 3, "/p/3", nil), get(t, b, 3, "/p/3", nil)
	if !bytes.Equal(ra.Body.Bytes(), rb.Body.Bytes()) || ra.Header().Get("ETag") != rb.Header().Get("ETag") {
		t.Fatal("same seed, page and version served different bodies or ETags")
	}
	v0 := render(42, a.vocab, 3, 0, 4, 20)
	v1 := render(42, a.vocab, 3, 1, 4, 20)
	if bytes.Equal(v0, v1) {
		t.Fatal("versions 0 and 1 render identically")
	}
	for _, static := range []string{staticHead} {
		if !bytes.Contains(v0, []byte(static)) || !bytes.Contains(v1, []byte(static)) {
			t.Fatal("static chrome (script, style) missing from a version")
		}
	}
	// A different seed gives different change times.
	cfg.Seed = 43
	c := mustNew(t, cfg)
	if slices.Equal(durations(a, 0), durations(c, 0)) {
		t.Fatal("seeds 42 and 43 gave page 0 the same schedule")
	}
}

func durations(s *Sim, i int) []time.Duration {
	var out []time.Duration
	for _, c := range s.ChangeTimes(i, s.Epoch(), s.Epoch().Add(20*time.Second)) {
		out = append(out, c.Sub(s.Epoch()))
	}
	return out
}

func TestPoissonRate(t *testing.T) {
	// 10 changes per simulated day, a day lasting 500 ms: 20 per real second.
	const pages, perDay, seconds = 200, 10.0, 50.0
	s := mustNew(t, Config{Pages: pages, Day: 500 * time.Millisecond, Seed: 7, Mix: []RateClass{{Share: 1, Rate: perDay}}, Now: newFakeClock().Now})
	total := 0
	for i := range pages {
		if got := s.Pages()[i].Rate; !near(got, 20, 1e-9) {
			t.Fatalf("page %d: true rate %v/s, want 20", i, got)
		}
		total += len(s.ChangeTimes(i, s.Epoch(), s.Epoch().Add(secs(seconds))))
	}
	mean := pages * 20 * seconds // 200 000
	if sigma := math.Sqrt(mean); math.Abs(float64(total)-mean) > 5*sigma {
		t.Fatalf("changes = %d, want %v ± 5σ (σ = %.0f)", total, mean, sigma)
	}
	// Rate 0 never changes.
	z := mustNew(t, Config{Pages: 1, Mix: []RateClass{{Share: 1, Rate: 0}}, Now: newFakeClock().Now})
	if v := z.VersionAt(0, z.Epoch().Add(1000*time.Hour)); v != 0 {
		t.Fatalf("rate-0 page at version %d", v)
	}
}

// periodicOne is a one-page site changing at t = 1, 3, 5, ... seconds.
func periodicOne(t *testing.T, clk *fakeClock) *Sim {
	return mustNew(t, Config{Hosts: 1, Pages: 1, Now: clk.Now, Periodic: []PeriodicClass{{Share: 1, Period: 2 * time.Second, Phases: []time.Duration{time.Second}}}})
}

func TestConditionalGET(t *testing.T) {
	clk := newFakeClock()
	s := periodicOne(t, clk)

	clk.At(secs(1.5))
	r := get(t, s, 0, "/p/0", nil)
	etag1 := r.Header().Get("ETag")
	if r.Code != 200 || !strings.HasPrefix(etag1, `"`) || !strings.HasSuffix(etag1, `-v1"`) {
		t.Fatalf("first GET: %d, ETag %q", r.Code, etag1)
	}
	if got := r.Header().Get("Content-Type"); got != "text/html; charset=utf-8" {
		t.Fatalf("Content-Type %q", got)
	}
	if got, want := r.Header().Get("Last-Modified"), t0.Add(time.Second).Format(http.TimeFormat); got != want {
		t.Fatalf("Last-Modified %q, want %q", got, want)
	}

	clk.At(2 * time.Second)
	for _, inm := range []string{etag1, "W/" + etag1, `"nope", ` + etag1, "*"} {
		r = get(t, s, 0, "/p/0", map[string]string{"If-None-Match": inm})
		if r.Code != http.StatusNotModified || r.Body.Len() != 0 || r.Header().Get("ETag") != etag1 {
			t.Fatalf("If-None-Match %s: %d, body %d bytes, ETag %q", inm, r.Code, r.Body.Len(), r.Header().Get("ETag"))
		}
	}

	clk.At(secs(3.5)) // version 2 since t = 3
	r = get(t, s, 0, "/p/0", map[string]string{"If-None-Match": etag1})
	if r.Code != 200 || r.Header().Get("ETag") == etag1 {
		t.Fatalf("stale If-None-Match: %d, ETag %q", r.Code, r.Header().Get("ETag"))
	}
	lm := r.Header().Get("Last-Modified")
	ims := func(d time.Duration) string { return t0.Add(d).Format(http.TimeFormat) }
	for _, tc := range []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"echoed Last-Modified", map[string]string{"If-Modified-Since": lm}, 304},
		{"older date", map[string]string{"If-Modified-Since": ims(2 * time.Second)}, 200},
		{"future date ignored", map[string]string{"If-Modified-Since": ims(10 * time.Second)}, 200},
		{"If-None-Match wins", map[string]string{"If-Modified-Since": lm, "If-None-Match": etag1}, 200},
		{"garbage date", map[string]string{"If-Modified-Since": "yesterday"}, 200},
	} {
		if r := get(t, s, 0, "/p/0", tc.hdr); r.Code != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, r.Code, tc.want)
		}
	}

	// HEAD: headers, no body, not a fetch. POST: 405.
	if r := do(t, s, 0, http.MethodHead, "/p/0", nil); r.Code != 200 || r.Body.Len() != 0 {
		t.Fatalf("HEAD: %d with %d body bytes", r.Code, r.Body.Len())
	}
	if r := do(t, s, 0, http.MethodPost, "/p/0", nil); r.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %d", r.Code)
	}
	rep := s.Truth(t0, t0.Add(4*time.Second))
	if rep.Fetches != 11 || rep.NotModified != 5 || rep.PageRequests != 12 {
		t.Fatalf("fetches %d, 304s %d, page requests %d; want 11, 5, 12", rep.Fetches, rep.NotModified, rep.PageRequests)
	}
}

// With scaled time two changes can share a second; If-Modified-Since must
// not hide the second one.
func TestIfModifiedSinceAmbiguousSecond(t *testing.T) {
	clk := newFakeClock()
	s := mustNew(t, Config{Hosts: 1, Pages: 1, Now: clk.Now, Periodic: []PeriodicClass{{Share: 1, Period: time.Second, Phases: []time.Duration{100 * time.Millisecond, 600 * time.Millisecond}}}})
	clk.At(secs(0.3)) // version 1 (change at 0.1)
	lm := get(t, s, 0, "/p/0", nil).Header().Get("Last-Modified")
	clk.At(secs(0.8)) // version 2 (change at 0.6), same Last-Modified second
	if r := get(t, s, 0, "/p/0", map[string]string{"If-Modified-Since": lm}); r.Code != 200 {
		t.Fatalf("two changes in the Last-Modified second: status %d, want 200", r.Code)
	}
	clk.At(secs(1.05)) // still version 2; a date a whole second after the change is safe
	if r := get(t, s, 0, "/p/0", map[string]string{"If-Modified-Since": t0.Add(time.Second).Format(http.TimeFormat)}); r.Code != 304 {
		t.Fatalf("date after the last change: status %d, want 304", r.Code)
	}
}

func TestRobotsAndPrivate(t *testing.T) {
	clk := newFakeClock()
	custom := "User-agent: freshcrawl\nDisallow: /p/\nAllow: /p/5$\n\nUser-agent: *\nDisallow:\n"
	s := mustNew(t, Config{Hosts: 2, Pages: 8, Now: clk.Now, Robots: map[int]string{1: custom}})

	if r := get(t, s, 0, "/robots.txt", nil); r.Code != 200 || r.Body.String() != DefaultRobots || !strings.HasPrefix(r.Header().Get("Content-Type"), "text/plain") {
		t.Fatalf("host 0 robots.txt: %d %q", r.Code, r.Body.String())
	}
	if r := get(t, s, 1, "/robots.txt", nil); r.Body.String() != custom {
		t.Fatalf("host 1 robots.txt: %q", r.Body.String())
	}
	ua := map[string]string{"User-Agent": "freshcrawl/1.0 (+https://example.org)"}
	clk.At(time.Second)
	get(t, s, 0, "/p/0", ua)                                      // allowed
	if r := get(t, s, 0, "/private/account", ua); r.Code != 200 { // disallowed by default robots
		t.Fatalf("/private/account: %d", r.Code)
	}
	get(t, s, 1, "/p/1", ua)                                       // disallowed for freshcrawl on host 1
	get(t, s, 1, "/p/5", ua)                                       // allowed: longer Allow rule
	get(t, s, 1, "/p/1", map[string]string{"User-Agent": "other"}) // allowed for others
	if r := get(t, s, 0, "/p/1", nil); r.Code != 404 {             // page 1 lives on host 1
		t.Fatalf("page on the wrong host: %d", r.Code)
	}

	rep := s.Truth(t0, t0.Add(2*time.Second))
	if rep.Disallowed != 2 || !slices.Equal(rep.DisallowedPaths, []string{"/private/account", "/p/1"}) {
		t.Fatalf("disallowed %d %v, want 2 [/private/account /p/1]", rep.Disallowed, rep.DisallowedPaths)
	}
	if rep.Hosts[0].Robots != 1 || rep.Hosts[1].Robots != 1 || rep.Requests != 8 {
		t.Fatalf("robots %d/%d, requests %d", rep.Hosts[0].Robots, rep.Hosts[1].Robots, rep.Requests)
	}
}

func TestRobotsMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, path string
		want          bool
	}{
		{"/private/", "/private/x", true},
		{"/private/", "/privat", false},
		{"/*.php$", "/a/b.php", true},
		{"/*.php$", "/a/b.php?x", false},
		{"/p/*/edit", "/p/3/edit/now", true},
		{"/p/5$", "/p/5", true},
		{"/p/5$", "/p/50", false},
	} {
		if got := robotsMatch(tc.pattern, tc.path); got != tc.want {
			t.Errorf("robotsMatch(%q, %q) = %v", tc.pattern, tc.path, got)
		}
	}
}
