// Package probeparse reads items off the pages of a keyword-search source
// (docs/design.md §3.6, the content-freshness paper): the result blocks of
// a search page, the total result count the page shows (which feeds the
// server-count estimate |R_S(q)| of paper §4.1), and the fields of an item
// page fetched by id (paper §1.3). What to read is defined by a [source.Source]; this package
// only applies it, with goquery.
//
// Result pages come from the open web, so parsing is lenient where a single
// odd block should not cost the whole page (a block without an id is
// skipped; a field that does not match is left out of the item) and strict
// where the definition has evidently gone out of date (blocks were found
// but none had an id). It never panics on any input.
package probeparse

import (
	"bytes"
	"fmt"
	"math"
	"strings"

	"github.com/PuerkitoBio/goquery"

	"github.com/freshcrawl/freshcrawl/internal/source"
	"github.com/freshcrawl/freshcrawl/proto"
)

// ParseResults returns the items on one search result page, in page order
// with duplicate ids dropped, and the total result count the page shows, or
// -1 when the source defines no total or the page does not show one.
func ParseResults(src *source.Source, body []byte) (items []proto.ProbeItem, total int, err error) {
	if src == nil {
		return nil, -1, fmt.Errorf("probeparse: nil source")
	}
	m, err := src.Matchers()
	if err != nil {
		return nil, -1, fmt.Errorf("probeparse: source %q: %w", src.Name, err)
	}
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
	if err != nil {
		return nil, -1, fmt.Errorf("probeparse: source %q: parse HTML: %w", src.Name, err)
	}
	total = -1
	if m.Total != nil {
		if v, ok := extract(doc.Selection, m.Total); ok {
			if f, ok := source.ParseNumber(v); ok && f >= 0 && f <= math.MaxInt32 {
				total = int(f)
			}
		}
	}
	blocks := doc.FindMatcher(m.Item)
	seen := make(map[string]bool, blocks.Length())
	blocks.Each(func(_ int, b *goquery.Selection) {
		id, ok := extract(b, m.ID)
		if !ok || seen[id] {
			return
		}
		seen[id] = true
		items = append(items, proto.ProbeItem{ID: id, Fields: fields(b, m.Fields)})
	})
	if blocks.Length() > 0 && len(items) == 0 {
		return nil, total, fmt.Errorf("probeparse: source %q: %d result blocks match %q but none has an id: is the id definition out of date?", src.Name, blocks.Length(), src.Item)
	}
	return items, total, nil
}

// ParseItem reads the item page of id. It fails when the page lacks the
// source's value field, since that is what the fetch was for (a missing or
// changed page layout, or an error page served with status 200).
func ParseItem(src *source.Source, id string, body []byte) (proto.ProbeItem, error) {
	if src == nil {
		return proto.ProbeItem{}, fmt.Errorf("probeparse: nil source")
	}
	m, err := src.Matchers()
	if err != nil {
		return proto.ProbeItem{}, fmt.Errorf("probeparse: source %q: %w", src.Name, err)
	}
	if len(m.ItemFields) == 0 {
		return proto.ProbeItem{}, fmt.Errorf("probeparse: source %q has no item_page fields", src.Name)
	}
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
	if err != nil {
		return proto.ProbeItem{}, fmt.Errorf("probeparse: source %q: item %q: parse HTML: %w", src.Name, id, err)
	}
	it := proto.ProbeItem{ID: id, Fields: fields(doc.Selection, m.ItemFields)}
	if _, ok := it.Fields[src.ValueField]; !ok {
		return it, fmt.Errorf("probeparse: source %q: item %q: value field %q not found on the item page", src.Name, id, src.ValueField)
	}
	return it, nil
}

func fields(ctx *goquery.Selection, specs []*source.Compiled) map[string]string {
	out := make(map[string]string, len(specs))
	for _, f := range specs {
		if v, ok := extract(ctx, f); ok {
			out[f.Name] = v
		}
	}
	return out
}

// extract reads one field within ctx: the first match (or, with Join, every
// match), its attribute or collapsed text, cleaned by the field's pattern.
func extract(ctx *goquery.Selection, f *source.Compiled) (string, bool) {
	nodes := ctx
	if f.Sel != nil {
		nodes = ctx.FindMatcher(f.Sel)
	}
	if nodes.Length() == 0 {
		return "", false
	}
	if f.Join == "" {
		return read(nodes.First(), f)
	}
	var vals []string
	nodes.Each(func(_ int, n *goquery.Selection) {
		if v, ok := read(n, f); ok {
			vals = append(vals, v)
		}
	})
	if len(vals) == 0 {
		return "", false
	}
	return strings.Join(vals, f.Join), true
}

func read(n *goquery.Selection, f *source.Compiled) (string, bool) {
	var raw string
	if f.Attr != "" {
		v, ok := n.Attr(f.Attr)
		if !ok {
			return "", false
		}
		raw = v
	} else {
		raw = n.Text()
	}
	return f.Clean(strings.Join(strings.Fields(raw), " "))
}
