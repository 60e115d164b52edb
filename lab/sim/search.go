package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/freshcrawl/freshcrawl/internal/source"
	"github.com/freshcrawl/freshcrawl/worker/probeparse"
)

// SearchConfig adds a keyword-search source to one host of the site: the
// synthetic paper-citation data of the content-freshness paper §5.2, served the way a scholarly
// search engine serves it (docs/design.md §3.6), so keyword probes and content
// freshness can be measured against a truth that knows every citation.
//
// The corpus is generated from Seed alone:
//
//   - Papers papers. The initial citation count follows the paper's power
//     law N_C(x) = 2/x³ for x ≥ 1, i.e. a Pareto tail P(X > x) = x⁻² (tail
//     index 2): x = (1−u)^(−1/2) for uniform u, count = ⌊x⌋, so
//     P(count ≥ k) = 1/k² (a quarter of the papers have ≥ 2 citations, a
//     ninth ≥ 3) and the mean count is π²/6 ≈ 1.64. Counts are capped at
//     MaxCitations so a one-in-a-million draw cannot generate millions of
//     updates a second.
//   - Citations then grow by one at the jumps of a Poisson process whose
//     rate is a quarter of the initial count per time unit (the attachment
//     rate A_k = 0.25·k of §5.2); TimeUnit is the real duration of one
//     time unit.
//   - Authors come in groups, as the paper's 200 groups of at most 10
//     papers, about 5 on average: papers are shuffled and dealt into groups
//     of 1..9 papers (uniform, mean 5), each group sharing a lead author
//     whose name appears on no other paper, so the query "lead author"
//     synchronises exactly its group. Each paper also has 0–2 co-authors of
//     its own. 1 000 papers give about 200 groups.
//   - Titles have 4–7 distinct words drawn from a Zipf vocabulary
//     (P(rank k) ∝ (k+3)^−1.1, k ≥ 0; the site's crawler words take the top
//     ranks, synthetic words the rest), with English stopwords sprinkled
//     in, so single title words are unselective and pairs selective (paper
//     §5.3).
//
// Author names never coincide with title words, so an author query matches
// only that author's papers.
//
// The list of tracked papers (SearchItems) need not match the site: Absent
// papers are on the list but not on the site (no result lists them, their
// item page is a 404), Renamed papers are listed under an older title than
// the site shows, so queries made of the old title's words miss them (their
// authors still find them), and Untracked papers are on the site but not on
// the list, so result lists hold papers nobody tracks and a query's server
// count exceeds its local count. All three are chosen from Seed,
// independently of the rest of the corpus.
type SearchConfig struct {
	// Papers is the number of papers; default 1000.
	Papers int
	// K is the number of results a page; default 10.
	K int
	// TimeUnit is the real duration of one paper time unit; default 1s.
	TimeUnit time.Duration
	// Seed makes the corpus and every citation jump reproducible. It is
	// independent of Config.Seed.
	Seed uint64
	// Host is the index of the host serving /search and /item/{id};
	// default 0 (127.0.0.2). Its other paths are unchanged.
	Host int
	// Weight selects w(r) in the truth of ContentFreshness.
	Weight SearchWeight
	// MaxCitations caps the initial citation count; default 1000.
	MaxCitations int
	// Absent, Renamed and Untracked are the shares of the Papers that are
	// listed but not on the site, listed under an older title, and on the
	// site but not listed; each in [0, 1], together at most 1, default 0.
	Absent, Renamed, Untracked float64
}

// SearchWeight selects the weight w(r) of a paper in
// [Sim.ContentFreshness].
type SearchWeight int

const (
	// weightInitialCitations weighs a paper by its initial citation count,
	// the paper's §3.1 w(r) = r.Num_of_citation, frozen at time zero so the
	// truth does not depend on the crawler. (A crawler that weighs by its
	// copy's current count sees weights drift upwards as citations grow.)
	weightInitialCitations SearchWeight = iota
	// weightUnit weighs every paper 1 (plain mean dissimilarity).
	weightUnit
)

const (
	defaultSearchPapers = 1000
	defaultSearchK      = 10
	defaultMaxCitations = 1000
	maxSearchPapers     = 1_000_000
	maxSearchK          = 1000
	// searchSourceName is the name of the source SearchSource defines.
	searchSourceName = "sim-papers"
)

