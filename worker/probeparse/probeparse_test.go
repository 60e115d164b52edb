package probeparse

import (
	"strings"
	"testing"

	"github.com/freshcrawl/freshcrawl/internal/source"
	"github.com/freshcrawl/freshcrawl/proto"
)

const def = `sources:
  - name: scholar
    search_url: "http://s.example/search?q={query}&page={page}"
    item_url: "http://s.example/item/{id}"
    page_size: 10
    item: "div.gs_r"
    id: {selector: "h3 a", attr: href, regexp: "cluster=([0-9]+)"}
    total: {selector: "#gs_ab_md", regexp: "About ([0-9,]+) results"}
    fields:
      title: "h3"
      authors: {selector: ".gs_a a", join: ", "}
      citations: {selector: ".gs_fl a", regexp: "Cited by ([0-9,]+)", numeric: true}
    item_page:
      fields:
        title: "h1"
        citations: {selector: "td.cites", numeric: true}
    keywords: [{field: title, stopwords: english}]
    value_field: citations
`

func mustSource(t testing.TB) *source.Source {
	t.Helper()
	srcs, err := source.Parse([]byte(def), "test.yaml", CheckSelector)
	if err != nil {
		t.Fatal(err)
	}
	return &srcs[0]
}

const resultsPage = `<!DOCTYPE html><html><body>
<div id="gs_ab_md">About 1,230 results (0.04 sec)</div>
<div class="gs_r">
  <h3><a href="/scholar?cluster=111&amp;hl=en">The   Evolution of the
  Web</a></h3>
  <div class="gs_a"><a>J Cho</a>, <a>H Garcia-Molina</a> - VLDB, 2000</div>
  <div class="gs_fl"><a>Cited by 2,345</a> <a>Related articles</a></div>
</div>
<div class="gs_r">
  <h3><a href="/scholar?cluster=222">Effective page refresh policies</a></h3>
  <div class="gs_fl"><a>Related articles</a></div>
</div>
<div class="gs_r"><h3>[CITATION] No link, so no id</h3></div>
<div class="gs_r">
  <h3><a href="/scholar?cluster=111">Duplicate of the first</a></h3>
</div>
</body></html>`

func TestParseResults(t *testing.T) {
	src := mustSource(t)
	items, total, err := ParseResults(src, []byte(resultsPage))
	if err != nil {
		t.Fatal(err)
	}
	if total != 1230 {
		t.Errorf("total = %d, want 1230", total)
	}
	want := []proto.ProbeItem{
		{ID: "111", Fields: map[string]string{"title": "The Evolution of the Web", "authors": "J Cho, H Garcia-Molina", "citations": "2345"}},
		{ID: "222", Fields: map[string]string{"title": "Effective page refresh policies"}},
	}
	if len(items) != len(want) {
		t.Fatalf("items = %+v", items)
	}
	for i := range want {
		if items[i].ID != want[i].ID || len(items[i].Fields) != len(want[i].Fields) {
			t.Fatalf("item %d = %+v, want %+v", i, items[i], want[i])
		}
		for k, v := range want[i].Fields {
			if items[i].Fields[k] != v {
				t.Errorf("item %d field %s = %q, want %q", i, k, items[i].Fields[k], v)
			}
		}
	}
	if kw := src.Keywords(items[0].Fields); strings.Join(kw, " ") != "evolution web" {
		t.Errorf("keywords %q", kw)
	}
}

func TestParseResultsEdgeCases(t *testing.T) {
	src := mustSource(t)
	// No results, no total shown.
	items, total, err := ParseResults(src, []byte(`<html><body><p>Your search did not match any articles.</p></body></html>`))
	if err != nil || len(items) != 0 || total != -1 {
		t.Errorf("empty page: %v %d %v", items, total, err)
	}
	// Total shown but zero results.
	if _, total, _ := ParseResults(src, []byte(`<div id="gs_ab_md">About 0 results</div>`)); total != 0 {
		t.Errorf("zero total = %d", total)
	}
	// Blocks present but none has an id: the definition is out of date.
	_, _, err = ParseResults(src, []byte(`<div class="gs_r"><h3>x</h3></div><div class="gs_r"></div>`))
	if err == nil || !strings.Contains(err.Error(), "2 result blocks") {
		t.Errorf("no ids: %v", err)
	}
	// Not HTML at all still parses leniently.
	if items, total, err := ParseResults(src, []byte("\x00\xff{json: true}")); err != nil || len(items) != 0 || total != -1 {
		t.Errorf("garbage: %v %d %v", items, total, err)
	}
	if _, _, err := ParseResults(nil, nil); err == nil {
		t.Error("nil source accepted")
	}
	bad := *src
	bad.Item = "div["
	if err := bad.Validate(); err != nil { // CSS syntax is this package's to judge
		t.Fatal(err)
	}
	if _, _, err := ParseResults(&bad, []byte(resultsPage)); err == nil || !strings.Contains(err.Error(), `probeparse: source "scholar": item: expected a CSS selector`) {
		t.Errorf("invalid source: %v", err)
	}
	bad = *src
	bad.Name = ""
	if _, err := New(&bad); err == nil || !strings.Contains(err.Error(), "name: missing") {
		t.Errorf("invalid source: %v", err)
	}
}

