// Package sim is a local website whose pages change under known processes
// and which reports, from its own log, how fresh a crawler's copy really
// was: freshcrawl's ground truth (docs/design.md §4, "Measuring freshness
// honestly"). The crawler's own freshness figures come from its model; sim
// knows every change time (generated deterministically from a seed) and
// every request, and integrates freshness and age (Cho & Garcia-Molina,
// "Synchronizing a database to improve freshness", Definitions 1–3)
// exactly over time, plus the change recall of periodically updated pages
// (Ashish, Kulkarni & Wang) and the content freshness of a keyword-search
// site. The same truth integral and oracle serve the virtual benchmark.
//
// Each host is a distinct loopback address, 127.0.0.2, 127.0.0.3, ..., all
// on one port, so per-host politeness is observable. On Linux the whole
// 127.0.0.0/8 is loopback; elsewhere the addresses may need aliases.
//
// Memory: change times are generated lazily and kept (a page changing once a
// simulated day at Day = 1s accumulates 60 times a minute); every request is
// appended to an in-memory log of about 100 bytes a request, so a crawl of
// 1 000 requests/s for 10 minutes holds roughly 60 MB. This suits benchmark
// and demo runs of minutes, not days.
package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Sim is a simulated multi-host website. Its methods are safe for concurrent
// use.
type Sim struct {
	cfg      Config
	epoch    time.Time // the site's time zero: every page is at version 0
	now      func() time.Time
	vocab    []string
	pages    []*page
	robots   []robotsRules
	robotsTx []string
	search   *searchSite // nil without Config.Search (see search.go)

	mu       sync.Mutex // guards the fields below
	log      []record
	uas      map[string]string // interned User-Agent values
	port     int
	servers  []*http.Server
	stop     func() bool // stops the context.AfterFunc registered by Start
	started  bool
	closed   bool
	serveErr error

	wg sync.WaitGroup // Serve goroutines
}

// page is one simulated page and its lazily generated change schedule.
type page struct {
	index int
	host  int
	kind  string // "poisson", "periodic" or "scripted"
	info  PageInfo
	// bodyOf is the page whose content this one serves: itself, or the
	// source of a scripted mirror.
	bodyOf int

	mu        sync.Mutex // guards sched and the render cache
	sched     *schedule
	cacheVer  int
	cacheBody []byte
	cacheETag string
}

// PageInfo describes one page and its true change process, for the oracle of
// docs/design.md §4 (the optimum of §3.2 computed with the true rates).
type PageInfo struct {
	Index     int    `json:"index"`
	URL       string `json:"url"`
	Host      string `json:"host"` // IP address of the host
	HostIndex int    `json:"host_index"`
	Kind      string `json:"kind"` // "poisson", "periodic" or "scripted"
	// Rate is the true mean number of changes per real second; for a
	// periodic page, len(Phases)/Period.
	Rate float64 `json:"rate_per_second"`
	// RatePerDay is Rate in changes per simulated day.
	RatePerDay float64 `json:"rate_per_day"`
	// Period, Phases and Jitter are set for periodic pages only.
	Period time.Duration   `json:"period_ns,omitempty"`
	Phases []time.Duration `json:"phases_ns,omitempty"`
	Jitter time.Duration   `json:"jitter_ns,omitempty"`
	// LastModified is how the page's server fills Last-Modified.
	LastModified LastModifiedMode `json:"last_modified"`
	// NoLastModified and Feed are the periodic class's (PeriodicClass).
	NoLastModified bool   `json:"no_last_modified,omitempty"`
	Feed           string `json:"feed,omitempty"`
}

// record is one logged request, kept compact because runs log many.
type record struct {
	off        time.Duration // since the epoch
	path       string
	ua         string
	bytes      int64
	page       int32 // -1 when the path is not a page
	version    int32 // version served (200 or 304 on a page), else -1
	status     int16
	host       uint8
	method     uint8
	disallowed bool
	aborted    bool // the body could not be written in full
}