func (c SearchConfig) withDefaults() SearchConfig {
	if c.Papers == 0 {
		c.Papers = defaultSearchPapers
	}
	if c.K == 0 {
		c.K = defaultSearchK
	}
	if c.TimeUnit == 0 {
		c.TimeUnit = time.Second
	}
	if c.MaxCitations == 0 {
		c.MaxCitations = defaultMaxCitations
	}
	return c
}

// validate checks c (before defaults) against the number of hosts.
func (c SearchConfig) validate(hosts int) error {
	switch {
	case c.Papers < 0 || c.Papers > maxSearchPapers:
		return fmt.Errorf("sim: Config.Search.Papers = %d: must be in 0..%d (0 = %d)", c.Papers, maxSearchPapers, defaultSearchPapers)
	case c.K < 0 || c.K > maxSearchK:
		return fmt.Errorf("sim: Config.Search.K = %d: must be in 0..%d (0 = %d)", c.K, maxSearchK, defaultSearchK)
	case c.TimeUnit < 0:
		return fmt.Errorf("sim: Config.Search.TimeUnit = %v: must be > 0 (0 = 1s)", c.TimeUnit)
	case c.Host < 0 || c.Host >= hosts:
		return fmt.Errorf("sim: Config.Search.Host = %d: no such host (Hosts = %d)", c.Host, hosts)
	case c.Weight != weightInitialCitations && c.Weight != weightUnit:
		return fmt.Errorf("sim: Config.Search.Weight = %d: unknown weight", c.Weight)
	case c.MaxCitations < 0:
		return fmt.Errorf("sim: Config.Search.MaxCitations = %d: must be ≥ 0 (0 = %d)", c.MaxCitations, defaultMaxCitations)
	case !(c.Absent >= 0 && c.Renamed >= 0 && c.Untracked >= 0 && c.Absent+c.Renamed+c.Untracked <= 1):
		return fmt.Errorf("sim: Config.Search.Absent = %v, Renamed = %v, Untracked = %v: must be ≥ 0 and sum to at most 1", c.Absent, c.Renamed, c.Untracked)
	}
	return nil
}

// searchSite is the generated corpus and its serve log.
type searchSite struct {
	cfg     SearchConfig
	papers  []*paper
	byID    map[string]int
	index   map[string][]int32 // keyword → paper indices, ascending
	authors int                // number of lead-author groups

	mu     sync.Mutex // guards every paper's sched and served
	served []served
}

// paper is one item of the search source.
type paper struct {
	id        string
	title     string
	listed    string   // the title on the list of tracked papers when renamed, else ""
	absent    bool     // on the list, not on the site
	untracked bool     // on the site, not on the list
	authors   []string // lead author first
	group     int
	initial   int
	rate      float64 // citations per time unit
	weight    float64
	keywords  []string // lower-cased title words and author names
	sched     *schedule
}

// served is one paper value delivered in a successful response: the
// crawler's copy of the paper from then on (until the next one).
type served struct {
	off   time.Duration
	paper int32
	value int64
}

// SearchItem is one tracked paper as the crawler's seed file lists it: its
// id, title (the older one for a renamed paper), authors (", "-separated,
// as result pages show them), initial citation count (the crawler's copy at
// time zero) and the weight w(r) the truth gives it (SearchConfig.Weight),
// an importance that comes with the list.
type SearchItem struct {
	ID        string  `json:"id"`
	Title     string  `json:"title"`
	Authors   string  `json:"authors"`
	Citations int     `json:"citations"`
	Weight    float64 `json:"weight"`
}

// Letters of the synthetic words and names, and the stopwords sprinkled
// into titles (all in source.EnglishStopwords, so `stopwords: english`
// drops them).
const (
	consonantList = "b d f g k l m n p r s t v z ch sh tr br"
	vowelList     = "a e i o u ai ou"
	nameEndList   = "ov ez son ski ani ura elli berg oto ić"
	stopFillList  = "of for the and in on with a"
	// maxSearchPage bounds the page parameter so page arithmetic cannot
	// overflow.
	maxSearchPage = 1_000_000
)

// wordGen makes unique pronounceable synthetic words. When draws keep
// colliding with words already used, it lengthens words by a syllable, so
// generation stays fast for any corpus size.
type wordGen struct {
	r                  *rand.Rand
	consonants, vowels []string
	used               map[string]bool
	extra, misses      int
}

