package source

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Load reads the `sources:` key of the YAML config file at path (see the
// package documentation), validates every source, the CSS syntax of its
// selectors with sel (probeparse.CheckSelector), and reads each
// reference_counts file (a relative path is relative to the config file's
// directory). A file without the key yields no sources and no error.
func Load(path string, sel SelectorCheck) ([]Source, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sources: %w", err)
	}
	srcs, err := Parse(b, path, sel)
	if err != nil {
		return nil, err
	}
	var errs []error
	for i := range srcs {
		s := &srcs[i]
		if s.ReferenceCounts == "" {
			continue
		}
		p := s.ReferenceCounts
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(path), p)
		}
		refs, err := readCountsFile(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: sources[%d].reference_counts: %w", path, i, err))
			continue
		}
		s.References = refs
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return srcs, nil
}

func readCountsFile(path string) (map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readCounts(f, path)
}

// readCounts reads reference counts (paper §4.1): CSV lines "query,count"
// where query is one keyword or two separated by a space ("crawler
// freshness"); keywords are lower-cased and pairs made canonical (see
// canonicalQuery). A first line "query,count" is taken as a header. Errors
// name the file and line.
func readCounts(r io.Reader, name string) (map[string]int, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = 2
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	out := map[string]int{}
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if line == 1 && strings.EqualFold(rec[0], "query") && strings.EqualFold(rec[1], "count") {
			continue
		}
		kw := strings.Fields(strings.ToLower(rec[0]))
		var q string
		switch len(kw) {
		case 1:
			q = canonicalQuery(kw[0], "")
		case 2:
			q = canonicalQuery(kw[0], kw[1])
		default:
			return nil, fmt.Errorf("%s:%d: query %q: expected one or two keywords", name, line, rec[0])
		}
		n, err := strconv.Atoi(strings.TrimSpace(rec[1]))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%s:%d: count %q: expected an integer ≥ 0", name, line, rec[1])
		}
		out[q] = n
	}
}

// canonicalQuery is the key of a one- or two-keyword query in References:
// the keywords in sorted order, separated by a space; a pair of equal
// keywords is the single keyword.
func canonicalQuery(a, b string) string {
	switch {
	case a == b || b == "":
		return a
	case a == "":
		return b
	case b < a:
		a, b = b, a
	}
	return a + " " + b
}

