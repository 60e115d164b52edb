package signal

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Cache is what a response's caching headers claim about how long it
// stays fresh (RFC 9111 §4.2.1): a server's own estimate of how often the
// resource changes, honest or not.
type Cache struct {
	// Lifetime is the freshness lifetime claimed: 0 for no-store,
	// no-cache and an Expires already past (or invalid, as RFC 9111 §5.3
	// asks). max-age decides first, as for any private cache; then
	// s-maxage, which a crawler is not bound by but which still states how
	// long the server lets shared caches serve the response; then Expires
	// less Date (less the time of receipt without a Date).
	Lifetime time.Duration
	// Age is the Age header: how long the response had already spent in
	// caches when it arrived, so the claim runs out Lifetime − Age after
	// receipt. The apparent age from Date is left out: it measures the
	// two clocks' disagreement as much as any cache.
	Age time.Duration
	// From names what set Lifetime: "no-store", "no-cache", "max-age",
	// "s-maxage" or "expires".
	From string
	// The directives as sent.
	NoStore, NoCache, MustRevalidate bool
}

// maxDelta is the largest delta-seconds RFC 9111 §1.2.2 asks a cache to
// represent (2³¹ s, about 68 years); a larger value means that.
const maxDelta = time.Duration(1<<31) * time.Second

// ParseCache reads the Cache-Control, Expires, Date and Age headers of a
// response received at `received`. ok is false when they claim nothing
// (no lifetime directive and no Expires). Directives are read in any
// case, with quoted values; of a repeated directive the first counts
// (RFC 9111 §4.2.1); no-cache naming header fields (no-cache="Set-Cookie")
// restricts only those fields and is not read as no-cache.
func ParseCache(h http.Header, received time.Time) (c Cache, ok bool) {
	d := directives(h.Values("Cache-Control"))
	_, c.NoStore = d["no-store"]
	if v, has := d["no-cache"]; has && v == "" {
		c.NoCache = true
	}
	_, c.MustRevalidate = d["must-revalidate"]
	if v := strings.TrimSpace(h.Get("Age")); v != "" {
		c.Age, _ = deltaSeconds(v)
	}
	switch {
	case c.NoStore:
		return c, setFrom(&c, "no-store", 0)
	case c.NoCache:
		return c, setFrom(&c, "no-cache", 0)
	}
	for _, name := range []string{"max-age", "s-maxage"} {
		if v, has := d[name]; has {
			// An invalid value makes the response stale (§4.2.1).
			life, _ := deltaSeconds(v)
			return c, setFrom(&c, name, life)
		}
	}
	exp := h.Values("Expires")
	if len(exp) == 0 {
		return c, false
	}
	date := received
	if t, err := http.ParseTime(h.Get("Date")); err == nil {
		date = t
	}
	life := time.Duration(0)
	if t, err := http.ParseTime(strings.TrimSpace(exp[0])); err == nil {
		life = max(t.Sub(date), 0)
	}
	return c, setFrom(&c, "expires", life)
}

func setFrom(c *Cache, from string, life time.Duration) bool {
	c.From, c.Lifetime = from, life
	return true
}

// deltaSeconds parses 1*DIGIT, capped at maxDelta.
func deltaSeconds(v string) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	for _, c := range []byte(v) {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n >= int64(maxDelta/time.Second) {
		return maxDelta, true // all digits: only too large
	}
	return time.Duration(n) * time.Second, true
}

// directives splits Cache-Control values into lower-case names and their
// values (unquoted), the first of each name kept.
func directives(values []string) map[string]string {
	out := map[string]string{}
	for _, v := range values {
		for len(v) > 0 {
			var part string
			part, v = nextDirective(v)
			name, val, _ := strings.Cut(part, "=")
			name = strings.ToLower(strings.TrimSpace(name))
			if name == "" {
				continue
			}
			val = strings.TrimSpace(val)
			if len(val) >= 2 && val[0] == '"' && val[len(val)-1] == '"' {
				val = val[1 : len(val)-1]
			}
			if _, seen := out[name]; !seen {
				out[name] = val
			}
		}
	}
	return out
}

// nextDirective cuts v at the first comma outside a quoted string.
func nextDirective(v string) (part, rest string) {
	quoted := false
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '"':
			quoted = !quoted
		case '\\':
			if quoted {
				i++
			}
		case ',':
			if !quoted {
				return v[:i], v[i+1:]
			}
		}
	}
	return v, ""
}
