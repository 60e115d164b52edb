package coordinator

import (
	"strings"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/proto"
)

// Validate names every field out of range, nested ones by their path,
// and takes none as its default; the defaults pass.
func TestOptionsValidate(t *testing.T) {
	if err := DefaultOptions().Validate(); err != nil {
		t.Fatalf("the defaults refused: %v", err)
	}
	for _, c := range []struct {
		field string
		set   func(*Options)
	}{
		{"Budget", func(o *Options) { o.Budget = 0 }},
		{"HostRate", func(o *Options) { o.HostRate = -1 }},
		{"PriorRate", func(o *Options) { o.PriorRate = 0 }},
		{"Policy", func(o *Options) { o.Policy = nil }},
		{"ExploreShare", func(o *Options) { o.ExploreShare = 0 }},
		{"Replan", func(o *Options) { o.Replan = 0 }},
		{"HalfLife", func(o *Options) { o.HalfLife = 0 }},
		{"MaxInFlight", func(o *Options) { o.MaxInFlight = 0 }},
		{"LMSkew", func(o *Options) { o.LMSkew = time.Millisecond }},
		{"ProbePolicy", func(o *Options) { o.ProbePolicy = "" }},
		{"Retention.Versions", func(o *Options) { o.Retention.Versions = -1 }},
		{"Retention.FoldMarksAge", func(o *Options) { o.Retention.FoldMarksAge = 0 }},
		{"AckWait", func(o *Options) { o.AckWait = 0 }},
		{"MaxDeliver", func(o *Options) { o.MaxDeliver = 0 }},
		{"ConsoleEvery", func(o *Options) { o.ConsoleEvery = 0 }},
		{"Webhooks.Attempts", func(o *Options) { o.Webhooks.Attempts = 0 }},
		{"DefaultIgnore.Patterns", func(o *Options) { o.DefaultIgnore = proto.IgnoreRules{Patterns: []string{"(["}} }},
		{"DefaultIgnore.Selectors", func(o *Options) { o.DefaultIgnore = proto.IgnoreRules{Selectors: []string{""}} }},
		{"DefaultIgnore.MinChange", func(o *Options) { o.DefaultIgnore = proto.IgnoreRules{MinChange: -1} }},
	} {
		o := DefaultOptions()
		c.set(&o)
		err := o.Validate()
		if err == nil || !strings.Contains(err.Error(), c.field+":") {
			t.Errorf("%s: Validate = %v, want an error naming the field", c.field, err)
		}
		if _, err := New(nil, nil, nil, o); err == nil {
			t.Errorf("%s: New accepted options Validate refuses", c.field)
		}
	}
}