const (
	methodGET uint8 = iota
	methodHEAD
	methodOther
)

// Request is one logged request, as returned by Requests.
type Request struct {
	Time      time.Time `json:"time"`
	Host      int       `json:"host"` // host index
	Method    string    `json:"method"`
	Path      string    `json:"path"`
	Page      int       `json:"page"` // -1 when the path is not a page
	Status    int       `json:"status"`
	Version   int       `json:"version"` // version served, -1 when none
	Bytes     int64     `json:"bytes"`
	UserAgent string    `json:"user_agent"`
	// Disallowed is set when robots.txt of the host forbade this request
	// for this user agent.
	Disallowed bool `json:"disallowed"`
}

const maxInternedUAs = 256

// New validates cfg, applies defaults and builds the site. The epoch (time
// zero, when every page is at version 0) is cfg.Now() at this call.
func New(cfg Config) (*Sim, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Sim{
		cfg:   cfg,
		epoch: cfg.Now(),
		now:   cfg.Now,
		vocab: strings.Fields(vocabulary),
		uas:   make(map[string]string),
		port:  cfg.Port,
	}
	for h := range cfg.Hosts {
		body, ok := cfg.Robots[h]
		if !ok {
			body = DefaultRobots
		}
		s.robotsTx = append(s.robotsTx, body)
		s.robots = append(s.robots, parseRobots(body))
	}

	// Assign classes to pages: exact counts by largest remainder, then a
	// seeded permutation so a class is not tied to page numbers or hosts.
	shares := make([]float64, 0, len(cfg.Mix)+len(cfg.Periodic))
	for _, c := range cfg.Mix {
		shares = append(shares, c.Share)
	}
	periodic := make([]*PeriodicClass, len(cfg.Periodic))
	for i, c := range cfg.Periodic {
		c.Phases = slices.Clone(c.Phases)
		slices.Sort(c.Phases)
		periodic[i] = &c
		shares = append(shares, c.Share)
	}
	class := make([]int, 0, cfg.Pages)
	for ci, n := range classCounts(shares, cfg.Pages) {
		for range n {
			class = append(class, ci)
		}
	}
	perm := rand.New(rand.NewPCG(splitmix(cfg.Seed), splitmix(^cfg.Seed))).Perm(cfg.Pages)

	// Last-Modified behaviours: exact counts, and a permutation of their
	// own so that they are independent of the change classes.
	lmMode := make([]LastModifiedMode, cfg.Pages)
	if len(cfg.LastModified) > 0 {
		lshares := make([]float64, len(cfg.LastModified))
		for i, c := range cfg.LastModified {
			lshares[i] = c.Share
		}
		modes := make([]LastModifiedMode, 0, cfg.Pages)
		for ci, n := range classCounts(lshares, cfg.Pages) {
			for range n {
				modes = append(modes, cfg.LastModified[ci].Mode)
			}
		}
		lperm := rand.New(rand.NewPCG(splitmix(cfg.Seed^0x6c6d), splitmix(^cfg.Seed^0x6c6d))).Perm(cfg.Pages)
		for i := range lmMode {
			lmMode[i] = modes[lperm[i]]
		}
	}

	daySec := cfg.Day.Seconds()
	s.pages = make([]*page, cfg.Pages)
	for i := range s.pages {
		if cfg.Scripted != nil {
			s.pages[i] = scriptedPage(cfg, i, lmMode[i])
			continue
		}
		ci := class[perm[i]]
		p := &page{index: i, host: i % cfg.Hosts, cacheVer: -1, bodyOf: i}
		p.info = PageInfo{Index: i, Host: hostIP(p.host), HostIndex: p.host, LastModified: lmMode[i]}
		if ci < len(cfg.Mix) {
			rate := cfg.Mix[ci].Rate / daySec
			p.kind, p.sched = "poisson", newSchedule(cfg.Seed, i, rate, nil)
			p.info.Rate = rate
		} else {
			pc := periodic[ci-len(cfg.Mix)]
			p.kind, p.sched = "periodic", newSchedule(cfg.Seed, i, 0, pc)
			p.info.Rate = float64(len(pc.Phases)) / pc.Period.Seconds()
			p.info.Period, p.info.Phases, p.info.Jitter = pc.Period, slices.Clone(pc.Phases), pc.Jitter
			p.info.NoLastModified, p.info.Feed = pc.NoLastModified, pc.Feed
			if pc.NoLastModified {
				p.info.LastModified = LMNone
			}
		}
		p.info.Kind = p.kind
		p.info.RatePerDay = p.info.Rate * daySec
		s.pages[i] = p
	}
	if cfg.Search != nil {
		s.search = newSearchSite(cfg.Search.withDefaults(), s.vocab)
	}
	return s, nil
}

