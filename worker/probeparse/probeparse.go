// Package probeparse reads items off the pages of a keyword-search source
// (docs/design.md §3.6, the content-freshness paper): the result blocks of
// a search page, the total result count the page shows (which feeds the
// server-count estimate |R_S(q)| of paper §4.1), and the fields of an item
// page fetched by id (paper §1.3). What to read is defined by a
// [source.Source]; this package compiles its CSS selectors (with cascadia)
// and applies them (with goquery). Package source leaves the selectors'
// syntax to [CheckSelector], so that the planner, which uses sources but
// never reads a page, links no HTML parser.
//
// Result pages come from the open web, so parsing is lenient where a single
// odd block should not cost the whole page (a block without an id is
// skipped; a field that does not match is left out of the item) and strict
// where the definition has evidently gone out of date (blocks were found
// but none had an id). It never panics on any input.
package probeparse

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/PuerkitoBio/goquery"
	"github.com/andybalholm/cascadia"

	"github.com/freshcrawl/freshcrawl/internal/source"
	"github.com/freshcrawl/freshcrawl/proto"
)

// CheckSelector reports whether sel is a CSS selector this package can
// apply. It is the [source.SelectorCheck] to give [source.Load],
// [source.Parse] and [source.DecodeJSON], so that a bad selector is
// reported where the definition is read, with its file, key path and line.
func CheckSelector(sel string) error {
	_, err := cascadia.Compile(sel)
	return err
}

// Parser reads the pages of one source, its selectors and patterns
// compiled once. It is safe for concurrent use.
type Parser struct {
	name       string // the source's, for errors
	itemSel    string // the result block selector, for errors
	valueField string
	item       cascadia.Selector
	id         *field
	total      *field // nil when the source defines no total
	fields     []*field
	itemFields []*field
}

// field is a [source.Field] ready to apply.
type field struct {
	name    string            // field name ("id", "total" for those)
	sel     cascadia.Selector // nil: the context element itself
	attr    string
	re      *regexp.Regexp // nil: no pattern
	numeric bool
	join    string
}

// New checks src, as [source.Source.Check] with [CheckSelector] does,
// and compiles its parsing spec. Later changes to src do not reach the
// Parser.
func New(src *source.Source) (*Parser, error) {
	if src == nil {
		return nil, errors.New("probeparse: nil source")
	}
	if err := src.Check(CheckSelector); err != nil {
		return nil, fmt.Errorf("probeparse: source %q: %w", src.Name, err)
	}
	p, err := compile(src)
	if err != nil {
		return nil, fmt.Errorf("probeparse: source %q: %w", src.Name, err)
	}
	return p, nil
}

// compile compiles the parsing spec of a checked source.
func compile(src *source.Source) (*Parser, error) {
	item, err := cascadia.Compile(src.Item)
	if err != nil {
		return nil, fmt.Errorf("item: %w", err)
	}
	p := &Parser{name: src.Name, itemSel: src.Item, valueField: src.ValueField, item: item}
	if p.id, err = compileField("id", "id", src.ID); err != nil {
		return nil, err
	}
	if src.Total != (source.Field{}) {
		t := src.Total
		t.Numeric = true
		if p.total, err = compileField("total", "total", t); err != nil {
			return nil, err
		}
	}
	if p.fields, err = compileFields("fields.", src.Fields); err != nil {
		return nil, err
	}
	if p.itemFields, err = compileFields("item_page.fields.", src.ItemFields); err != nil {
		return nil, err
	}
	return p, nil
}

