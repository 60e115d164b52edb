// Package source defines keyword-search sources: sites that expose the items
// freshcrawl tracks (papers with citation counts, products with prices) only
// through a keyword search returning K results a page, plus a fetch by id.
// It is the configuration side of docs/design.md §3.6 (the content-freshness
// paper on keyword-search probes): where to send a query, how to read items
// off a result page, which fields give an item's keywords, weight and
// tracked value, and the planner's knobs (method, quota, α, interval). The
// planning maths lives in package probe; parsing result pages, and so the
// CSS selectors, in package worker/probeparse: the planner uses sources but
// never reads a page, so it links no HTML parser.
//
// Sources are listed under the top-level `sources:` key of the YAML config
// file (package config skips that key and leaves it to [Load]):
//
//	sources:
//	  - name: scholar
//	    # {query}: the URL-escaped keywords, space-separated (a keyword with a
//	    # space is quoted); {page}: the 1-based page; {start}: (page-1)*page_size.
//	    search_url: "http://127.0.0.2:8080/search?q={query}&page={page}"
//	    item_url: "http://127.0.0.2:8080/item/{id}"  # {id} is path-escaped
//	    page_size: 10            # K, results a page (paper §3.2)
//	    time_unit: 1s            # real duration of one time unit (rates, interval)
//	    # Result page: one block per item, fields relative to the block.
//	    item: "li.result"
//	    id: {attr: data-id}      # selector "" = the block itself; attr "" = text
//	    total: {selector: ".total", regexp: "([0-9,]+) results"}
//	    fields:
//	      title: ".title"        # shorthand for {selector: ".title"}
//	      authors: {selector: ".author", join: ", "}   # every match, joined
//	      citations: {selector: ".citations", regexp: "Cited by ([0-9,]+)", numeric: true}
//	    # Item page (fetch by id, paper §1.3): fields relative to the document.
//	    item_page:
//	      fields:
//	        citations: {selector: "#citations", regexp: "([0-9,]+)", numeric: true}
//	    keywords:                # the bag of words of an item (paper §3)
//	      - {field: title, split: words, stopwords: english}
//	      - {field: authors, split: ",", whole: true}
//	    value_field: citations   # the tracked numeric value
//	    dissimilarity: {citations: numeric}   # or: changed (0/1); default numeric on value_field
//	    weight: citations        # a field name, a constant such as 1 (paper §3.1), or
//	                             # {attribute: NAME}: an attribute given with the items
//	                             # (an importance of your own; pages never change it)
//	    reference_counts: dblp_counts.csv     # CSV "query,count" (paper §4.1), optional
//	    reference_scale: 4.6     # |R_S(q)| ≈ scale·reference count
//	    method: 1                # 1: read every result page; 2: first page only (§5.1)
//	    quota: 10                # requests a round (queries and fetches by id); 0 = until all covered
//	    alpha: 20                # content freshness to stay under over a round (§4.4); 0 = fixed interval
//	    interval: 1              # the round length in time units (with alpha: the shortest)
//
// Every key is checked: unknown keys, wrong types, bad CSS selectors (with
// the [SelectorCheck] the caller passes, probeparse.CheckSelector), bad
// regular expressions (RE2, so a hostile page cannot make them backtrack)
// and inconsistent references are reported with the file, the key path and
// the line, e.g.
// `config.yaml: sources[0].search_url: missing {query} (line 4)`.
package source

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Source is one keyword-search source. Build it with [Parse] or [Load], or
// in code followed by [Source.Validate].
type Source struct {
	Name string `json:"name"`
	// SearchTemplate (YAML search_url) is the query template: {query} (required), {page} (1-based)
	// and {start} ((page−1)·PageSize). Method 1 needs {page} or {start}.
	SearchTemplate string `json:"search_url"`
	// ItemTemplate (YAML item_url) is the fetch-by-id template with {id}; "" when the source has
	// no item pages (uncovered items then wait for a later round).
	ItemTemplate string `json:"item_url,omitempty"`
	// PageSize is K, the number of results a page (paper §3.2).
	PageSize int `json:"page_size"`
	// TimeUnit is the real duration of one planning time unit: Poisson rates
	// are per time unit and Interval is in time units. Default 1s.
	TimeUnit time.Duration `json:"time_unit_ns"`

	// Item selects one result block on a result page.
	Item string `json:"item"`
	// ID says how to read an item's id within its block.
	ID Field `json:"id"`
	// Total reads the total result count off a page ("1,234 results"),
	// which the planner uses as the query's server count (paper §4.1); zero when not shown.
	Total Field `json:"total"`
	// Fields are read within each result block.
	Fields map[string]Field `json:"fields"`
	// ItemFields (YAML item_page.fields) are read from an item page,
	// relative to the document.
	ItemFields map[string]Field `json:"item_fields,omitempty"`

	// KeywordSpecs (YAML keywords) lists the fields that make up an item's
	// bag of words.
	KeywordSpecs []KeywordSpec `json:"keywords"`
	// ValueField names the tracked numeric field (e.g. citations).
	ValueField string `json:"value_field"`
	// Dissims (YAML dissimilarity) maps a field to how a change in it is
	// measured; empty means {ValueField: dissimNumeric} (paper §3.1:
	// |r_L.c − r_S.c|).
	Dissims map[string]Dissim `json:"dissimilarity,omitempty"`
	// WeightField (YAML weight: a field name), when set, makes w(r) the
	// numeric value of that field (paper §3.1: w(r) = r.Num_of_citation);
	// otherwise w(r) = WeightConst (YAML weight: a number; default 1).
	WeightField string  `json:"weight_field,omitempty"`
	WeightConst float64 `json:"weight_const,omitempty"`
	// WeightAttr (YAML weight: {attribute: NAME}) makes w(r) the numeric
	// value of an attribute given with the items, which no page shows and
	// so no refresh changes: an importance of the user's own, or a weight
	// frozen when the list was made. It must not be under fields.
	WeightAttr string `json:"weight_attr,omitempty"`

	// ReferenceCounts is a CSV file of "query,count" lines from a reference
	// corpus (paper §4.1, DBLP for Google Scholar); ReferenceScale is c in
	// |R_S(q)| ≈ c·|R_ref(q)| (0 means 1). [Load] reads the file into
	// References.
	ReferenceCounts string         `json:"reference_counts,omitempty"`
	ReferenceScale  float64        `json:"reference_scale,omitempty"`
	References      map[string]int `json:"-"` // by canonicalQuery; planner only, not sent to workers

	// Method is MethodAllPages or MethodFirstPage (§5.1).
	Method int `json:"method"`
	// Quota caps the requests of a round, keyword queries and fetches by
	// id together; 0 means until every item is covered.
	Quota int `json:"quota"`
	// Score is how greedyProbes ranks a query: "per_result" (default, the
	// paper's Eq. 2: Σ w·F over the results the query transfers, counted
	// in whole result pages) or "per_request" (Σ w·F over the requests the
	// query costs, ⌈|R_S(q)|/K⌉). Counted in whole pages the two rank every
	// query alike; per_request is kept for configurations that name it.
	Score string `json:"score,omitempty"`
	// LocalRatio is the prior |R_S(q)|/|R_L(q)| for a query whose server
	// count is neither observed nor in the reference counts (0 means the
	// planner's default, a pessimistic 10). The planner learns the ratio
	// from the totals result pages show (probe.LearnRatio), so this only
	// decides the first rounds.
	LocalRatio float64 `json:"local_ratio,omitempty"`
	// Alpha is the content-freshness threshold of the §4.4 interval
	// search: a greedy round lasts the longest time, at least Interval,
	// over which the model's expected content freshness of all tracked
	// items, averaged over the round, stays at most Alpha (in the units of
	// the dissimilarity). 0 means every round lasts Interval.
	Alpha float64 `json:"alpha"`
	// Interval is the length of a round in time units, the shortest when
	// Alpha is set (where the §4.4 search starts doubling): Quota requests
	// per Interval is the source's request budget.
	Interval float64 `json:"interval"`

	stop []map[string]bool // per keyword spec; set by Validate, read-only afterwards
}

