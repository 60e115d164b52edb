package source

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const goodYAML = `# other config keys are not ours
workers: 4
sources:
  - name: scholar
    search_url: "https://scholar.example/search?q={query}&start={start}"
    item_url: "https://scholar.example/item/{id}"
    page_size: 10
    time_unit: 1h
    item: "li.result"
    id: {attr: data-id}
    total: {selector: ".total", regexp: "([0-9,]+) results"}
    fields:
      title: ".title"
      authors: {selector: ".author", join: ", "}
      citations: {selector: ".citations", regexp: "Cited by ([0-9,]+)", numeric: true}
    item_page:
      fields:
        citations: {selector: "#citations", regexp: "([0-9,]+)", numeric: true}
    keywords:
      - {field: title, split: words, stopwords: english}
      - {field: authors, split: ",", whole: true}
    value_field: citations
    weight: citations
    reference_counts: counts.csv
    reference_scale: 4.6
    method: 2
    quota: 10
    alpha: 300
    interval: 2
  - name: dvd
    search_url: "http://shop.example/find/{query}/{page}"
    page_size: 20
    item: ".product"
    id: {selector: "a", attr: href, regexp: "/dp/([A-Z0-9]+)"}
    fields:
      price: {selector: ".price", regexp: "\\$([0-9.,]+)", numeric: true}
      name: ".name"
    keywords:
      - {field: name, stopwords: [the, of]}
    value_field: price
    dissimilarity: {price: numeric, name: changed}
    weight: 2.5
`

// checkCSS stands in for the page parser's selector check
// (probeparse.CheckSelector), which package source cannot import: it
// rejects unbalanced brackets, the fault of every bad selector below.
func checkCSS(sel string) error {
	if strings.Count(sel, "[") != strings.Count(sel, "]") {
		return errors.New("unbalanced brackets")
	}
	return nil
}

func TestParseGood(t *testing.T) {
	srcs, err := Parse([]byte(goodYAML), "config.yaml", checkCSS)
	if err != nil {
		t.Fatal(err)
	}
	if len(srcs) != 2 {
		t.Fatalf("%d sources", len(srcs))
	}
	s := srcs[0]
	if s.Name != "scholar" || s.PageSize != 10 || s.TimeUnit != time.Hour || s.Method != 2 || s.Quota != 10 ||
		s.Alpha != 300 || s.Interval != 2 || s.ReferenceScale != 4.6 || s.WeightField != "citations" ||
		s.Fields["authors"].Join != ", " || !s.Fields["citations"].Numeric || s.ID.Attr != "data-id" ||
		len(s.ItemFields) != 1 || len(s.KeywordSpecs) != 2 || !s.KeywordSpecs[1].Whole {
		t.Fatalf("decoded %+v", s)
	}
	d := srcs[1]
	if d.WeightField != "" || d.WeightConst != 2.5 || d.Method != 1 || d.Interval != 1 || d.TimeUnit != time.Second ||
		d.KeywordSpecs[0].Split != splitWords || d.Dissims["name"] != DissimChanged {
		t.Fatalf("defaults %+v", d)
	}
	if err := d.Check(checkCSS); err != nil {
		t.Fatal(err)
	}
}

func TestParseEmpty(t *testing.T) {
	for _, doc := range []string{"", "workers: 3\n", "sources:\n", "sources: []\n"} {
		srcs, err := Parse([]byte(doc), "c.yaml", checkCSS)
		if err != nil || len(srcs) != 0 {
			t.Errorf("%q: %v, %v", doc, srcs, err)
		}
	}
}

// minimal is a valid source; cases below break one key.
const minimal = `sources:
  - name: a
    search_url: "http://x.example/s?q={query}&p={page}"
    page_size: 10
    item: li
    id: {attr: data-id}
    fields:
      n: {selector: .n, numeric: true}
      t: .t
    keywords: [{field: t}]
    value_field: n
`