func (g *wordGen) syllables(n int) string {
	var b strings.Builder
	for range n + g.extra {
		b.WriteString(g.consonants[g.r.IntN(len(g.consonants))])
		b.WriteString(g.vowels[g.r.IntN(len(g.vowels))])
	}
	return b.String()
}

// unique returns the first result of draw whose lower-cased form
// is unused, and marks it used.
func (g *wordGen) unique(draw func() string) string {
	for {
		w := draw()
		if k := strings.ToLower(w); !g.used[k] {
			g.used[k] = true
			g.misses = 0
			return w
		}
		if g.misses++; g.misses == 8 {
			g.extra++
			g.misses = 0
		}
	}
}

func capitalise(s string) string {
	for i, r := range s {
		return string(unicode.ToUpper(r)) + s[i+len(string(r)):]
	}
	return s
}

// newSearchSite generates the corpus of c (defaults applied).
func newSearchSite(c SearchConfig, vocab []string) *searchSite {
	r := rand.New(rand.NewPCG(splitmix(c.Seed^0x5ea2c4), splitmix(c.Seed+0x7a9e12)))
	site := &searchSite{cfg: c, byID: make(map[string]int, c.Papers), index: map[string][]int32{}}
	g := &wordGen{r: r, consonants: strings.Fields(consonantList), vowels: strings.Fields(vowelList), used: map[string]bool{}}
	nameEnds, stopFiller := strings.Fields(nameEndList), strings.Fields(stopFillList)

	// Title vocabulary: the site's crawler words first (most frequent under
	// Zipf), then unique synthetic words, about two per paper. Names share
	// the used set, so no author name is also a title word.
	for _, w := range stopFiller {
		g.used[w] = true
	}
	var words []string
	for _, w := range vocab {
		if !g.used[w] {
			g.used[w] = true
			words = append(words, w)
		}
	}
	for len(words) < max(2*c.Papers, 200) {
		words = append(words, g.unique(func() string { return g.syllables(2 + r.IntN(2)) }))
	}
	g.extra = 0
	zipf := rand.NewZipf(r, 1.1, 3, uint64(len(words)-1))
	name := func() string {
		return g.unique(func() string {
			return capitalise(g.syllables(1+r.IntN(2)) + nameEnds[r.IntN(len(nameEnds))])
		})
	}

	group, leads := authorGroups(r, c.Papers, name)
	site.authors = len(leads)

	width := len(strconv.Itoa(max(c.Papers-1, 0)))
	schedSeed := splitmix(c.Seed ^ 0xc17a7e)
	kind, lr := listKinds(c)
	lzipf := rand.NewZipf(lr, 1.1, 3, uint64(len(words)-1))
	for i := range c.Papers {
		p := &paper{id: fmt.Sprintf("p%0*d", width, i), group: group[i], absent: kind[i] == 'a', untracked: kind[i] == 'u'}
		// Title: 4–7 distinct content words, stopwords sprinkled between.
		n := 4 + r.IntN(4)
		content := distinctWords(words, zipf, n, nil)
		p.title = capitalise(strings.Join(sprinkle(r, content, stopFiller), " "))
		if kind[i] == 'r' {
			// The listed title shares no word with the site's.
			p.listed = capitalise(strings.Join(distinctWords(words, lzipf, n, content), " "))
		}
		p.authors = append(p.authors, leads[group[i]])
		for range r.IntN(3) {
			p.authors = append(p.authors, name())
		}
		// Citations: ⌊(1−u)^(−1/2)⌋, Pareto with tail index 2 (§5.2).
		x := 1 / math.Sqrt(1-r.Float64())
		p.initial = int(min(math.Floor(x), float64(c.MaxCitations)))
		p.rate = float64(p.initial) / 4
		p.weight = 1
		if c.Weight == weightInitialCitations {
			p.weight = float64(p.initial)
		}
		p.sched = newSchedule(schedSeed, i, p.rate/c.TimeUnit.Seconds(), nil)

		site.add(i, p)
	}
	return site
}

// authorGroups deals the papers, shuffled, into groups of 1..9, each led by
// an author name drawn from name: the group of each paper and the lead of
// each group.
func authorGroups(r *rand.Rand, papers int, name func() string) ([]int, []string) {
	group := make([]int, papers)
	perm := r.Perm(papers)
	var leads []string
	for off := 0; off < papers; {
		size := min(1+r.IntN(9), papers-off)
		for _, p := range perm[off : off+size] {
			group[p] = len(leads)
		}
		leads = append(leads, name())
		off += size
	}
	return group, leads
}

