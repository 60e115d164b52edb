package bench

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// PageOptions configure the throughput benchmark's local web site.
type PageOptions struct {
	// Hosts is the number of distinct hosts, each a loopback address of its
	// own (127.0.0.2, 127.0.0.3, ...) with its own listener. The
	// coordinator keeps at most one task in flight per host, so the
	// pipeline can only be saturated with at least as many hosts as
	// concurrent fetches.
	Hosts int
	// PagesPerHost is the number of pages on each host.
	PagesPerHost int
	// FirstIP is the first host's address (default 127.0.0.2).
	FirstIP netip.Addr
	// Seed makes the site deterministic.
	Seed uint64
	// Now is the site's clock, which decides each page's version (default
	// time.Now). Tests inject one to change pages without waiting.
	Now func() time.Time
}

func (o PageOptions) withDefaults() PageOptions {
	if o.Hosts <= 0 {
		o.Hosts = 200
	}
	if o.PagesPerHost <= 0 {
		o.PagesPerHost = 5
	}
	if !o.FirstIP.IsValid() {
		o.FirstIP = netip.AddrFrom4([4]byte{127, 0, 0, 2})
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// changePeriods is the mix of how often pages change, with the share of
// pages of each. At a few hundred fetches a second over the default
// thousand pages every page is revisited every few seconds, so about a
// quarter of fetches see a change: most confirm an unchanged page, as in a
// revisit crawl, and the rest exercise the diff, the change log and the
// change events.
var changePeriods = [...]struct {
	period time.Duration
	share  float64
}{
	{time.Second, 0.10},
	{5 * time.Second, 0.20},
	{30 * time.Second, 0.30},
	{time.Hour, 0.40},
}

// pageServer is a local web site of realistic HTML pages, 20–50 KiB each,
// whose text changes under known periods. It sends no ETag or
// Last-Modified, so every fetch downloads, parses and hashes the full page:
// the work Colly does on every visit, which keeps the comparison fair.
type pageServer struct {
	o        PageOptions
	srv      *http.Server
	lns      []net.Listener
	bases    []string // per host: http://ip:port
	wg       sync.WaitGroup
	bufs     sync.Pool
	requests atomic.Int64
	bytes    atomic.Int64

	head, foot string
	articles   []string // static body blocks, one per page mod len
	news       []string // the pool the changing block draws from
	period     []time.Duration
	phase      []float64
}

// startPages starts the site: one listener per host address.
func startPages(o PageOptions) (*pageServer, error) {
	o = o.withDefaults()
	s := &pageServer{o: o}
	s.bufs.New = func() any { return new(bytes.Buffer) }
	s.build()
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	ip := o.FirstIP
	for h := range o.Hosts {
		if !ip.IsLoopback() {
			s.close()
			return nil, fmt.Errorf("page server: host %d would listen on %s, which is not loopback: use fewer hosts", h, ip)
		}
		ln, err := net.Listen("tcp", netip.AddrPortFrom(ip, 0).String())
		if err != nil {
			s.close()
			return nil, fmt.Errorf("page server: listen on %s: %w", ip, err)
		}
		s.lns = append(s.lns, ln)
		s.bases = append(s.bases, "http://"+ln.Addr().String())
		ip = ip.Next()
	}
	for _, ln := range s.lns {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			_ = s.srv.Serve(ln) // returns http.ErrServerClosed on Close
		}()
	}
	return s, nil
}

// urls lists every page, host by host.
func (s *pageServer) urls() []string {
	out := make([]string, 0, len(s.bases)*s.o.PagesPerHost)
	for h, base := range s.bases {
		for p := range s.o.PagesPerHost {
			out = append(out, fmt.Sprintf("%s/h%d/p%d", base, h, p))
		}
	}
	return out
}

// close stops the site.
func (s *pageServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close()
	}
	for _, ln := range s.lns {
		_ = ln.Close() // already closed by Shutdown when it was serving
	}
	s.wg.Wait()
}

// pageWords is the vocabulary the generated prose draws from.
var pageWords = strings.Fields(`the crawler keeps a local copy of pages fresh within a budget of fetches per
second while every host is visited politely and each change is detected stored and announced prices listings
news documentation government notices archive versions estimate rate poisson freshness age optimal
allocation uniform proportional weight schedule queue worker coordinator stream result fold store history
market report quarterly results announced today city council meeting agenda minutes weather forecast
product description specification warranty shipping returns customer reviews rating stock available
library release notes security update changelog migration guide tutorial reference example install`)