// hostIP returns the loopback address of host index h.
func hostIP(h int) string { return "127.0.0." + strconv.Itoa(h+2) }

// Epoch returns the site's time zero: every page is at version 0 then.
func (s *Sim) Epoch() time.Time { return s.epoch }

// Port returns the port every host listens on (the configured one before
// Start).
func (s *Sim) Port() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.port
}

// Hosts returns the host addresses, index i at position i.
func (s *Sim) Hosts() []string {
	out := make([]string, s.cfg.Hosts)
	for h := range out {
		out[h] = hostIP(h)
	}
	return out
}

func (s *Sim) pageURL(i int, port int) string {
	return "http://" + net.JoinHostPort(hostIP(i%s.cfg.Hosts), strconv.Itoa(port)) + "/p/" + strconv.Itoa(i)
}

// URLs returns the page URLs (never the /private/ ones), e.g.
// http://127.0.0.3:PORT/p/17. With Config.Port 0 they are final only after
// Start has picked the port.
func (s *Sim) URLs() []string {
	port := s.Port()
	out := make([]string, len(s.pages))
	for i := range out {
		out[i] = s.pageURL(i, port)
	}
	return out
}

// Pages describes every page and its true change process.
func (s *Sim) Pages() []PageInfo {
	port := s.Port()
	out := make([]PageInfo, len(s.pages))
	for i, p := range s.pages {
		out[i] = p.info
		out[i].Phases = slices.Clone(p.info.Phases)
		out[i].URL = s.pageURL(i, port)
	}
	return out
}

// VersionAt returns the version of page i at time t: the number of changes
// at or before t. It panics if i is out of range.
func (s *Sim) VersionAt(i int, t time.Time) int {
	p := s.pages[i]
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sched.countAt(t.Sub(s.epoch))
}

// ChangeTimes returns the change log of page i within [from, to): the times
// at which new versions were published. The k-th change after the epoch
// (counting from 0) publishes version k+1. It panics if i is out of range.
func (s *Sim) ChangeTimes(i int, from, to time.Time) []time.Time {
	p := s.pages[i]
	f, t := from.Sub(s.epoch), to.Sub(s.epoch)
	p.mu.Lock()
	ch := p.sched.until(t)
	p.mu.Unlock()
	var out []time.Time
	for _, c := range ch {
		if c >= f && c < t {
			out = append(out, s.epoch.Add(c))
		}
	}
	return out
}

// Requests returns a copy of the request log in arrival order.
func (s *Sim) Requests() []Request {
	s.mu.Lock()
	log := s.log[:len(s.log):len(s.log)]
	s.mu.Unlock()
	out := make([]Request, len(log))
	for i, r := range log {
		out[i] = Request{
			Time:       s.epoch.Add(r.off),
			Host:       int(r.host),
			Method:     [...]string{"GET", "HEAD", "OTHER"}[r.method],
			Path:       r.path,
			Page:       int(r.page),
			Status:     int(r.status),
			Version:    int(r.version),
			Bytes:      r.bytes,
			UserAgent:  r.ua,
			Disallowed: r.disallowed,
		}
	}
	return out
}