func compileFields(prefix string, specs map[string]source.Field) ([]*field, error) {
	out := make([]*field, 0, len(specs))
	for _, name := range slices.Sorted(maps.Keys(specs)) {
		f, err := compileField(prefix+name, name, specs[name])
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// compileField compiles the field f, named path in errors.
func compileField(path, name string, f source.Field) (*field, error) {
	out := &field{name: name, attr: f.Attr, numeric: f.Numeric, join: f.Join}
	if f.Selector != "" {
		sel, err := cascadia.Compile(f.Selector)
		if err != nil {
			return nil, fmt.Errorf("%s.selector: %w", path, err)
		}
		out.sel = sel
	}
	if f.Regexp != "" {
		re, err := regexp.Compile(f.Regexp)
		if err != nil {
			return nil, fmt.Errorf("%s.regexp: %w", path, err)
		}
		out.re = re
	}
	return out, nil
}

// ParseResults returns the items on one search result page, as
// [Parser.Results] does, compiling src for this call only.
func ParseResults(src *source.Source, body []byte) (items []proto.ProbeItem, total int, err error) {
	p, err := New(src)
	if err != nil {
		return nil, -1, err
	}
	return p.Results(body)
}

// ParseItem reads the item page of id, as [Parser.Item] does, compiling
// src for this call only.
func ParseItem(src *source.Source, id string, body []byte) (proto.ProbeItem, error) {
	p, err := New(src)
	if err != nil {
		return proto.ProbeItem{}, err
	}
	return p.Item(id, body)
}

// Results returns the items on one search result page, in page order
// with duplicate ids dropped, and the total result count the page shows, or
// -1 when the source defines no total or the page does not show one.
func (p *Parser) Results(body []byte) (items []proto.ProbeItem, total int, err error) {
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
	if err != nil {
		return nil, -1, fmt.Errorf("probeparse: source %q: parse HTML: %w", p.name, err)
	}
	total = -1
	if p.total != nil {
		if v, ok := extract(doc.Selection, p.total); ok {
			if f, ok := source.ParseNumber(v); ok && f >= 0 && f <= math.MaxInt32 {
				total = int(f)
			}
		}
	}
	blocks := doc.FindMatcher(p.item)
	seen := make(map[string]bool, blocks.Length())
	blocks.Each(func(_ int, b *goquery.Selection) {
		id, ok := extract(b, p.id)
		if !ok || seen[id] {
			return
		}
		seen[id] = true
		items = append(items, proto.ProbeItem{ID: id, Fields: fields(b, p.fields)})
	})
	if blocks.Length() > 0 && len(items) == 0 {
		return nil, total, fmt.Errorf("probeparse: source %q: %d result blocks match %q but none has an id: is the id definition out of date?", p.name, blocks.Length(), p.itemSel)
	}
	return items, total, nil
}

// Item reads the item page of id. It fails when the page lacks the
// source's value field, since that is what the fetch was for (a missing or
// changed page layout, or an error page served with status 200).
func (p *Parser) Item(id string, body []byte) (proto.ProbeItem, error) {
	if len(p.itemFields) == 0 {
		return proto.ProbeItem{}, fmt.Errorf("probeparse: source %q has no item_page fields", p.name)
	}
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
	if err != nil {
		return proto.ProbeItem{}, fmt.Errorf("probeparse: source %q: item %q: parse HTML: %w", p.name, id, err)
	}
	it := proto.ProbeItem{ID: id, Fields: fields(doc.Selection, p.itemFields)}
	if _, ok := it.Fields[p.valueField]; !ok {
		return it, fmt.Errorf("probeparse: source %q: item %q: value field %q not found on the item page", p.name, id, p.valueField)
	}
	return it, nil
}

func fields(ctx *goquery.Selection, specs []*field) map[string]string {
	out := make(map[string]string, len(specs))
	for _, f := range specs {
		if v, ok := extract(ctx, f); ok {
			out[f.name] = v
		}
	}
	return out
}

// extract reads one field within ctx: the first match (or, with join, every
// match), its attribute or collapsed text, cleaned by the field's pattern.
func extract(ctx *goquery.Selection, f *field) (string, bool) {
	nodes := ctx
	if f.sel != nil {
		nodes = ctx.FindMatcher(f.sel)
	}
	if nodes.Length() == 0 {
		return "", false
	}
	if f.join == "" {
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
	return strings.Join(vals, f.join), true
}

func read(n *goquery.Selection, f *field) (string, bool) {
	var raw string
	if f.attr != "" {
		v, ok := n.Attr(f.attr)
		if !ok {
			return "", false
		}
		raw = v
	} else {
		raw = n.Text()
	}
	return f.clean(strings.Join(strings.Fields(raw), " "))
}

// clean applies the pattern and numeric normalisation to a raw value (text
// or attribute, already whitespace-collapsed). It reports false when the
// pattern does not match or a numeric value does not parse.
func (f *field) clean(raw string) (string, bool) {
	v := raw
	if f.re != nil {
		m := f.re.FindStringSubmatch(raw)
		switch {
		case m == nil:
			return "", false
		case len(m) > 1:
			v = m[1]
		default:
			v = m[0]
		}
	}
	v = strings.TrimSpace(v)
	if !f.numeric {
		return v, v != ""
	}
	n, ok := source.ParseNumber(v)
	if !ok {
		return "", false
	}
	return strconv.FormatFloat(n, 'f', -1, 64), true
}
