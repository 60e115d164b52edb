package extract

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sergi/go-diff/diffmatchpatch"

	"github.com/freshcrawl/freshcrawl/proto"
)

const (
	// previewMax caps DiffSummary.Preview in bytes, and previewLineMax one
	// line of it: the preview is for a change notification, not a copy.
	previewMax     = 1024
	previewLineMax = 200
	previewMore    = "\n…" // marks a preview cut short
	// charDiffMax bounds the size (in runes, per side) of a changed block
	// that is re-diffed character by character to count CharsChanged
	// exactly; larger blocks count all their characters as changed, which
	// is what a rewrite of that size is anyway.
	charDiffMax = 1 << 10
	// diffTimeout bounds the line diff of two huge, wholly different texts;
	// past it the library returns a valid but less minimal diff.
	diffTimeout = 2 * time.Second
)

// Diff compares two extracted versions line by line (the texts the Extractor
// returns have one block per line) and summarises the change:
//
//   - LinesAdded / LinesRemoved: lines only in next / only in prev, from a
//     Myers line diff (github.com/sergi/go-diff, each distinct line mapped to
//     one rune, as its DiffLinesToRunes does);
//   - CharsChanged: characters inserted plus deleted, counted by a
//     character diff inside each changed block, so a price edit in a long
//     line counts the digits, not the line;
//   - Magnitude: CharsChanged / (len(prev) + len(next)) in characters, in
//     [0,1]: 0 for equal texts, 1 for texts with nothing in common, and for
//     a substitution the share of the text replaced;
//   - Numeric: when both texts are a single number (see parseNumber),
//     Magnitude is instead |next − prev| in the number's units;
//   - Preview: the first changed lines, "- " for removed and "+ " for
//     added, at most about 1 KiB.
//
// Diff never panics.
func Diff(prev, next string) proto.DiffSummary {
	return diff(prev, next, maxLineIDs)
}

// diff is Diff with the distinct-line limit as a parameter, so tests can
// reach the fallback without building a million-line text.
func diff(prev, next string, maxLines int) (d proto.DiffSummary) {
	if a, okA := parseNumber(prev); okA {
		if b, okB := parseNumber(next); okB {
			defer func() { d.Numeric, d.Magnitude = true, math.Abs(b-a) }()
		}
	}
	if prev == next {
		return d
	}
	defer func() {
		// The diff library panics on inputs it considers impossible; the
		// multiset count is a correct, if unordered, answer for any input.
		if p := recover(); p != nil {
			d = multisetDiff(prev, next)
		}
	}()

	p, n := splitLines(prev), splitLines(next)
	r1, r2, lines, ok := linesToRunes(p, n, maxLines)
	if !ok {
		return multisetDiff(prev, next)
	}
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = diffTimeout
	diffs := dmp.DiffMainRunes(r1, r2, false)

	var (
		pv       preview
		del, ins []string // the current changed block
	)
	flush := func() {
		d.CharsChanged += blockChars(dmp, del, ins, len(p) > 0, len(n) > 0)
		del, ins = del[:0], ins[:0]
	}
	for _, df := range diffs {
		switch df.Type {
		case diffmatchpatch.DiffEqual:
			flush()
		case diffmatchpatch.DiffDelete:
			for _, r := range df.Text {
				l := lines[runeIndex(r)]
				del = append(del, l)
				d.LinesRemoved++
				pv.add("- ", l)
			}
		case diffmatchpatch.DiffInsert:
			for _, r := range df.Text {
				l := lines[runeIndex(r)]
				ins = append(ins, l)
				d.LinesAdded++
				pv.add("+ ", l)
			}
		}
	}
	flush()
	d.Magnitude = magnitude(d.CharsChanged, prev, next)
	d.Preview = pv.String()
	return d
}

// Significant reports whether a change is large enough to count, given the
// task's MinChange. For a numeric value the threshold is absolute (a price
// that moved by at least MinChange); otherwise it is the share of the text
// (Magnitude >= MinChange). An unchanged or numerically equal value is never
// significant, whatever the threshold.
func Significant(d proto.DiffSummary, minChange float64) bool {
	if d.Numeric {
		return d.Magnitude > 0 && d.Magnitude >= minChange
	}
	changed := d.LinesAdded > 0 || d.LinesRemoved > 0 || d.CharsChanged > 0 || d.Magnitude > 0
	return changed && d.Magnitude >= minChange
}