// build generates the site's fixed parts once, so serving a page only
// concatenates: the server must stay cheap next to the crawler it feeds.
func (s *pageServer) build() {
	rng := rand.New(rand.NewPCG(s.o.Seed, 0x5eed))
	sentence := func(min, max int) string {
		n := min + rng.IntN(max-min+1)
		var b strings.Builder
		for i := range n {
			w := pageWords[rng.IntN(len(pageWords))]
			if i == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			} else {
				b.WriteByte(' ')
			}
			b.WriteString(w)
		}
		b.WriteString(". ")
		return b.String()
	}
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">`)
	b.WriteString(`<link rel="stylesheet" href="/static/site.css"><style>`)
	for i := range 60 {
		fmt.Fprintf(&b, ".c%d{margin:%dpx;padding:%dpx;color:#%06x;font-size:%.1frem}\n", i, i%7, i%5, rng.IntN(1<<24), 0.8+float64(i%6)/10)
	}
	b.WriteString(`</style><script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}`)
	for i := range 40 {
		fmt.Fprintf(&b, "var cfg%d={id:%d,flag:%t,name:%q};", i, rng.IntN(1e6), i%2 == 0, pageWords[rng.IntN(len(pageWords))])
	}
	b.WriteString("</script>")
	s.head = b.String()

	b.Reset()
	b.WriteString(`<footer class="site-footer"><ul>`)
	for i := range 30 {
		fmt.Fprintf(&b, `<li><a href="/section/%d">%s %s</a></li>`, i, pageWords[rng.IntN(len(pageWords))], pageWords[rng.IntN(len(pageWords))])
	}
	b.WriteString(`</ul><p>Copyright the example publishers. All rights reserved.</p></footer>`)
	b.WriteString(`<script>(function(){var s=document.createElement("script");s.src="/static/analytics.js";document.body.appendChild(s)})();</script></body></html>`)
	s.foot = b.String()

	// Article bodies of 11–39 KiB: with its head (style and scripts, about
	// 7 KiB), news block and footer a page is 20–50 KiB.
	s.articles = make([]string, 32)
	for i := range s.articles {
		b.Reset()
		target := 11<<10 + rng.IntN(27<<10)
		fmt.Fprintf(&b, `<article class="c%d"><h2>%s</h2>`, i, sentence(3, 7))
		for b.Len() < target {
			if rng.IntN(6) == 0 {
				fmt.Fprintf(&b, `<h3>%s</h3>`, sentence(2, 5))
			}
			b.WriteString(`<p>`)
			for range 2 + rng.IntN(5) {
				b.WriteString(sentence(6, 18))
				if rng.IntN(3) == 0 {
					fmt.Fprintf(&b, `<a href="/related/%d">%s</a> `, rng.IntN(1e5), sentence(1, 3))
				}
			}
			b.WriteString("</p>\n")
			if rng.IntN(10) == 0 {
				b.WriteString(`<table class="specs"><tr><th>Item</th><th>Value</th></tr>`)
				for range 5 {
					fmt.Fprintf(&b, `<tr><td>%s</td><td>%d.%02d</td></tr>`, pageWords[rng.IntN(len(pageWords))], rng.IntN(1000), rng.IntN(100))
				}
				b.WriteString("</table>\n")
			}
		}
		b.WriteString("</article>")
		s.articles[i] = b.String()
	}
	s.news = make([]string, 257)
	for i := range s.news {
		s.news[i] = fmt.Sprintf(`<li class="news"><a href="/news/%d">%s</a><p>%s%s</p></li>`, i, sentence(3, 8), sentence(10, 20), sentence(8, 16))
	}
	n := s.o.Hosts * s.o.PagesPerHost
	s.period, s.phase = make([]time.Duration, n), make([]float64, n)
	for i := range n {
		u, k := rng.Float64(), 0
		for k < len(changePeriods)-1 && u > changePeriods[k].share {
			u -= changePeriods[k].share
			k++
		}
		s.period[i], s.phase[i] = changePeriods[k].period, rng.Float64()
	}
}

// version is page i's version at t: it changes every period, at a phase of
// its own so that changes do not arrive in bursts.
func (s *pageServer) version(i int, t time.Time) int64 {
	return int64(float64(t.UnixNano())/float64(s.period[i]) + s.phase[i])
}

// ServeHTTP serves /robots.txt and /h{host}/p{page}.
func (s *pageServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/robots.txt" {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("User-agent: *\nDisallow: /private/\n"))
		return
	}
	h, p, ok := parsePagePath(r.URL.Path)
	if !ok || h >= s.o.Hosts || p >= s.o.PagesPerHost {
		http.NotFound(w, r)
		return
	}
	i := h*s.o.PagesPerHost + p
	now := s.o.Now()
	v := s.version(i, now)
	buf := s.bufs.Get().(*bytes.Buffer)
	defer s.bufs.Put(buf)
	buf.Reset()
	buf.WriteString(s.head)
	// A script that differs on every request, as ad and analytics tags
	// do: the raw bytes always change, the visible text does not.
	fmt.Fprintf(buf, `<script>var pv=%d;</script><title>Page %d of host %d</title></head><body>`, now.UnixNano(), p, h)
	fmt.Fprintf(buf, `<nav class="top"><a href="/">Home</a> <a href="/h%d/p%d">Previous</a> <a href="/h%d/p%d">Next</a></nav>`, h, (p+s.o.PagesPerHost-1)%s.o.PagesPerHost, h, (p+1)%s.o.PagesPerHost)
	fmt.Fprintf(buf, `<main><h1>Page %d of host %d</h1><p class="updated">Revision %d</p><ul class="latest">`, p, h, v)
	// The changing block: five news items that move along with the
	// version, like a "latest" box, so a change is a small diff.
	for k := range 5 {
		buf.WriteString(s.news[(int(v%int64(len(s.news)))+i*7+k)%len(s.news)])
	}
	buf.WriteString("</ul>")
	buf.WriteString(s.articles[i%len(s.articles)])
	buf.WriteString("</main>")
	buf.WriteString(s.foot)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.Header().Set("Cache-Control", "no-cache")
	n, _ := w.Write(buf.Bytes()) // an error means the client went away
	s.requests.Add(1)
	s.bytes.Add(int64(n))
}

// parsePagePath parses /h{host}/p{page}.
func parsePagePath(path string) (host, page int, ok bool) {
	rest, found := strings.CutPrefix(path, "/h")
	if !found {
		return 0, 0, false
	}
	hs, ps, found := strings.Cut(rest, "/p")
	if !found {
		return 0, 0, false
	}
	h, err1 := strconv.Atoi(hs)
	p, err2 := strconv.Atoi(ps)
	if err1 != nil || err2 != nil || h < 0 || p < 0 {
		return 0, 0, false
	}
	return h, p, true
}
