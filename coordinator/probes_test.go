package coordinator

import (
	"strings"
	"testing"

	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/source"
)

// A source built in code reaches the coordinator without a config file's
// checks: a selector the workers cannot compile is refused here, not by
// every probe task.
func TestSourceStateChecksSelectors(t *testing.T) {
	src := source.Source{
		Name: "c", SearchTemplate: "http://h.example/?q={query}&page={page}", PageSize: 5,
		Item: "li", ID: source.Field{Attr: "id"}, Fields: map[string]source.Field{"v": {Selector: ".v", Numeric: true}},
		KeywordSpecs: []source.KeywordSpec{{Field: "v"}}, ValueField: "v",
	}
	if _, err := newSourceState(src, schedule.ProbeGreedy, 1); err != nil {
		t.Fatal(err)
	}
	src.Fields = map[string]source.Field{"v": {Selector: ".v[", Numeric: true}}
	_, err := newSourceState(src, schedule.ProbeGreedy, 1)
	if err == nil || !strings.HasPrefix(err.Error(), "fields.v.selector: expected a CSS selector") {
		t.Fatalf("bad selector: %v", err)
	}
}