// listKinds marks each paper absent ('a'), renamed ('r'), untracked ('u')
// or none (0) on the list of tracked papers. The list's differences from
// the site come from their own stream, returned for the renamed titles, so
// that Absent and Renamed leave the rest of the corpus unchanged.
func listKinds(c SearchConfig) ([]byte, *rand.Rand) {
	lr := rand.New(rand.NewPCG(splitmix(c.Seed^0xab5e47), splitmix(c.Seed+0x9e4a3e)))
	order := lr.Perm(c.Papers)
	nAbsent := int(math.Round(c.Absent * float64(c.Papers)))
	nRenamed := min(int(math.Round(c.Renamed*float64(c.Papers))), c.Papers-nAbsent)
	nUntracked := min(int(math.Round(c.Untracked*float64(c.Papers))), c.Papers-nAbsent-nRenamed)
	kind := make([]byte, c.Papers)
	for k, i := range order[:nAbsent+nRenamed+nUntracked] {
		switch {
		case k < nAbsent:
			kind[i] = 'a'
		case k < nAbsent+nRenamed:
			kind[i] = 'r'
		default:
			kind[i] = 'u'
		}
	}
	return kind, lr
}

// distinctWords draws n distinct words of words by z, none of them in
// avoid.
func distinctWords(words []string, z *rand.Zipf, n int, avoid []string) []string {
	var out []string
	for len(out) < n {
		w := words[z.Uint64()]
		if !slices.Contains(avoid, w) && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// sprinkle puts a stopword of stop after a quarter of the words, the last
// aside.
func sprinkle(r *rand.Rand, words, stop []string) []string {
	var out []string
	for j, w := range words {
		out = append(out, w)
		if j < len(words)-1 && r.IntN(4) == 0 {
			out = append(out, stop[r.IntN(len(stop))])
		}
	}
	return out
}

// add indexes paper i under its keywords, the words of its title and its
// authors' names, and adds it to the site; an absent paper is not found.
func (site *searchSite) add(i int, p *paper) {
	seen := map[string]bool{}
	for _, w := range append(searchTerms(p.title), lowerAll(p.authors)...) {
		if !seen[w] {
			seen[w] = true
			p.keywords = append(p.keywords, w)
			if !p.absent {
				site.index[w] = append(site.index[w], int32(i))
			}
		}
	}
	if !p.absent {
		site.byID[p.id] = i
	}
	site.papers = append(site.papers, p)
}

func lowerAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.ToLower(s)
	}
	return out
}