// Start listens on every host address and serves in the background until
// ctx is done or Close is called. It returns once all listeners are bound, so
// URLs are final when it returns nil. With Config.Port 0 it picks one port
// free on every host address, picking again when the port the first address
// got is taken on another.
func (s *Sim) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return errors.New("sim: Start after Close")
	case s.started:
		return errors.New("sim: already started")
	}
	lns, port, err := s.listenAll()
	if err != nil {
		return err
	}
	s.started, s.port = true, port
	for h, ln := range lns {
		srv := &http.Server{
			Handler:           s.hostHandler(h),
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       time.Minute,
		}
		s.servers = append(s.servers, srv)
		s.wg.Go(func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.mu.Lock()
				s.serveErr = errors.Join(s.serveErr, fmt.Errorf("sim: serve %s: %w", ln.Addr(), err))
				s.mu.Unlock()
			}
		})
	}
	s.stop = context.AfterFunc(ctx, func() { _ = s.Close() })
	return nil
}

const listenAttempts = 20

// listenAll binds every host address on one port.
func (s *Sim) listenAll() ([]net.Listener, int, error) {
	for attempt := 1; ; attempt++ {
		port := s.cfg.Port
		lns := make([]net.Listener, 0, s.cfg.Hosts)
		var err error
		retry := false
		for h := range s.cfg.Hosts {
			addr := net.JoinHostPort(hostIP(h), strconv.Itoa(port))
			ln, lerr := net.Listen("tcp4", addr)
			if lerr != nil {
				err = fmt.Errorf("sim: listen on host %d (%s): %w", h, addr, lerr)
				// A port picked on the first address may be taken on a
				// later one: pick again. Anything else will not improve.
				retry = s.cfg.Port == 0 && h > 0 && errors.Is(lerr, syscall.EADDRINUSE)
				if !errors.Is(lerr, syscall.EADDRINUSE) {
					err = fmt.Errorf("%w (every host needs its own loopback address; on Linux all of 127.0.0.0/8 is loopback, elsewhere add an alias, e.g. `ifconfig lo0 alias %s`)", err, hostIP(h))
				}
				break
			}
			if port == 0 {
				port = ln.Addr().(*net.TCPAddr).Port
			}
			lns = append(lns, ln)
		}
		if err == nil {
			return lns, port, nil
		}
		for _, ln := range lns {
			_ = ln.Close()
		}
		if !retry || attempt == listenAttempts {
			return nil, 0, err
		}
	}
}

// Close stops serving, waits for the server goroutines and unregisters the
// context hook of Start. It is idempotent and may be called before Start.
func (s *Sim) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.closed = true
	servers, stop := s.servers, s.stop
	s.mu.Unlock()

	if stop != nil {
		stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var errs []error
	for h, srv := range servers {
		if err := srv.Shutdown(ctx); err != nil {
			// Requests still running after the grace period: cut them off.
			errs = append(errs, fmt.Errorf("sim: shutdown host %d (%s): %w", h, hostIP(h), err), srv.Close())
		}
	}
	s.wg.Wait()
	s.mu.Lock()
	errs = append(errs, s.serveErr)
	s.mu.Unlock()
	return errors.Join(errs...)
}

// hostHandler serves host h: /robots.txt, / (an index of the host's pages),
// /p/N for the pages of this host, and /private/... (disallowed by the
// default robots.txt), plus /search and /item/{id} on the search host when
// Config.Search is set, and the sitemap and feed Config.Signals publishes
// (sitemap.go). Every request is logged.
func (s *Sim) hostHandler(h int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.serveHost(h, w, r)
	})
}

