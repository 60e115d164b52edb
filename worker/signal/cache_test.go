package signal

import (
	"net/http"
	"testing"
	"time"
)

// The lifetime a response's caching headers claim, as RFC 9111 §4.2.1
// computes it, for every directive and header the claim can come from.
func TestParseCache(t *testing.T) {
	recv := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	date := recv.Add(-10 * time.Second).Format(http.TimeFormat)
	for _, c := range []struct {
		name string
		h    map[string][]string
		ok   bool
		want Cache
	}{
		{"none", nil, false, Cache{}},
		{"unrelated directives", map[string][]string{"Cache-Control": {"public, private"}}, false, Cache{}},
		{"max-age", map[string][]string{"Cache-Control": {"public, max-age=3600"}}, true, Cache{Lifetime: time.Hour, From: "max-age"}},
		{"quoted, upper case, over two lines", map[string][]string{"Cache-Control": {`Public`, `MAX-AGE="600", Must-Revalidate`}}, true,
			Cache{Lifetime: 10 * time.Minute, From: "max-age", MustRevalidate: true}},
		{"the first of a repeated directive", map[string][]string{"Cache-Control": {"max-age=60, max-age=6000"}}, true, Cache{Lifetime: time.Minute, From: "max-age"}},
		{"max-age beats s-maxage and Expires", map[string][]string{"Cache-Control": {"s-maxage=600, max-age=0"}, "Expires": {recv.Add(time.Hour).Format(http.TimeFormat)}}, true,
			Cache{From: "max-age"}},
		{"s-maxage alone", map[string][]string{"Cache-Control": {"s-maxage=600"}}, true, Cache{Lifetime: 10 * time.Minute, From: "s-maxage"}},
		{"invalid max-age is stale", map[string][]string{"Cache-Control": {"max-age=-1"}}, true, Cache{From: "max-age"}},
		{"huge max-age is capped", map[string][]string{"Cache-Control": {"max-age=99999999999999999999"}}, true, Cache{Lifetime: maxDelta, From: "max-age"}},
		{"no-store", map[string][]string{"Cache-Control": {"no-store, max-age=600"}}, true, Cache{From: "no-store", NoStore: true}},
		{"no-cache", map[string][]string{"Cache-Control": {"no-cache, max-age=600"}}, true, Cache{From: "no-cache", NoCache: true}},
		{"no-cache of a field is not no-cache", map[string][]string{"Cache-Control": {`no-cache="Set-Cookie, Foo", max-age=600`}}, true,
			Cache{Lifetime: 10 * time.Minute, From: "max-age"}},
		{"Expires less Date", map[string][]string{"Date": {date}, "Expires": {recv.Add(time.Hour).Format(http.TimeFormat)}}, true,
			Cache{Lifetime: time.Hour + 10*time.Second, From: "expires"}},
		{"Expires without Date: less the receipt", map[string][]string{"Expires": {recv.Add(time.Hour).Format(http.TimeFormat)}}, true,
			Cache{Lifetime: time.Hour, From: "expires"}},
		{"Expires in the past", map[string][]string{"Date": {date}, "Expires": {recv.Add(-time.Hour).Format(http.TimeFormat)}}, true, Cache{From: "expires"}},
		{"Expires 0 is the past", map[string][]string{"Expires": {"0"}}, true, Cache{From: "expires"}},
		{"Age", map[string][]string{"Cache-Control": {"max-age=300"}, "Age": {"120"}}, true, Cache{Lifetime: 5 * time.Minute, Age: 2 * time.Minute, From: "max-age"}},
		{"bad Age", map[string][]string{"Cache-Control": {"max-age=300"}, "Age": {"soon"}}, true, Cache{Lifetime: 5 * time.Minute, From: "max-age"}},
	} {
		h := http.Header{}
		for k, vs := range c.h {
			for _, v := range vs {
				h.Add(k, v)
			}
		}
		got, ok := ParseCache(h, recv)
		if ok != c.ok || got != c.want {
			t.Errorf("%s: %+v %v, want %+v %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