// searchTerms splits a query or title into lower-cased words (runs of
// letters and digits), the way source's `split: words` does; quotes and
// punctuation are ignored.
func searchTerms(q string) []string {
	return strings.FieldsFunc(strings.ToLower(q), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// match returns the papers matching every term, ascending by index (which
// is id order).
func (site *searchSite) match(terms []string) []int32 {
	if len(terms) == 0 {
		return nil
	}
	lists := make([][]int32, 0, len(terms))
	for _, t := range terms {
		l, ok := site.index[t]
		if !ok {
			return nil
		}
		lists = append(lists, l)
	}
	slices.SortFunc(lists, func(a, b []int32) int { return len(a) - len(b) })
	out := slices.Clone(lists[0])
	for _, l := range lists[1:] {
		keep := out[:0]
		for _, p := range out {
			if _, ok := slices.BinarySearch(l, p); ok {
				keep = append(keep, p)
			}
		}
		out = keep
	}
	return out
}

// valueAt returns paper i's citation count at off. Callers hold site.mu.
func (site *searchSite) valueAt(i int, off time.Duration) int64 {
	p := site.papers[i]
	return int64(p.initial) + int64(p.sched.countAt(off))
}

// serveSearch serves GET /search?q=w1+w2&page=N and GET /item/{id} on the
// search host. The citation counts are those at the request time; a
// successful GET records what it served so ContentFreshness can rebuild the
// crawler's copy from it.
func (s *Sim) serveSearch(w http.ResponseWriter, r *http.Request, rec *record) {
	site := s.search
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	var (
		body  []byte
		shown []int32
	)
	if r.URL.Path == "/search" {
		q := r.URL.Query()
		terms := searchTerms(q.Get("q"))
		page := 1
		if v := q.Get("page"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > maxSearchPage {
				rec.status = http.StatusBadRequest
				http.Error(w, fmt.Sprintf("page: expected an integer in 1..%d", maxSearchPage), http.StatusBadRequest)
				return
			}
			page = n
		}
		if len(terms) == 0 {
			rec.status = http.StatusBadRequest
			http.Error(w, "q: expected at least one keyword", http.StatusBadRequest)
			return
		}
		all := site.match(terms)
		if from := (page - 1) * site.cfg.K; from < len(all) {
			shown = all[from:min(from+site.cfg.K, len(all))]
		}
		site.mu.Lock()
		values := make([]int64, len(shown))
		for k, i := range shown {
			values[k] = site.valueAt(int(i), rec.off)
		}
		site.mu.Unlock()
		body = site.renderResults(q.Get("q"), terms, page, len(all), shown, values)
		s.writeBody(w, r, body, http.StatusOK, rec)
		site.record(r, rec, shown, values)
		return
	}

	id, err := url.PathUnescape(strings.TrimPrefix(r.URL.EscapedPath(), "/item/"))
	i, ok := site.byID[id]
	if err != nil || !ok {
		rec.status = http.StatusNotFound
		http.NotFound(w, r)
		return
	}
	site.mu.Lock()
	v := site.valueAt(i, rec.off)
	site.mu.Unlock()
	shown = []int32{int32(i)}
	s.writeBody(w, r, site.renderItem(i, v), http.StatusOK, rec)
	site.record(r, rec, shown, []int64{v})
}

// record logs the values a successful, complete GET delivered.
func (site *searchSite) record(r *http.Request, rec *record, shown []int32, values []int64) {
	if r.Method != http.MethodGet || rec.aborted || rec.status != http.StatusOK || len(shown) == 0 {
		return
	}
	site.mu.Lock()
	defer site.mu.Unlock()
	for k, i := range shown {
		site.served = append(site.served, served{off: rec.off, paper: i, value: values[k]})
	}
}

// thousands formats n as "1,234", the way search engines print totals.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func (site *searchSite) writeAuthors(b *bytes.Buffer, p *paper) {
	for k, a := range p.authors {
		if k > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(b, `<span class="author">%s</span>`, html.EscapeString(a))
	}
}

func (site *searchSite) renderResults(q string, terms []string, page, total int, shown []int32, values []int64) []byte {
	var b bytes.Buffer
	b.Grow(1024 + 300*len(shown))
	eq := html.EscapeString(q)
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>%s - Search</title>\n</head>\n<body>\n", eq)
	fmt.Fprintf(&b, "<form action=\"/search\"><input name=\"q\" value=\"%s\"><button>Search</button></form>\n", eq)
	noun := "results"
	if total == 1 {
		noun = "result"
	}
	fmt.Fprintf(&b, "<p class=\"total\">%s %s</p>\n<ol class=\"results\" start=\"%d\">\n", thousands(total), noun, (page-1)*site.cfg.K+1)
	for k, i := range shown {
		p := site.papers[i]
		fmt.Fprintf(&b, "<li class=\"result\" data-id=\"%s\">\n<a class=\"title\" href=\"/item/%s\">%s</a>\n<div class=\"authors\">", p.id, p.id, html.EscapeString(p.title))
		site.writeAuthors(&b, p)
		fmt.Fprintf(&b, "</div>\n<div class=\"meta\"><span class=\"citations\">Cited by %s</span> &middot; <span class=\"id\">%s</span></div>\n</li>\n", thousands(int(values[k])), p.id)
	}
	b.WriteString("</ol>\n<nav class=\"pages\">")
	qq := url.QueryEscape(strings.Join(terms, " "))
	if page > 1 {
		fmt.Fprintf(&b, "<a rel=\"prev\" href=\"/search?q=%s&amp;page=%d\">Previous</a> ", qq, page-1)
	}
	if page*site.cfg.K < total {
		fmt.Fprintf(&b, "<a rel=\"next\" href=\"/search?q=%s&amp;page=%d\">Next</a>", qq, page+1)
	}
	b.WriteString("</nav>\n</body>\n</html>\n")
	return b.Bytes()
}

func (site *searchSite) renderItem(i int, value int64) []byte {
	p := site.papers[i]
	var b bytes.Buffer
	t := html.EscapeString(p.title)
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>%s</title>\n</head>\n<body>\n<article class=\"paper\" data-id=\"%s\">\n<h1 class=\"title\">%s</h1>\n<p class=\"authors\">", t, p.id, t)
	site.writeAuthors(&b, p)
	fmt.Fprintf(&b, "</p>\n<p id=\"citations\">Cited by %s</p>\n<p class=\"id\">%s</p>\n</article>\n</body>\n</html>\n", thousands(int(value)), p.id)
	return b.Bytes()
}