// Parse reads the `sources:` key of a YAML config document; name (the file
// name) prefixes error messages. Every source is validated, the CSS syntax
// of its selectors with sel (nil: not checked). Errors are joined, one per
// problem, each naming the key path and line, e.g.
// `config.yaml: sources[1].fields.citations.selector: expected a CSS
// selector: ... (line 14)`.
func Parse(data []byte, name string, sel SelectorCheck) ([]Source, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, nil // empty file
	}
	root := deref(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: expected a mapping at the top level (line %d)", name, root.Line)
	}
	var list *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "sources" {
			list = deref(root.Content[i+1])
		}
	}
	if list == nil || list.Tag == "!!null" {
		return nil, nil
	}
	if list.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s: sources: expected a list of sources (line %d)", name, list.Line)
	}
	var (
		out   []Source
		errs  []error
		names = map[string]int{}
	)
	for i, n := range list.Content {
		d := &decoder{file: name, prefix: fmt.Sprintf("sources[%d]", i), lines: map[string]int{}}
		n = deref(n)
		d.lines[""] = n.Line
		s := d.source(n)
		if len(d.errs) == 0 {
			if err := s.validate(sel); err != nil {
				for _, e := range flatten(err) {
					var fe *fieldError
					if errors.As(e, &fe) {
						d.fail(fe.Path, d.lineOf(fe.Path), "%s", fe.Msg)
					} else {
						d.fail("", n.Line, "%v", e)
					}
				}
			}
		}
		if j, dup := names[s.Name]; dup && s.Name != "" {
			d.fail("name", d.lineOf("name"), "duplicate source name %q (also sources[%d])", s.Name, j)
		} else {
			names[s.Name] = i
		}
		errs = append(errs, d.errs...)
		out = append(out, s)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// decoder walks one source's YAML node, recording the line of every key
// path so validation errors can point at it.
type decoder struct {
	file, prefix string
	lines        map[string]int
	errs         []error
}

func (d *decoder) fail(path string, line int, format string, args ...any) {
	p := d.prefix
	if path != "" {
		p += "." + path
	}
	d.errs = append(d.errs, fmt.Errorf("%s: %s: %s (line %d)", d.file, p, fmt.Sprintf(format, args...), line))
}

// lineOf returns the line of path or of its nearest recorded parent.
func (d *decoder) lineOf(path string) int {
	for {
		if l, ok := d.lines[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return d.lines[""]
		}
		path = path[:i]
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// mapping calls handle for each key of n; keys without a handler are
// reported as unknown, duplicates as duplicate.
func (d *decoder) mapping(n *yaml.Node, path string, handle map[string]func(v *yaml.Node, p string)) {
	if n.Kind != yaml.MappingNode {
		d.fail(path, n.Line, "expected a mapping, got %s", kindName(n))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], deref(n.Content[i+1])
		p := join(path, k.Value)
		h, ok := handle[k.Value]
		switch {
		case !ok:
			d.fail(p, k.Line, "unknown key")
			continue
		case seen[k.Value]:
			d.fail(p, k.Line, "duplicate key")
			continue
		}
		seen[k.Value] = true
		d.lines[p] = k.Line
		h(v, p)
	}
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "nothing"
}

func (d *decoder) str(dst *string) func(*yaml.Node, string) {
	return func(v *yaml.Node, p string) {
		if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
			d.fail(p, v.Line, "expected a string, got %s", kindName(v))
			return
		}
		*dst = v.Value
	}
}

func (d *decoder) integer(dst *int) func(*yaml.Node, string) {
	return func(v *yaml.Node, p string) {
		n, err := strconv.Atoi(v.Value)
		if v.Kind != yaml.ScalarNode || err != nil {
			d.fail(p, v.Line, "expected an integer, got %s", kindName(v))
			return
		}
		*dst = n
	}
}

func (d *decoder) float(dst *float64) func(*yaml.Node, string) {
	return func(v *yaml.Node, p string) {
		f, err := strconv.ParseFloat(v.Value, 64)
		if v.Kind != yaml.ScalarNode || err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			d.fail(p, v.Line, "expected a finite number, got %s", kindName(v))
			return
		}
		*dst = f
	}
}

func (d *decoder) boolean(dst *bool) func(*yaml.Node, string) {
	return func(v *yaml.Node, p string) {
		if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" {
			d.fail(p, v.Line, "expected true or false, got %s", kindName(v))
			return
		}
		*dst = v.Value == "true" || v.Value == "True" || v.Value == "TRUE"
	}
}

func (d *decoder) duration(dst *time.Duration) func(*yaml.Node, string) {
	return func(v *yaml.Node, p string) {
		t, err := time.ParseDuration(v.Value)
		if v.Kind != yaml.ScalarNode || err != nil || t <= 0 {
			d.fail(p, v.Line, "expected a positive duration such as 1s, got %s", kindName(v))
			return
		}
		*dst = t
	}
}

// field decodes a Field: a scalar is shorthand for its selector.
func (d *decoder) field(dst *Field) func(*yaml.Node, string) {
	return func(v *yaml.Node, p string) {
		if v.Kind == yaml.ScalarNode && v.Tag != "!!null" {
			d.lines[p+".selector"] = v.Line
			*dst = Field{Selector: v.Value}
			return
		}
		d.mapping(v, p, map[string]func(*yaml.Node, string){
			"selector": d.str(&dst.Selector),
			"attr":     d.str(&dst.Attr),
			"regexp":   d.str(&dst.Regexp),
			"numeric":  d.boolean(&dst.Numeric),
			"join":     d.str(&dst.Join),
		})
	}
}

func (d *decoder) fields(dst *map[string]Field) func(*yaml.Node, string) {
	return func(v *yaml.Node, p string) {
		if v.Kind != yaml.MappingNode {
			d.fail(p, v.Line, "expected a mapping of field name to field spec, got %s", kindName(v))
			return
		}
		*dst = map[string]Field{}
		handle := map[string]func(*yaml.Node, string){}
		for i := 0; i+1 < len(v.Content); i += 2 {
			name := v.Content[i].Value
			handle[name] = func(fv *yaml.Node, fp string) {
				var f Field
				d.field(&f)(fv, fp)
				(*dst)[name] = f
			}
		}
		d.mapping(v, p, handle)
	}
}

