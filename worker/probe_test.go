package worker

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/freshcrawl/freshcrawl/internal/source"
	"github.com/freshcrawl/freshcrawl/worker/probeparse"
)

// A probe task's definition is compiled once per distinct definition, and
// a selector the parser cannot compile fails the decoding, naming the key.
func TestProbeParserCache(t *testing.T) {
	src := source.Source{
		Name: "c", SearchTemplate: "http://h.example/?q={query}&page={page}", PageSize: 5,
		Item: "li", ID: source.Field{Attr: "id"}, Fields: map[string]source.Field{"v": {Selector: ".v", Numeric: true}},
		KeywordSpecs: []source.KeywordSpec{{Field: "v"}}, ValueField: "v",
	}
	def, err := json.Marshal(src)
	if err != nil {
		t.Fatal(err)
	}
	w := &Worker{parsers: map[string]*probeparse.Parser{}}
	p1, err := w.parser(def)
	if err != nil {
		t.Fatal(err)
	}
	if p2, err := w.parser(def); err != nil || p2 != p1 {
		t.Errorf("second parser(def) = %p, %v; want the cached %p", p2, err, p1)
	}
	src.Item = "li["
	if def, err = json.Marshal(src); err != nil {
		t.Fatal(err)
	}
	_, err = w.parser(def)
	if err == nil || !strings.HasPrefix(err.Error(), `decode source definition: source definition "c": item: expected a CSS selector`) {
		t.Errorf("bad selector: %v", err)
	}
}