// SearchItems lists the tracked papers of the search source (every paper
// but the Untracked ones) with their initial citation counts: the
// tracked-items seed of a crawl (the local relation L at time zero, in sync
// with the server but for Absent and Renamed papers). Nil without
// Config.Search.
func (s *Sim) SearchItems() []SearchItem {
	if s.search == nil {
		return nil
	}
	out := make([]SearchItem, 0, len(s.search.papers))
	for _, p := range s.search.papers {
		if p.untracked {
			continue
		}
		title := p.title
		if p.listed != "" {
			title = p.listed
		}
		out = append(out, SearchItem{ID: p.id, Title: title, Authors: strings.Join(p.authors, ", "), Citations: p.initial, Weight: p.weight})
	}
	return out
}

// WriteSearchItems writes SearchItems as JSON lines, the seed file format.
func (s *Sim) WriteSearchItems(w io.Writer) error {
	enc := json.NewEncoder(w)
	for _, it := range s.SearchItems() {
		if err := enc.Encode(it); err != nil {
			return err
		}
	}
	return nil
}

// SearchURL returns the base URL of the search host, e.g.
// http://127.0.0.2:PORT ("" without Config.Search). With Config.Port 0 it
// is final only after Start.
func (s *Sim) searchURL() string {
	if s.search == nil {
		return ""
	}
	return "http://" + net.JoinHostPort(hostIP(s.search.cfg.Host), strconv.Itoa(s.Port()))
}

// searchSourceYAML returns a config file fragment (a `sources:` list) that
// points freshcrawl at the search host. The weight of a paper is the
// `weight` attribute of its SearchItems line, the weight the truth uses
// (Config.Search.Weight); the planner sends 10 requests a time unit, as in
// paper §5.2 Fig. 2; every other planner setting is the default (the
// paper's Eq. 2 score, the pessimistic local ratio, no interval search).
// "" without Config.Search.
func (s *Sim) searchSourceYAML() string {
	if s.search == nil {
		return ""
	}
	c := s.search.cfg
	base := s.searchURL()
	return fmt.Sprintf(`sources:
  - name: %s
    search_url: "%s/search?q={query}&page={page}"
    item_url: "%s/item/{id}"
    page_size: %d
    time_unit: %s
    item: "li.result"
    id: {attr: data-id}
    total: {selector: "p.total", regexp: "([0-9,]+) results?"}
    fields:
      title: "a.title"
      authors: {selector: ".author", join: ", "}
      citations: {selector: ".citations", regexp: "Cited by ([0-9,]+)", numeric: true}
    item_page:
      fields:
        title: "h1.title"
        authors: {selector: ".author", join: ", "}
        citations: {selector: "#citations", regexp: "Cited by ([0-9,]+)", numeric: true}
    keywords:
      - {field: title, split: words, stopwords: english}
      - {field: authors, split: ",", whole: true}
    value_field: citations
    dissimilarity: {citations: numeric}
    weight: {attribute: weight}
    method: 1
    quota: 10
    interval: 1
`, searchSourceName, base, base, c.K, c.TimeUnit)
}

// SearchSource returns the parsed, validated searchSourceYAML.
func (s *Sim) SearchSource() (source.Source, error) {
	if s.search == nil {
		return source.Source{}, fmt.Errorf("sim: no search source (Config.Search is nil)")
	}
	srcs, err := source.Parse([]byte(s.searchSourceYAML()), "sim search source", probeparse.CheckSelector)
	if err != nil {
		return source.Source{}, err
	}
	return srcs[0], nil
}

// SearchHandler serves the search host's /search and /item/{id} (and its
// other paths) in process, exactly as over the network: the same pages,
// the same request log and the same record of what was served, so
// ContentFreshness measures a crawler that calls it directly. With
// Config.Now a virtual clock, a benchmark can run days of probes in
// seconds. Nil without Config.Search.
func (s *Sim) SearchHandler() http.Handler {
	if s.search == nil {
		return nil
	}
	return s.hostHandler(s.search.cfg.Host)
}