func magnitude(changed int, prev, next string) float64 {
	total := utf8.RuneCountInString(prev) + utf8.RuneCountInString(next)
	if total == 0 {
		return 0
	}
	return math.Min(1, float64(changed)/float64(total))
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// maxLineIDs is how many distinct lines can be mapped to runes: every code
// point except the surrogates.
const maxLineIDs = utf8.MaxRune + 1 - (0xE000 - 0xD800)

// runeOf and runeIndex map a line number to a valid rune and back, skipping
// the surrogate range, which does not survive a string conversion.
func runeOf(i int) rune {
	if i >= 0xD800 {
		return rune(i + 0x800)
	}
	return rune(i)
}

func runeIndex(r rune) int {
	if r >= 0xE000 {
		return int(r) - 0x800
	}
	return int(r)
}

// linesToRunes maps each distinct line to one rune, so the diff runs on
// lines. It does what DiffLinesToRunes does, without that function's panic
// past about a million distinct lines (ok is false when there are more than
// maxLines, at most maxLineIDs).
func linesToRunes(a, b []string, maxLines int) (ra, rb []rune, lines []string, ok bool) {
	ids := make(map[string]int, len(a)+len(b))
	conv := func(ls []string) []rune {
		rs := make([]rune, len(ls))
		for i, l := range ls {
			id, seen := ids[l]
			if !seen {
				id = len(lines)
				ids[l] = id
				lines = append(lines, l)
			}
			rs[i] = runeOf(id)
		}
		return rs
	}
	ra, rb = conv(a), conv(b)
	return ra, rb, lines, len(lines) <= maxLines
}

// blockChars counts the characters inserted plus deleted in one changed
// block: exactly, with a character diff, when the block is small enough. A
// block that only inserts (or only deletes) lines also adds (removes) their
// line separators, except where the text was (becomes) empty.
func blockChars(dmp *diffmatchpatch.DiffMatchPatch, del, ins []string, prevLines, nextLines bool) int {
	switch {
	case len(del) == 0 && len(ins) == 0:
		return 0
	case len(del) == 0:
		return runeCount(ins) + separators(len(ins), prevLines)
	case len(ins) == 0:
		return runeCount(del) + separators(len(del), nextLines)
	}
	a, b := strings.Join(del, "\n"), strings.Join(ins, "\n")
	na, nb := utf8.RuneCountInString(a), utf8.RuneCountInString(b)
	if na > charDiffMax || nb > charDiffMax {
		return na + nb
	}
	n := 0
	for _, df := range dmp.DiffMainRunes([]rune(a), []rune(b), false) {
		if df.Type != diffmatchpatch.DiffEqual {
			n += utf8.RuneCountInString(df.Text)
		}
	}
	if n == 0 {
		// Lines that differ only in invalid bytes, which both decode to
		// U+FFFD; extraction never produces them, but a change is a change.
		return na + nb
	}
	return n
}

// separators is how many line separators come with k whole lines added to
// (or removed from) a text that otherwise has lines or is empty.
func separators(k int, otherLines bool) int {
	if otherLines {
		return k
	}
	return k - 1
}

func runeCount(lines []string) int {
	n := 0
	for _, l := range lines {
		n += utf8.RuneCountInString(l)
	}
	return n
}

// multisetDiff counts lines present more often in one text than the other,
// ignoring order. It is the fallback for inputs the ordered diff cannot
// take.
func multisetDiff(prev, next string) proto.DiffSummary {
	var d proto.DiffSummary
	var pv preview
	counts := make(map[string]int)
	for _, l := range splitLines(prev) {
		counts[l]++
	}
	for _, l := range splitLines(next) {
		if counts[l] > 0 {
			counts[l]--
			continue
		}
		d.LinesAdded++
		d.CharsChanged += utf8.RuneCountInString(l) + 1
		pv.add("+ ", l)
	}
	for _, l := range splitLines(prev) {
		if counts[l] > 0 {
			counts[l]--
			d.LinesRemoved++
			d.CharsChanged += utf8.RuneCountInString(l) + 1
			pv.add("- ", l)
		}
	}
	d.Magnitude = magnitude(d.CharsChanged, prev, next)
	d.Preview = pv.String()
	return d
}

// preview accumulates changed lines up to previewMax bytes.
type preview struct {
	b    strings.Builder
	full bool
}

func (p *preview) add(prefix, line string) {
	if p.full {
		return
	}
	if len(line) > previewLineMax {
		line = truncateUTF8(line, previewLineMax) + "…"
	}
	need := len(prefix) + len(line)
	if p.b.Len() > 0 {
		need++
	}
	if p.b.Len()+need > previewMax-len(previewMore) {
		p.full = true
		p.b.WriteString(previewMore)
		return
	}
	if p.b.Len() > 0 {
		p.b.WriteByte('\n')
	}
	p.b.WriteString(prefix)
	p.b.WriteString(line)
}

func (p *preview) String() string { return p.b.String() }

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// parseNumber reads a text that is a single number, as a selector on a
// price, a count or a score yields: optional sign, optional currency symbol
// or three-letter code before or after, optional trailing percent sign,
// digits with thousands separators. Separator rules, to read both
// "1,234.50" and "1.234,50":
//   - with both '.' and ',' present, the last one is the decimal point;
//   - a lone ',' followed by exactly three digits is a thousands separator
//     ("1,234" is 1234), any other lone ',' is a decimal comma ("19,99");
//   - a lone '.' is a decimal point ("1.234" is 1.234);
//   - a separator that occurs more than once groups thousands, as do
//     spaces, no-break spaces and apostrophes between digits.
//
// It reports false for anything else, including dates, times and ranges.
func parseNumber(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 64 {
		return 0, false
	}
	neg, sawSign := false, false
	// Peel sign, currency and percent off both ends, in any order.
	for range 4 {
		before := s
		s = strings.TrimFunc(s, unicode.IsSpace)
		if r, size := utf8.DecodeRuneInString(s); !sawSign && (r == '-' || r == '+' || r == '−') {
			neg, sawSign, s = r != '+', true, s[size:]
		}
		s = strings.TrimFunc(s, func(r rune) bool { return unicode.Is(unicode.Sc, r) || r == '%' })
		s = trimCurrencyCode(s)
		if s == before {
			break
		}
	}
	if s == "" {
		return 0, false
	}

	// Reduce to digits, '.' and ','; grouping spaces must sit between
	// digits and are dropped.
	clean := make([]byte, 0, len(s))
	for i, r := range s {
		switch {
		case r >= '0' && r <= '9', r == '.', r == ',':
			clean = append(clean, byte(r))
		case r == ' ' || r == '\u00a0' || r == '\u202f' || r == '\u2009' || r == '\'' || r == '’':
			next := i + utf8.RuneLen(r)
			if i == 0 || next >= len(s) || !isDigit(s[i-1]) || !isDigit(s[next]) {
				return 0, false
			}
		default:
			return 0, false
		}
	}
	dots, commas := strings.Count(string(clean), "."), strings.Count(string(clean), ",")
	lastDot, lastComma := strings.LastIndexByte(string(clean), '.'), strings.LastIndexByte(string(clean), ',')
	decimalAt := -1
	switch {
	case dots > 0 && commas > 0:
		decimalAt = max(lastDot, lastComma)
	case dots == 1:
		decimalAt = lastDot
	case commas == 1 && len(clean)-lastComma-1 != 3:
		decimalAt = lastComma
	}
	intPart, frac := clean, []byte(nil)
	if decimalAt >= 0 {
		intPart, frac = clean[:decimalAt], clean[decimalAt+1:]
		if len(frac) == 0 || !allDigits(frac) {
			return 0, false
		}
	}
	intDigits, ok := ungroup(intPart)
	if !ok || (len(intDigits) == 0 && len(frac) == 0) {
		return 0, false
	}
	num := string(intDigits)
	if len(frac) > 0 {
		num += "." + string(frac)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

// ungroup removes thousands separators from the integer part of a number.
// All separators must be the same character; the group before the first
// is 1-3 digits, the last group 3, groups between 2 or 3 (which admits the
// Indian 1,23,45,678).
func ungroup(b []byte) ([]byte, bool) {
	if allDigits(b) {
		return b, true
	}
	var sep byte
	for _, c := range b {
		if !isDigit(c) {
			sep = c
			break
		}
	}
	groups := strings.Split(string(b), string(sep))
	out := make([]byte, 0, len(b))
	for i, g := range groups {
		ok := allDigits([]byte(g))
		switch {
		case i == 0:
			ok = ok && len(g) >= 1 && len(g) <= 3
		case i == len(groups)-1:
			ok = ok && len(g) == 3
		default:
			ok = ok && (len(g) == 2 || len(g) == 3)
		}
		if !ok {
			return nil, false
		}
		out = append(out, g...)
	}
	return out, true
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if !isDigit(c) {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// trimCurrencyCode drops a leading or trailing ISO 4217-looking code
// ("USD 5", "5 EUR").
func trimCurrencyCode(s string) string {
	isCode := func(c string) bool {
		for i := 0; i < len(c); i++ {
			if c[i] < 'A' || c[i] > 'Z' {
				return false
			}
		}
		return true
	}
	if len(s) > 3 && isCode(s[:3]) && !unicode.IsLetter(rune(s[3])) {
		s = s[3:]
	}
	if len(s) > 3 && isCode(s[len(s)-3:]) && !unicode.IsLetter(rune(s[len(s)-4])) {
		s = s[:len(s)-3]
	}
	return s
}