func TestParseErrorsNameTheKey(t *testing.T) {
	tests := []struct {
		name, old, new, want string
	}{
		{"missing query", "q={query}&", "", "config.yaml: sources[0].search_url: missing {query} (line 3)"},
		{"missing page", "&p={page}", "", "sources[0].search_url: missing {page} or {start}"},
		{"relative url", "http://x.example/s", "/s", "sources[0].search_url: expected an absolute http(s) URL"},
		{"bad selector", "{selector: .n,", "{selector: \"..n[\",", "config.yaml: sources[0].fields.n.selector: expected a CSS selector"},
		{"bad item selector", "item: li", "item: \"li[\"", "sources[0].item: expected a CSS selector"},
		{"bad regexp", "{attr: data-id}", "{attr: data-id, regexp: \"(\"}", "sources[0].id.regexp: expected an RE2 regular expression"},
		{"unknown key", "t: .t", "t: {selector: .t, bogus: 1}", "config.yaml: sources[0].fields.t.bogus: unknown key (line 9)"},
		{"unknown top key", "page_size: 10", "page_size: 10\n    pagesize: 3", "sources[0].pagesize: unknown key (line 5)"},
		{"duplicate key", "page_size: 10", "page_size: 10\n    page_size: 3", "sources[0].page_size: duplicate key"},
		{"page_size type", "page_size: 10", "page_size: ten", `sources[0].page_size: expected an integer, got "ten"`},
		{"page_size zero", "page_size: 10", "page_size: 0", "sources[0].page_size: expected a positive number"},
		{"numeric type", "numeric: true", "numeric: yes please", "sources[0].fields.n.numeric: expected true or false"},
		{"value not numeric", "{selector: .n, numeric: true}", ".n", "sources[0].fields.n.numeric: expected true for the value field"},
		{"value unknown", "value_field: n", "value_field: x", `sources[0].value_field: unknown field "x"`},
		{"weight unknown", "value_field: n", "value_field: n\n    weight: cites", `sources[0].weight: unknown field "cites"`},
		{"weight attribute is a field", "value_field: n", "value_field: n\n    weight: {attribute: n}", `sources[0].weight.attribute: "n" is a field read off result pages`},
		{"weight attribute key", "value_field: n", "value_field: n\n    weight: {attr: w}", `sources[0].weight.attr: unknown key`},
		{"keyword field", "[{field: t}]", "[{field: nope}]", `sources[0].keywords[0].field: unknown field "nope"`},
		{"stopwords", "[{field: t}]", "[{field: t, stopwords: french}]", `sources[0].keywords[0].stopwords: expected "english", "none" or a list`},
		{"dissim", "value_field: n", "value_field: n\n    dissimilarity: {n: squared}", `sources[0].dissimilarity.n: expected "numeric" or "changed"`},
		{"method", "value_field: n", "value_field: n\n    method: 3", "sources[0].method: expected 1"},
		{"alpha", "value_field: n", "value_field: n\n    alpha: -1", "sources[0].alpha: expected a finite number ≥ 0"},
		{"time unit", "value_field: n", "value_field: n\n    time_unit: soon", "sources[0].time_unit: expected a positive duration"},
		{"item url", "value_field: n", "value_field: n\n    item_url: \"http://x.example/i\"", "sources[0].item_url: missing {id}"},
		{"item page needed", "value_field: n", "value_field: n\n    item_url: \"http://x.example/i/{id}\"", "sources[0].item_page.fields: missing"},
		{"id missing", "    id: {attr: data-id}\n", "", "sources[0].id.selector: missing"},
		{"fields list", "fields:\n      n: {selector: .n, numeric: true}\n      t: .t", "fields: [a, b]", "sources[0].fields: expected a mapping"},
		{"sources scalar", "sources:\n  - name: a", "sources: 3\nx:\n  - name: a", "config.yaml: sources: expected a list"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(minimal, tc.old) {
				t.Fatalf("test bug: %q not in minimal", tc.old)
			}
			doc := strings.Replace(minimal, tc.old, tc.new, 1)
			_, err := Parse([]byte(doc), "config.yaml", checkCSS)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
	// The second source is named by its index; duplicate names are refused.
	doc := minimal + strings.Replace(strings.TrimPrefix(minimal, "sources:\n"), "t: .t", "t: \"t[\"", 1)
	_, err := Parse([]byte(doc), "config.yaml", checkCSS)
	for _, want := range []string{"sources[1].fields.t.selector: expected a CSS selector", `sources[1].name: duplicate source name "a" (also sources[0])`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error = %v, want %q", err, want)
		}
	}
	if _, err := Parse([]byte("sources: [\n"), "config.yaml", checkCSS); err == nil || !strings.HasPrefix(err.Error(), "config.yaml: ") {
		t.Errorf("bad YAML error = %v", err)
	}
}

// Without a SelectorCheck the CSS syntax is left to the page parser;
// everything else is still checked.
func TestParseWithoutSelectorCheck(t *testing.T) {
	doc := strings.Replace(minimal, "item: li", "item: \"li[\"", 1)
	if _, err := Parse([]byte(doc), "config.yaml", nil); err != nil {
		t.Fatalf("bad CSS without a check: %v", err)
	}
	if _, err := Parse([]byte(doc), "config.yaml", checkCSS); err == nil || !strings.Contains(err.Error(), "config.yaml: sources[0].item: expected a CSS selector: unbalanced brackets (line 5)") {
		t.Fatalf("bad CSS with a check: %v", err)
	}
	doc = strings.Replace(doc, "page_size: 10", "page_size: 0", 1)
	if _, err := Parse([]byte(doc), "config.yaml", nil); err == nil || !strings.Contains(err.Error(), "sources[0].page_size: expected a positive number") {
		t.Fatalf("other faults without a check: %v", err)
	}
}

func TestURLs(t *testing.T) {
	srcs, err := Parse([]byte(goodYAML), "config.yaml", checkCSS)
	if err != nil {
		t.Fatal(err)
	}
	s := srcs[0]
	if got, want := s.SearchURL([]string{"web crawling", "freshness&co"}, 3), `https://scholar.example/search?q=%22web+crawling%22+freshness%26co&start=20`; got != want {
		t.Errorf("SearchURL = %s, want %s", got, want)
	}
	if got, want := s.ItemURL("a/b c"), "https://scholar.example/item/a%2Fb%20c"; got != want {
		t.Errorf("ItemURL = %s, want %s", got, want)
	}
	d := srcs[1]
	if got, want := d.SearchURL([]string{"{page}"}, 0), "http://shop.example/find/%7Bpage%7D/1"; got != want {
		t.Errorf("SearchURL = %s, want %s (no re-expansion, page ≥ 1)", got, want)
	}
	if d.ItemURL("x") != "" {
		t.Error("ItemURL without item_url")
	}
}

func TestKeywordsWeightValueDissimilarity(t *testing.T) {
	srcs, _ := Parse([]byte(goodYAML), "config.yaml", checkCSS)
	s := srcs[0]
	f := map[string]string{"title": "The Evolution of the Web and Implications for an Incremental Crawler", "authors": "Junghoo Cho, Hector  Garcia-Molina, junghoo cho", "citations": "1234"}
	want := []string{"evolution", "web", "implications", "incremental", "crawler", "junghoo cho", "hector garcia-molina"}
	if got := s.Keywords(f); !slices.Equal(got, want) {
		t.Errorf("Keywords = %q, want %q", got, want)
	}
	if w := s.Weight(f); w != 1234 {
		t.Errorf("Weight = %v", w)
	}
	if w := s.Weight(map[string]string{}); w != 1 {
		t.Errorf("Weight of an unseen item = %v, want 1", w)
	}
	if v, ok := s.Value(f); !ok || v != 1234 {
		t.Errorf("Value = %v %v", v, ok)
	}
	if _, ok := s.Value(map[string]string{"citations": "n/a"}); ok {
		t.Error("Value of n/a")
	}
	if d := s.Dissimilarity(map[string]string{"citations": "10"}, map[string]string{"citations": "1,013"}); d != 1003 {
		t.Errorf("Dissimilarity = %v, want 1003", d)
	}
	d := srcs[1]
	if w := d.Weight(nil); w != 2.5 {
		t.Errorf("constant weight = %v", w)
	}
	old := map[string]string{"price": "9.99", "name": "The Matrix"}
	if got := d.Dissimilarity(old, map[string]string{"price": "7.49", "name": "The Matrix (4K)"}); got < 3.4999 || got > 3.5001 {
		t.Errorf("Dissimilarity = %v, want 2.5 + 1", got)
	}
	if got := d.Dissimilarity(old, map[string]string{"name": "The Matrix"}); got != 1 {
		t.Errorf("missing price: %v, want 1 (changed)", got)
	}
	if got := d.Keywords(map[string]string{"name": "The Lord of the Rings: Return"}); !slices.Equal(got, []string{"lord", "rings", "return"}) {
		t.Errorf("list stopwords: %q", got)
	}
	if s.PageSize != 10 || s.Method != methodFirstPage || s.Quota != 10 {
		t.Errorf("planner knobs %+v", s)
	}
}

func TestCodeBuiltSource(t *testing.T) {
	s := Source{
		Name: "c", SearchTemplate: "http://h.example/?q={query}&page={page}", PageSize: 5,
		Item: "li", ID: Field{Attr: "id"}, Fields: map[string]Field{"v": {Selector: ".v", Numeric: true}},
		KeywordSpecs: []KeywordSpec{{Field: "v"}}, ValueField: "v",
	}
	if err := s.Check(checkCSS); err != nil {
		t.Fatalf("Check before Validate: %v", err)
	}
	if s.Method != 0 || s.WeightConst != 0 {
		t.Fatalf("Check applied defaults: %+v", s)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if s.WeightConst != 1 || s.KeywordSpecs[0].Split != splitWords {
		t.Errorf("defaults %+v", s)
	}
	s.Item = "li["
	if err := s.Validate(); err != nil {
		t.Errorf("Validate judged CSS, which is the parser's: %v", err)
	}
	err := s.Check(checkCSS)
	if err == nil || !strings.HasPrefix(err.Error(), "item: expected a CSS selector: unbalanced brackets") {
		t.Errorf("Check = %v", err)
	}
}

func TestLoadReferenceCounts(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(goodYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(cfg, checkCSS)
	if err == nil || !strings.Contains(err.Error(), "sources[0].reference_counts: open ") {
		t.Fatalf("missing counts file: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "counts.csv"), []byte("query,count\nWeb,120\ncrawler web,7\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srcs, err := Load(cfg, checkCSS)
	if err != nil {
		t.Fatal(err)
	}
	refs := srcs[0].References
	if refs["web"] != 120 || refs[canonicalQuery("web", "crawler")] != 7 || refs["crawler web"] != 7 || len(refs) != 2 {
		t.Fatalf("references %v", refs)
	}
	if srcs[0].ReferenceScale != 4.6 {
		t.Errorf("reference scale %v, want 4.6", srcs[0].ReferenceScale)
	}
	for _, bad := range []string{"a b c,1\n", "web,-3\n", "web\n", "web,x\n"} {
		if _, err := readCounts(strings.NewReader(bad), "c.csv"); err == nil || !strings.HasPrefix(err.Error(), "c.csv") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if _, err := Load(filepath.Join(dir, "nope.yaml"), checkCSS); err == nil {
		t.Error("missing config file")
	}
}

func TestJSONRoundTrip(t *testing.T) {
	srcs, err := Parse([]byte(goodYAML), "config.yaml", checkCSS)
	if err != nil {
		t.Fatal(err)
	}
	s := srcs[0]
	s.References = map[string]int{canonicalQuery("a", "b"): 3} // not encoded
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeJSON(b, checkCSS)
	if err != nil {
		t.Fatal(err)
	}
	if got.SearchURL([]string{"x"}, 2) != s.SearchURL([]string{"x"}, 2) || got.TimeUnit != time.Hour ||
		!slices.Equal(got.Keywords(map[string]string{"title": "the web crawler"}), []string{"web", "crawler"}) ||
		got.References != nil || got.Fields["citations"].Regexp != s.Fields["citations"].Regexp {
		t.Fatalf("round trip %s\n%+v", b, got)
	}
	if _, err := DecodeJSON([]byte(`{"name":"x","bogus":1}`), checkCSS); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("unknown key: %v", err)
	}
	if _, err := DecodeJSON([]byte(`{"name":"x"}`), checkCSS); err == nil || !strings.Contains(err.Error(), "search_url: missing") {
		t.Errorf("invalid: %v", err)
	}
}

// weight: {attribute: NAME} reads an attribute given with the items, which
// no result page carries; CountsUpdates says whether a refresh's
// dissimilarity counts updates.
func TestWeightAttributeAndCountsUpdates(t *testing.T) {
	y := strings.Replace(goodYAML, "weight: citations", "weight: {attribute: importance}", 1)
	srcs, err := Parse([]byte(y), "config.yaml", checkCSS)
	if err != nil {
		t.Fatal(err)
	}
	s := srcs[0]
	if s.WeightAttr != "importance" || s.WeightField != "" || s.WeightConst != 0 {
		t.Fatalf("decoded weight %q %q %v", s.WeightAttr, s.WeightField, s.WeightConst)
	}
	if w := s.Weight(map[string]string{"importance": "7", "citations": "1000"}); w != 7 {
		t.Errorf("Weight = %v, want the attribute 7", w)
	}
	if w := s.Weight(map[string]string{"citations": "1000"}); w != 1 {
		t.Errorf("Weight without the attribute = %v, want 1", w)
	}
	// Round trip through the task encoding keeps it.
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	d, err := DecodeJSON(b, checkCSS)
	if err != nil || d.WeightAttr != "importance" {
		t.Fatalf("DecodeJSON: %v %q", err, d.WeightAttr)
	}
	if !s.CountsUpdates() {
		t.Error("numeric value field (the default dissimilarity): CountsUpdates false")
	}
	if srcs[1].CountsUpdates() {
		t.Error("dvd: a changed dissimilarity does not count updates")
	}
}