func (s *Sim) serveHost(h int, w http.ResponseWriter, r *http.Request) {
	now := s.now()
	path := r.URL.Path
	ua := r.Header.Get("User-Agent")
	rec := record{
		off:        now.Sub(s.epoch),
		path:       path,
		page:       -1,
		version:    -1,
		host:       uint8(h),
		disallowed: s.robots[h].disallowed(ua, path),
	}
	switch r.Method {
	case http.MethodGet:
		rec.method = methodGET
	case http.MethodHead:
		rec.method = methodHEAD
	default:
		rec.method = methodOther
	}
	defer func() { s.record(rec, ua) }()

	hdr := w.Header()
	hdr.Set("Date", now.UTC().Format(http.TimeFormat))
	if rec.method == methodOther {
		hdr.Set("Allow", "GET, HEAD")
		rec.status = http.StatusMethodNotAllowed
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}

	var body []byte
	switch {
	case path == "/robots.txt":
		hdr.Set("Content-Type", "text/plain; charset=utf-8")
		body = []byte(s.robotsBody(h))
	case path == "/":
		hdr.Set("Content-Type", "text/html; charset=utf-8")
		body = renderIndex(h, s.cfg.Hosts, len(s.pages))
	case path == "/private" || strings.HasPrefix(path, "/private/"):
		hdr.Set("Content-Type", "text/html; charset=utf-8")
		body = []byte(privateBody)
	case s.search != nil && h == s.search.cfg.Host && (path == "/search" || strings.HasPrefix(path, "/item/")):
		s.serveSearch(w, r, &rec)
		return
	case isSignalPath(path):
		s.serveSignal(h, w, r, now, &rec)
		return
	case strings.HasPrefix(path, "/p/"):
		i, err := strconv.Atoi(path[len("/p/"):])
		if err != nil || i < 0 || i >= len(s.pages) || i%s.cfg.Hosts != h {
			rec.status = http.StatusNotFound
			http.NotFound(w, r)
			return
		}
		if d := s.cfg.Delay; d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-r.Context().Done():
			}
			t.Stop()
		}
		s.servePage(w, r, now, i, &rec)
		return
	default:
		rec.status = http.StatusNotFound
		http.NotFound(w, r)
		return
	}
	s.writeBody(w, r, body, http.StatusOK, &rec)
}

// servePage serves page i as of now, honouring conditional requests.
//
// ETag identifies (page, version) exactly and is preferred. Last-Modified has
// one-second resolution, and with scaled time several versions can share a
// second, so If-Modified-Since is honoured only when no If-None-Match is
// sent, and then only when it is unambiguous: the date is a whole second
// after the last change, or it names the second of the last change and no
// other change happened in that second (an echoed Last-Modified then
// identifies the current version). A date in the future is ignored. The one
// residual risk is a client that sends its own fetch time rather than the
// Last-Modified it received, fetched earlier in the same second as the last
// change; RFC 9110 §13.1.3 asks clients to echo Last-Modified.
func (s *Sim) servePage(w http.ResponseWriter, r *http.Request, now time.Time, i int, rec *record) {
	p := s.pages[i]
	p.mu.Lock()
	ver := p.sched.countAt(rec.off)
	var last, prev time.Duration // offsets of the last two changes
	if ver > 0 {
		last = p.sched.times[ver-1]
	}
	if ver > 1 {
		prev = p.sched.times[ver-2]
	}
	if p.cacheVer != ver {
		p.cacheVer = ver
		if p.info.Feed != "" {
			p.cacheBody = renderFeed(p.info.Feed, s.cfg.Seed, s.vocab, i, s.epoch, p.sched.times[:ver])
		} else {
			p.cacheBody = render(s.cfg.Seed, s.vocab, p.bodyOf, ver, s.cfg.Hosts, len(s.pages))
		}
		p.cacheETag = etagFor(s.cfg.Seed, p.bodyOf, ver)
	}
	body, etag := p.cacheBody, p.cacheETag
	p.mu.Unlock()

	rec.page, rec.version = int32(i), int32(ver)
	lastMod, hasLM := s.lastModified(i, now, last)
	hdr := w.Header()
	hdr.Set("Content-Type", feedContentType(p.info.Feed))
	hdr.Set("ETag", etag)
	s.setCacheHeaders(hdr, i)
	if hasLM {
		hdr.Set("Last-Modified", lastMod.Format(http.TimeFormat))
	}

	notModified := false
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		notModified = etagMatches(inm, etag)
	} else if ims := r.Header.Get("If-Modified-Since"); ims != "" && hasLM {
		// A server answers If-Modified-Since from the date it sends, true
		// or not: a constant date answers 304 to a changed page, which is
		// why clients prefer the ETag.
		if t, err := http.ParseTime(ims); err == nil && !t.After(now) && !lastMod.After(t) {
			sharedSecond := p.info.LastModified == LMTrue && ver > 1 && s.epoch.Add(prev).UTC().Truncate(time.Second).Equal(lastMod)
			notModified = t.Sub(lastMod) >= time.Second || !sharedSecond
		}
	}
	if notModified {
		hdr.Del("Content-Type")
		rec.status = http.StatusNotModified
		w.WriteHeader(http.StatusNotModified)
		return
	}
	s.writeBody(w, r, body, http.StatusOK, rec)
}