// Methods of reading a query's results (the paper's §5.1), the values of
// Source.Method.
const (
	// methodAllPages (Method 1) reads every result page of a query.
	methodAllPages = 1
	// methodFirstPage (Method 2) reads the first result page only.
	methodFirstPage = 2
)

// Field says how to read one value: the first element matching Selector
// ("" = the context element itself), its attribute Attr ("" = its text,
// whitespace collapsed), then Regexp (first capturing group, or the whole
// match when it has none). Numeric values are normalised to a plain number
// ("1,234" → "1234"). With Join set, every matching element is read and the
// values are joined with it (e.g. one <a> per author).
type Field struct {
	Selector string `json:"selector,omitempty"`
	Attr     string `json:"attr,omitempty"`
	Regexp   string `json:"regexp,omitempty"`
	Numeric  bool   `json:"numeric,omitempty"`
	Join     string `json:"join,omitempty"`
}

// Split values of [KeywordSpec].
const splitWords = "words"

// KeywordSpec turns one field into keywords. Keywords are lower-cased
// because the planner matches them exactly.
type KeywordSpec struct {
	Field string `json:"field"`
	// Split is splitWords (runs of letters and digits) or a separator such
	// as ",". Default splitWords.
	Split string `json:"split"`
	// Whole keeps each separated piece as one keyword (an author's full
	// name); otherwise pieces are split into words.
	Whole bool `json:"whole,omitempty"`
	// Stopwords are dropped ("english" in YAML selects englishStopwords).
	Stopwords []string `json:"stopwords,omitempty"`
}