func (d *decoder) source(n *yaml.Node) Source {
	var s Source
	d.mapping(n, "", map[string]func(*yaml.Node, string){
		"name":       d.str(&s.Name),
		"search_url": d.str(&s.SearchTemplate),
		"item_url":   d.str(&s.ItemTemplate),
		"page_size":  d.integer(&s.PageSize),
		"time_unit":  d.duration(&s.TimeUnit),
		"item":       d.str(&s.Item),
		"id":         d.field(&s.ID),
		"total":      d.field(&s.Total),
		"fields":     d.fields(&s.Fields),
		"item_page": func(v *yaml.Node, p string) {
			d.mapping(v, p, map[string]func(*yaml.Node, string){"fields": d.fields(&s.ItemFields)})
		},
		"keywords": func(v *yaml.Node, p string) {
			if v.Kind != yaml.SequenceNode {
				d.fail(p, v.Line, "expected a list, got %s", kindName(v))
				return
			}
			for i, kn := range v.Content {
				kp := fmt.Sprintf("%s[%d]", p, i)
				kn = deref(kn)
				d.lines[kp] = kn.Line
				k := KeywordSpec{Split: splitWords}
				d.mapping(kn, kp, map[string]func(*yaml.Node, string){
					"field":     d.str(&k.Field),
					"split":     d.str(&k.Split),
					"whole":     d.boolean(&k.Whole),
					"stopwords": d.stopwords(&k.Stopwords),
				})
				s.KeywordSpecs = append(s.KeywordSpecs, k)
			}
		},
		"value_field": d.str(&s.ValueField),
		"dissimilarity": func(v *yaml.Node, p string) {
			if v.Kind != yaml.MappingNode {
				d.fail(p, v.Line, "expected a mapping of field name to %q or %q, got %s", dissimNumeric, DissimChanged, kindName(v))
				return
			}
			s.Dissims = map[string]Dissim{}
			handle := map[string]func(*yaml.Node, string){}
			for i := 0; i+1 < len(v.Content); i += 2 {
				name := v.Content[i].Value
				handle[name] = func(dv *yaml.Node, dp string) {
					var x string
					d.str(&x)(dv, dp)
					s.Dissims[name] = Dissim(x)
				}
			}
			d.mapping(v, p, handle)
		},
		"weight": func(v *yaml.Node, p string) {
			if v.Kind == yaml.MappingNode {
				d.mapping(v, p, map[string]func(*yaml.Node, string){"attribute": d.str(&s.WeightAttr)})
				return
			}
			if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
				d.fail(p, v.Line, "expected a field name, a number or {attribute: NAME}, got %s", kindName(v))
				return
			}
			if v.Tag == "!!int" || v.Tag == "!!float" {
				d.float(&s.WeightConst)(v, p)
				return
			}
			s.WeightField = v.Value
		},
		"reference_counts": d.str(&s.ReferenceCounts),
		"reference_scale":  d.float(&s.ReferenceScale),
		"method":           d.integer(&s.Method),
		"quota":            d.integer(&s.Quota),
		"score":            d.str(&s.Score),
		"local_ratio":      d.float(&s.LocalRatio),
		"alpha":            d.float(&s.Alpha),
		"interval":         d.float(&s.Interval),
	})
	return s
}

// stopwords decodes "english", "none" or a list of words.
func (d *decoder) stopwords(dst *[]string) func(*yaml.Node, string) {
	return func(v *yaml.Node, p string) {
		switch {
		case v.Kind == yaml.ScalarNode && v.Value == "english":
			*dst = englishStopwords()
		case v.Kind == yaml.ScalarNode && v.Value == "none":
			*dst = nil
		case v.Kind == yaml.SequenceNode:
			for i, w := range v.Content {
				var s string
				d.str(&s)(deref(w), fmt.Sprintf("%s[%d]", p, i))
				*dst = append(*dst, s)
			}
		default:
			d.fail(p, v.Line, `expected "english", "none" or a list of words, got %s`, kindName(v))
		}
	}
}