// lastModifiedAt is the Last-Modified header page i's server sends to a
// request at `at` (one-second resolution, as HTTP dates), and false when it
// sends none: the value the page serves over HTTP. It panics if i is out
// of range.
func (s *Sim) lastModifiedAt(i int, at time.Time) (time.Time, bool) {
	p := s.pages[i]
	p.mu.Lock()
	ver := p.sched.countAt(at.Sub(s.epoch))
	var last time.Duration
	if ver > 0 {
		last = p.sched.times[ver-1]
	}
	p.mu.Unlock()
	return s.lastModified(i, at, last)
}

// LastModifiedFor is the Last-Modified header page i's server would send at
// `at` if its last change had been at offset lastChange from the epoch (0:
// none yet): LastModified for a caller that keeps its own change times
// (the virtual benchmark, whose drift workload splices two sims).
func (s *Sim) LastModifiedFor(i int, at time.Time, lastChange time.Duration) (time.Time, bool) {
	return s.lastModified(i, at, lastChange)
}

// lastModified is the header of page i at now whose last change was at
// offset last.
func (s *Sim) lastModified(i int, now time.Time, last time.Duration) (time.Time, bool) {
	var t time.Time
	switch s.pages[i].info.LastModified {
	case LMNone:
		return time.Time{}, false
	case LMResponseTime:
		t = now
	case LMConstant:
		t = s.epoch.Add(-30 * s.cfg.Day)
	case LMEveryRequest:
		// A pseudo-random lag of 5–50 % of a day, drawn afresh for every
		// request time: the date moves although the content does not.
		u := float64(splitmix(s.cfg.Seed^uint64(i)*0x9e3779b97f4a7c15^uint64(now.UnixNano()))>>11) / float64(uint64(1)<<53)
		t = now.Add(-time.Duration((0.05 + 0.45*u) * float64(s.cfg.Day)))
	default:
		t = s.epoch.Add(last)
	}
	return t.UTC().Truncate(time.Second), true
}

func (s *Sim) writeBody(w http.ResponseWriter, r *http.Request, body []byte, status int, rec *record) {
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	rec.status = int16(status)
	if r.Method == http.MethodHead {
		return
	}
	n, err := w.Write(body)
	rec.bytes = int64(n)
	rec.aborted = err != nil
}

// etagMatches implements the weak comparison RFC 9110 §13.1.2 prescribes for
// If-None-Match: any listed tag equal to etag, ignoring W/, or "*".
func etagMatches(header, etag string) bool {
	for tag := range strings.SplitSeq(header, ",") {
		tag = strings.TrimSpace(tag)
		if tag == "*" || strings.TrimPrefix(tag, "W/") == etag {
			return true
		}
	}
	return false
}

// record appends rec to the request log, interning the user agent so a long
// crawl by one client does not keep one copy per request.
func (s *Sim) record(rec record, ua string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u, ok := s.uas[ua]; ok {
		ua = u
	} else if len(s.uas) < maxInternedUAs {
		ua = strings.Clone(ua)
		s.uas[ua] = ua
	}
	rec.ua = ua
	s.log = append(s.log, rec)
}