// A bad selector in a config file is reported where the file is read,
// with the file, the source, the key and the line.
func TestCheckSelectorInConfig(t *testing.T) {
	doc := strings.Replace(def, `citations: {selector: ".gs_fl a",`, `citations: {selector: ".gs_fl a[",`, 1)
	_, err := source.Parse([]byte(doc), "test.yaml", CheckSelector)
	want := "test.yaml: sources[0].fields.citations.selector: expected a CSS selector: expected identifier, found EOF instead (line 12)"
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v\nwant %s", err, want)
	}
	if CheckSelector("div.gs_r > h3 a[href]") != nil {
		t.Error("good selector rejected")
	}
}

// A Parser compiled once reads pages as the one-call functions do, and
// does not see later changes to the source.
func TestParserReuse(t *testing.T) {
	src := *mustSource(t)
	p, err := New(&src)
	if err != nil {
		t.Fatal(err)
	}
	src.Item = "nothing"
	for range 2 {
		items, total, err := p.Results([]byte(resultsPage))
		if err != nil || len(items) != 2 || total != 1230 {
			t.Fatalf("Results = %+v %d %v", items, total, err)
		}
	}
}

func TestFieldClean(t *testing.T) {
	f, err := compileField("fields.n", "n", source.Field{Selector: ".n", Numeric: true})
	if err != nil {
		t.Fatal(err)
	}
	for raw, want := range map[string]string{"1,234": "1234", "12.50": "12.5", " 7 ": "7", "x": "", "NaN": "", "1e400": ""} {
		got, ok := f.clean(raw)
		if got != want || ok != (want != "") {
			t.Errorf("clean(%q) = %q %v, want %q", raw, got, ok, want)
		}
	}
}

func TestParseItem(t *testing.T) {
	src := mustSource(t)
	page := `<html><body><h1>The Evolution of the Web</h1><table><tr><td class="cites"> 2,346 </td></tr></table></body></html>`
	it, err := ParseItem(src, "111", []byte(page))
	if err != nil || it.ID != "111" || it.Fields["citations"] != "2346" || it.Fields["title"] != "The Evolution of the Web" {
		t.Fatalf("ParseItem = %+v, %v", it, err)
	}
	_, err = ParseItem(src, "111", []byte(`<html><body><h1>Not found</h1></body></html>`))
	if err == nil || !strings.Contains(err.Error(), `value field "citations" not found`) {
		t.Errorf("missing value: %v", err)
	}
	noItems := *src
	noItems.ItemTemplate, noItems.ItemFields = "", nil
	if err := noItems.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseItem(&noItems, "1", []byte(page)); err == nil {
		t.Error("source without item_page accepted")
	}
}

func FuzzParseResults(f *testing.F) {
	src := mustSource(f)
	f.Add([]byte(resultsPage))
	f.Add([]byte(`<div class="gs_r"><h3><a href="cluster=1">x</a></h3><div class="gs_fl"><a>Cited by 99999999999999999999999</a></div></div>`))
	f.Add([]byte(`<div id="gs_ab_md">About -5 results</div><div id="gs_ab_md">About 1e300 results</div>`))
	f.Add([]byte("<"))
	f.Fuzz(func(t *testing.T, body []byte) {
		items, total, err := ParseResults(src, body)
		if total < -1 {
			t.Fatalf("total %d", total)
		}
		for _, it := range items {
			if it.ID == "" || it.Fields == nil {
				t.Fatalf("item %+v", it)
			}
		}
		if err != nil && len(items) != 0 {
			t.Fatalf("items with error: %v", err)
		}
		_, _ = ParseItem(src, "x", body)
	})
}