// Dissim is how a field's change is measured.
type Dissim string

const (
	// dissimNumeric is the absolute numeric difference (paper §3.1).
	dissimNumeric Dissim = "numeric"
	// DissimChanged is 0 when equal, 1 when different.
	DissimChanged Dissim = "changed"
)

// englishStopwordList is the list `stopwords: english` selects: words too
// common to be selective queries (paper §5.3 removes stopwords from titles),
// plus a few title fillers ("via", "using", "towards").
const englishStopwordList = `a about above after again against all am an and any are as at be
because been before being below between both but by can could did do does
doing down during each few for from further had has have having he her here
hers him his how i if in into is it its itself just me more most my no nor
not of off on once only or other our out over own same she should so some
such than that the their them then there these they this those through to
too under until up very was we were what when where which while who whom why
will with would you your via using towards toward`

// englishStopwords returns the built-in English stopword list.
func englishStopwords() []string { return strings.Fields(englishStopwordList) }

// fieldError is one problem with a definition: Path is the key path within
// the source ("fields.citations.selector"). Parse and Load prefix it with the
// file and the source index.
type fieldError struct {
	Path string
	Msg  string
}

func (e *fieldError) Error() string { return e.Path + ": " + e.Msg }

// ParseNumber reads a number as result pages print it: thousands separators
// (",", "_", spaces, no-break spaces) are ignored. NaN and infinities are
// refused.
func ParseNumber(s string) (float64, bool) {
	s = strings.Map(func(r rune) rune {
		if r == ',' || r == '_' || unicode.IsSpace(r) || r == '\u00a0' || r == '\u202f' {
			return -1
		}
		return r
	}, s)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// SelectorCheck checks the syntax of one CSS selector. Package source
// leaves CSS to the package that applies the selectors
// (probeparse.CheckSelector), so that the planner, which uses sources but
// never reads a page, links no HTML parser. A nil SelectorCheck checks no
// CSS syntax.
type SelectorCheck func(selector string) error

// Validate checks the definition, all but the CSS syntax of its selectors
// (which [Parse], [Load], [DecodeJSON] and [Source.Check] take a
// [SelectorCheck] for), and applies defaults (TimeUnit 1s, Method 1,
// Interval 1, WeightConst 1 without WeightField). Errors are *fieldErrors
// naming the key, joined. It must not run concurrently with other uses of
// s. Validate caches the keyword specs' stopword sets in s (shared by
// copies of s): call Validate again after changing a definition.
func (s *Source) Validate() error {
	return s.validate(nil)
}

// validate is Validate with the CSS syntax checked by sel.
func (s *Source) validate(sel SelectorCheck) error {
	s.stop = nil
	if s.TimeUnit == 0 {
		s.TimeUnit = time.Second
	}
	if s.Method == 0 {
		s.Method = methodAllPages
	}
	if s.Interval == 0 {
		s.Interval = 1
	}
	if s.WeightField == "" && s.WeightAttr == "" && s.WeightConst == 0 {
		s.WeightConst = 1
	}
	for i := range s.KeywordSpecs {
		if s.KeywordSpecs[i].Split == "" {
			s.KeywordSpecs[i].Split = splitWords
		}
	}
	stop, err := s.check(sel)
	if err != nil {
		return err
	}
	s.stop = stop
	return nil
}

// Check reports the faults [Source.Validate] reports, and those sel finds
// in the CSS selectors, without applying defaults or modifying s, so
// concurrent callers are safe: the page parser checks a definition with it
// before compiling the selectors.
func (s *Source) Check(sel SelectorCheck) error {
	_, err := s.check(sel)
	return err
}

// problems collects the faults found in a definition, in the order they
// were found, each naming its key.
type problems []error

func (p *problems) bad(path, format string, args ...any) {
	*p = append(*p, &fieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// check returns the stopword set of each keyword spec, or the faults of
// the definition in the order they were found.
func (s *Source) check(sel SelectorCheck) ([]map[string]bool, error) {
	var p problems
	// Zero values stand for the defaults Validate applies, so Check can
	// judge an unvalidated source without modifying it.
	method, interval := s.Method, s.Interval
	if method == 0 {
		method = methodAllPages
	}
	if interval == 0 {
		interval = 1
	}
	if strings.TrimSpace(s.Name) == "" {
		p.bad("name", "missing")
	}
	s.checkTemplates(&p, method)
	s.checkSettings(&p, method, interval)
	s.checkSelectors(&p, sel)
	s.checkValueField(&p)
	s.checkWeight(&p)
	for _, name := range sortedKeys(s.Dissims) {
		s.checkKnown(&p, "dissimilarity."+name, name)
		if d := s.Dissims[name]; d != dissimNumeric && d != DissimChanged {
			p.bad("dissimilarity."+name, "expected %q or %q, got %q", dissimNumeric, DissimChanged, d)
		}
	}
	stop := s.checkKeywords(&p)
	if len(p) > 0 {
		return nil, errors.Join(p...)
	}
	return stop, nil
}

// checkTemplates checks the search and item URL templates, with the
// method in force.
func (s *Source) checkTemplates(p *problems, method int) {
	switch {
	case s.SearchTemplate == "":
		p.bad("search_url", "missing")
	case !strings.Contains(s.SearchTemplate, "{query}"):
		p.bad("search_url", "missing {query}")
	case method == methodAllPages && !strings.Contains(s.SearchTemplate, "{page}") && !strings.Contains(s.SearchTemplate, "{start}"):
		p.bad("search_url", "missing {page} or {start} (method 1 reads every result page)")
	default:
		if err := checkURL(s.fill(s.SearchTemplate, map[string]string{"query": "q", "page": "1", "start": "0"})); err != nil {
			p.bad("search_url", "%v", err)
		}
	}
	if s.ItemTemplate != "" {
		if !strings.Contains(s.ItemTemplate, "{id}") {
			p.bad("item_url", "missing {id}")
		} else if err := checkURL(s.fill(s.ItemTemplate, map[string]string{"id": "x"})); err != nil {
			p.bad("item_url", "%v", err)
		}
		if len(s.ItemFields) == 0 {
			p.bad("item_page.fields", "missing (item_url is set, so item pages must be parsed)")
		}
	} else if len(s.ItemFields) > 0 {
		p.bad("item_url", "missing (item_page is set)")
	}
}

// checkSettings checks the numeric settings, with the method and interval
// in force.
func (s *Source) checkSettings(p *problems, method int, interval float64) {
	if s.PageSize <= 0 {
		p.bad("page_size", "expected a positive number of results a page, got %d", s.PageSize)
	}
	if s.TimeUnit < 0 {
		p.bad("time_unit", "expected a positive duration, got %v", s.TimeUnit)
	}
	if method != methodAllPages && method != methodFirstPage {
		p.bad("method", "expected 1 (every result page) or 2 (first page only), got %d", s.Method)
	}
	if s.Score != "" && s.Score != "per_result" && s.Score != "per_request" {
		p.bad("score", "expected per_result or per_request, got %q", s.Score)
	}
	if s.LocalRatio < 0 {
		p.bad("local_ratio", "expected ≥ 1 (or 0 for the default), got %v", s.LocalRatio)
	}
	if s.Quota < 0 {
		p.bad("quota", "expected ≥ 0 (0 = until every item is covered), got %d", s.Quota)
	}
	if !(s.Alpha >= 0) || math.IsInf(s.Alpha, 0) {
		p.bad("alpha", "expected a finite number ≥ 0, got %v", s.Alpha)
	}
	if !(interval > 0) || math.IsInf(interval, 0) {
		p.bad("interval", "expected a finite positive number of time units, got %v", s.Interval)
	}
	if !(s.ReferenceScale >= 0) || math.IsInf(s.ReferenceScale, 0) {
		p.bad("reference_scale", "expected a finite number ≥ 0, got %v", s.ReferenceScale)
	}
}

// checkSelectors checks the result block selector and the fields of
// result and item pages, the CSS syntax with sel.
func (s *Source) checkSelectors(p *problems, sel SelectorCheck) {
	if s.Item == "" {
		p.bad("item", "missing (CSS selector of one result block)")
	} else {
		checkSelector(p, "item", s.Item, sel)
	}
	checkField(p, "id", s.ID, true, sel)
	if s.Total != (Field{}) {
		checkField(p, "total", s.Total, true, sel)
	}
	if len(s.Fields) == 0 {
		p.bad("fields", "missing (at least the value field)")
	}
	for _, name := range sortedKeys(s.Fields) {
		if err := checkName(name); err != nil {
			p.bad("fields."+name, "%v", err)
			continue
		}
		checkField(p, "fields."+name, s.Fields[name], false, sel)
	}
	for _, name := range sortedKeys(s.ItemFields) {
		if err := checkName(name); err != nil {
			p.bad("item_page.fields."+name, "%v", err)
			continue
		}
		// On an item page the context is the whole document: a selector is
		// required.
		f := s.ItemFields[name]
		if f.Selector == "" {
			p.bad("item_page.fields."+name+".selector", "missing")
			continue
		}
		checkField(p, "item_page.fields."+name, f, true, sel)
	}
}

// checkSelector reports the key path when sel rejects the CSS selector.
func checkSelector(p *problems, path, selector string, sel SelectorCheck) {
	if sel == nil {
		return
	}
	if err := sel(selector); err != nil {
		p.bad(path, "expected a CSS selector: %v", err)
	}
}

// checkField checks the field f at key path.
func checkField(p *problems, path string, f Field, needSel bool, sel SelectorCheck) {
	if f.Selector == "" && f.Attr == "" && needSel {
		p.bad(path+".selector", "missing")
	}
	if f.Selector != "" {
		checkSelector(p, path+".selector", f.Selector, sel)
	}
	if f.Regexp != "" {
		if _, err := regexp.Compile(f.Regexp); err != nil {
			p.bad(path+".regexp", "expected an RE2 regular expression: %v", err)
		}
	}
}

// checkKnown reports the key path when name is not a field of result
// pages.
func (s *Source) checkKnown(p *problems, path, name string) {
	if _, ok := s.Fields[name]; !ok {
		p.bad(path, "unknown field %q (not under fields)", name)
	}
}

// checkValueField checks the tracked field: a numeric field of result
// pages and, when item pages are parsed, of item pages.
func (s *Source) checkValueField(p *problems) {
	if s.ValueField == "" {
		p.bad("value_field", "missing (the tracked numeric field)")
		return
	}
	s.checkKnown(p, "value_field", s.ValueField)
	if f, ok := s.ItemFields[s.ValueField]; len(s.ItemFields) > 0 && !ok {
		p.bad("item_page.fields", "missing the value field %q", s.ValueField)
	} else if ok && !f.Numeric {
		p.bad("item_page.fields."+s.ValueField+".numeric", "expected true for the value field")
	}
	if f, ok := s.Fields[s.ValueField]; ok && !f.Numeric {
		p.bad("fields."+s.ValueField+".numeric", "expected true for the value field")
	}
}

// checkWeight checks that the weight is one of a field, an attribute or a
// constant.
func (s *Source) checkWeight(p *problems) {
	switch {
	case s.WeightAttr != "":
		if s.WeightField != "" {
			p.bad("weight", "expected a field name or an attribute, not both")
		}
		if _, ok := s.Fields[s.WeightAttr]; ok {
			p.bad("weight.attribute", "%q is a field read off result pages: use weight: %s", s.WeightAttr, s.WeightAttr)
		} else if err := checkName(s.WeightAttr); err != nil {
			p.bad("weight.attribute", "%v", err)
		}
	case s.WeightField != "":
		s.checkKnown(p, "weight", s.WeightField)
	case !(s.WeightConst >= 0) || math.IsInf(s.WeightConst, 0):
		p.bad("weight", "expected a field name or a finite number ≥ 0, got %v", s.WeightConst)
	}
}

// checkKeywords checks the keyword specs and returns their stopword sets.
func (s *Source) checkKeywords(p *problems) []map[string]bool {
	if len(s.KeywordSpecs) == 0 {
		p.bad("keywords", "missing (which fields give an item's keywords)")
	}
	var stop []map[string]bool
	for i, k := range s.KeywordSpecs {
		path := fmt.Sprintf("keywords[%d]", i)
		if k.Field == "" {
			p.bad(path+".field", "missing")
		} else {
			s.checkKnown(p, path+".field", k.Field)
		}
		stop = append(stop, stopSet(k.Stopwords))
	}
	return stop
}

func stopSet(words []string) map[string]bool {
	set := make(map[string]bool, len(words))
	for _, w := range words {
		set[strings.ToLower(w)] = true
	}
	return set
}

// checkName keeps field names usable as YAML keys, JSON keys and in paths.
func checkName(name string) error {
	if name == "" {
		return errors.New("empty field name")
	}
	for _, r := range name {
		if !(r == '_' || r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return fmt.Errorf("field name %q: use letters, digits, '_' and '-'", name)
		}
	}
	return nil
}

func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("expected a URL: %v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("expected an absolute http(s) URL, got %q", raw)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// fill replaces {name} placeholders in one pass, so a substituted value
// containing braces is never expanded again.
func (s *Source) fill(tmpl string, vals map[string]string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(tmpl, '{')
		if i < 0 {
			b.WriteString(tmpl)
			return b.String()
		}
		j := strings.IndexByte(tmpl[i:], '}')
		if j < 0 {
			b.WriteString(tmpl)
			return b.String()
		}
		if v, ok := vals[tmpl[i+1:i+j]]; ok {
			b.WriteString(tmpl[:i])
			b.WriteString(v)
		} else {
			b.WriteString(tmpl[:i+j+1])
		}
		tmpl = tmpl[i+j+1:]
	}
}

// SearchURL returns the URL of result page `page` (1-based; values below 1
// mean 1) of the AND query of the keywords. Keywords are joined by spaces; a
// keyword that itself contains a space (a whole author name) is quoted so
// the site can treat it as a phrase.
func (s *Source) SearchURL(query []string, page int) string {
	page = max(page, 1)
	terms := make([]string, 0, len(query))
	for _, q := range query {
		if strings.ContainsFunc(q, unicode.IsSpace) {
			q = `"` + strings.ReplaceAll(q, `"`, "") + `"`
		}
		terms = append(terms, q)
	}
	return s.fill(s.SearchTemplate, map[string]string{
		"query": url.QueryEscape(strings.Join(terms, " ")),
		"page":  strconv.Itoa(page),
		"start": strconv.Itoa((page - 1) * max(s.PageSize, 0)),
	})
}

// ItemURL returns the fetch-by-id URL of id, or "" when the source has none.
func (s *Source) ItemURL(id string) string {
	if s.ItemTemplate == "" {
		return ""
	}
	return s.fill(s.ItemTemplate, map[string]string{"id": url.PathEscape(id)})
}

// Keywords returns the item's bag of words (paper §3): lower-cased,
// de-duplicated, in field order, stopwords removed.
func (s *Source) Keywords(fields map[string]string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(w string, stop map[string]bool) {
		w = strings.Join(strings.Fields(strings.ToLower(w)), " ")
		if w == "" || stop[w] || seen[w] {
			return
		}
		seen[w] = true
		out = append(out, w)
	}
	for i, k := range s.KeywordSpecs {
		var stop map[string]bool
		if i < len(s.stop) {
			stop = s.stop[i]
		} else {
			stop = stopSet(k.Stopwords)
		}
		v := fields[k.Field]
		if k.Split == "" || k.Split == splitWords {
			for _, w := range words(v) {
				add(w, stop)
			}
			continue
		}
		for piece := range strings.SplitSeq(v, k.Split) {
			if k.Whole {
				add(piece, stop)
				continue
			}
			for _, w := range words(piece) {
				add(w, stop)
			}
		}
	}
	return out
}

// words splits on anything but letters and digits.
func words(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// Weight returns w(r) (paper §3.1): the numeric value of WeightField or
// WeightAttr, or WeightConst. An item whose weight field is missing,
// unparsable or negative weighs 1, so an item not yet seen is still
// refreshed rather than ignored.
func (s *Source) Weight(fields map[string]string) float64 {
	name := s.WeightField
	if s.WeightAttr != "" {
		name = s.WeightAttr
	}
	if name == "" {
		return s.WeightConst
	}
	if v, ok := ParseNumber(fields[name]); ok && v >= 0 {
		return v
	}
	return 1
}

// CountsUpdates reports whether the dissimilarity of a refresh counts the
// updates it missed: every configured dissimilarity is numeric, as for a
// citation count that grows by one per citation (paper §4.2). The
// planner's model then needs the rate at which dissimilarity accrues, and
// the dissimilarity over the time since the last refresh measures it
// directly (Prober.ObserveRefresh); with a 0/1 dissimilarity only
// "changed or not" is known.
func (s *Source) CountsUpdates() bool {
	if len(s.Dissims) == 0 {
		return true // numeric on the value field
	}
	for _, d := range s.Dissims {
		if d != dissimNumeric {
			return false
		}
	}
	return true
}

// Value returns the tracked numeric value, false when missing or unparsable.
func (s *Source) Value(fields map[string]string) (float64, bool) {
	v, ok := fields[s.ValueField]
	if !ok {
		return 0, false
	}
	return ParseNumber(v)
}

// Dissimilarity returns δ(r_L, r_S) (paper §3.1): the sum over the
// configured fields of |new − old| (numeric) or 0/1 (changed). A numeric
// field that is missing or unparsable on either side counts as changed (1)
// when the raw strings differ.
func (s *Source) Dissimilarity(old, new map[string]string) float64 {
	d := s.Dissims
	if len(d) == 0 {
		d = map[string]Dissim{s.ValueField: dissimNumeric}
	}
	var sum float64
	for _, f := range sortedKeys(d) {
		a, b := old[f], new[f]
		if d[f] == dissimNumeric {
			x, okx := ParseNumber(a)
			y, oky := ParseNumber(b)
			if okx && oky {
				sum += math.Abs(y - x)
				continue
			}
		}
		if a != b {
			sum++
		}
	}
	return sum
}

// DecodeJSON decodes and validates a source encoded with encoding/json (the
// definition a probe task carries, proto.ProbeSpec.Def, so workers need no
// config of their own), the CSS syntax of its selectors with sel. Unknown
// keys are rejected. References are not part of the encoding.
func DecodeJSON(b []byte, sel SelectorCheck) (Source, error) {
	var s Source
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Source{}, fmt.Errorf("source definition: %w", err)
	}
	if err := s.validate(sel); err != nil {
		return Source{}, fmt.Errorf("source definition %q: %w", s.Name, err)
	}
	return s, nil
}
