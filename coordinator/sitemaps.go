package coordinator

import (
	"net/url"
	"sync"
	"time"

	"github.com/freshcrawl/freshcrawl/coordinator/internal/dispatch"
	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/proto"
)

// The sitemaps a coordinator learns of (a host's robots.txt Sitemap: lines,
// a sitemap index's children) are fetched as one-off requests of the
// schedule, under the host's politeness and out of the budget like any
// fetch. A sitemap starts at the shortest interval, at which all of them
// together take a tenth of the budget (S/(B/10) for S sitemaps); each
// fetch that refetches nothing doubles its interval, up to the
// collection's uniform interval N/B, and each that does halves it: a
// sitemap is fetched as often as what it tells is worth. What its entries
// say goes to the scheduler as signals (schedule.Scheduler.Signal),
// believed as far as the host's sitemaps have proven true
// (docs/design.md §3.8).

// Limits on what the coordinator keeps of sitemaps: a host or a crawl
// cannot make it hold more than this many, whatever its robots.txt or
// sitemap indexes list.
const (
	maxSitemapsPerHost = 16
	maxSitemaps        = 10_000
)

// sitemapSource is one sitemap the coordinator fetches.
type sitemapSource struct {
	host                string
	etag, lastMod, hash string
	fetches, unchanged  int
	// lastStart is the start of the newest fetch seen, lastDone that of
	// the newest whose last chunk ended the request: a repeated chunk
	// (delivery is at least once) changes neither.
	lastStart, lastDone time.Time
	// every is the interval to the next fetch, and useful whether the
	// fetch under way has refetched a page.
	every  time.Duration
	useful bool
}

// sitemapShare is the share of the budget all sitemaps together take at
// their shortest interval.
const sitemapShare = 0.1

// nextSitemapInterval is a sitemap's interval after a fetch: halved if
// the fetch refetched a page, doubled if not, within [shortest, longest].
func nextSitemapInterval(every, shortest, longest time.Duration, useful bool) time.Duration {
	switch {
	case every <= 0:
		every = shortest
	case useful:
		every /= 2
	default:
		every *= 2
	}
	return min(max(every, shortest), max(longest, shortest))
}

// sitemaps is the coordinator's record of the sitemaps it fetches.
type sitemaps struct {
	sync.Mutex
	byURL  map[string]*sitemapSource
	byHost map[string]int
}

// learnSitemaps records the sitemap URLs found for host and queues a
// first fetch of each new one.
func (c *Coordinator) learnSitemaps(urls []string, now time.Time) {
	var fresh []string
	c.smaps.Lock()
	if c.smaps.byURL == nil {
		c.smaps.byURL, c.smaps.byHost = map[string]*sitemapSource{}, map[string]int{}
	}
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			continue
		}
		if _, ok := c.smaps.byURL[raw]; ok || len(c.smaps.byURL) >= maxSitemaps || c.smaps.byHost[u.Host] >= maxSitemapsPerHost {
			continue
		}
		c.smaps.byURL[raw] = &sitemapSource{host: u.Host}
		c.smaps.byHost[u.Host]++
		fresh = append(fresh, raw)
	}
	c.smaps.Unlock()
	if len(fresh) == 0 {
		return
	}
	// Registered before it is queued, so that the dispatcher never hands
	// it out as a page; a URL the schedule already has (a seeded page)
	// is not a sitemap to it, and is dropped again.
	var known []string
	c.disp.Do(func(s *schedule.Scheduler) {
		for _, u := range fresh {
			if !s.Enqueue(u, hostOf(u), now) {
				known = append(known, u)
			}
		}
	})
	if len(known) > 0 {
		c.smaps.Lock()
		for _, u := range known {
			if src, ok := c.smaps.byURL[u]; ok && src.fetches == 0 {
				delete(c.smaps.byURL, u)
				c.smaps.byHost[src.host]--
			}
		}
		c.smaps.Unlock()
	}
	c.disp.Poke()
}

// hostOf is the host of a URL learnSitemaps accepted.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Host
}

// sitemapTask makes t a sitemap task if its URL is a sitemap the
// coordinator fetches, with the validators of its last fetch; it reports
// whether it did.
func (c *Coordinator) sitemapTask(t *proto.Task) bool {
	c.smaps.Lock()
	defer c.smaps.Unlock()
	src, ok := c.smaps.byURL[t.URL]
	if !ok {
		return false
	}
	t.Kind, t.ETag, t.LastModified, t.PrevHash = proto.KindSitemap, src.etag, src.lastMod, src.hash
	return true
}

// sitemapResult takes a sitemap task's result chunk: its entries become
// signals, its child sitemaps are learnt, and its last chunk ends the
// one-off request, which is queued again an interval later.
func (c *Coordinator) sitemapResult(r *proto.Result, now time.Time) {
	s := r.Signal
	c.smaps.Lock()
	src, ok := c.smaps.byURL[r.URL]
	if ok && s != nil && s.Seq == 0 && r.StartedAt.After(src.lastStart) {
		src.lastStart, src.useful = r.StartedAt, false
		src.fetches++
		if r.OK() {
			if r.NotModified {
				src.unchanged++
			} else {
				src.etag, src.lastMod, src.hash = r.ETag, r.LastModified, r.Hash
			}
		}
	}
	done := ok && (s == nil || s.Last) && r.StartedAt.After(src.lastDone)
	if done {
		src.lastDone = r.StartedAt
	}
	c.smaps.Unlock()
	if !ok {
		return
	}
	if s != nil {
		children := make([]string, len(s.Sitemaps))
		for i, e := range s.Sitemaps {
			children[i] = e.URL
		}
		c.learnSitemaps(children, now)
		if len(s.Entries) > 0 {
			c.disp.Do(func(sc *schedule.Scheduler) {
				// A lastmod within the clock skew of the response is the
				// response time, not a change, as a Last-Modified is
				// (docs/design.md §3.3): a sitemap that stamps every page
				// "now" says nothing.
				stamped := r.StartedAt.Add(-c.opts.LMSkew)
				useful := false
				for _, e := range s.Entries {
					if !e.LastMod.IsZero() && e.LastMod.Before(stamped) && sc.Signal(e.URL, string(proto.KindSitemap), e.LastMod, now) {
						useful = true
					}
				}
				if useful {
					c.smaps.Lock()
					src.useful = true
					c.smaps.Unlock()
				}
			})
		}
	}
	if !done {
		return
	}
	start, end := r.StartedAt, r.FinishedAt
	if start.IsZero() {
		start = now
	}
	if end.IsZero() {
		end = now
	}
	c.disp.Finish([]dispatch.Finished{{TaskID: r.TaskID, URL: r.URL, At: start, Applied: true,
		Feedback: schedule.Feedback{Start: start, End: end, OK: r.OK()}}})
	c.smaps.Lock()
	n := len(c.smaps.byURL)
	c.smaps.Unlock()
	c.disp.Do(func(sc *schedule.Scheduler) {
		b := c.opts.Budget // validated > 0
		shortest := time.Duration(float64(n) / (sitemapShare * b) * float64(time.Second))
		longest := time.Duration(float64(sc.Len()) / b * float64(time.Second))
		c.smaps.Lock()
		src.every = nextSitemapInterval(src.every, shortest, longest, src.useful)
		every := src.every
		c.smaps.Unlock()
		sc.Enqueue(r.URL, src.host, end.Add(every))
	})
	c.disp.Poke()
}
