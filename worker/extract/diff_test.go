package extract

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/freshcrawl/freshcrawl/proto"
)

func TestDiffKnownInputs(t *testing.T) {
	for _, c := range []struct {
		name, prev, next string
		want             proto.DiffSummary
	}{
		{"equal", "a\nb", "a\nb", proto.DiffSummary{}},
		{"blank-line-added", "a", "a\n", proto.DiffSummary{LinesAdded: 1, CharsChanged: 1, Magnitude: 1.0 / 3, Preview: "+ "}},
		{"from-empty", "", "hello", proto.DiffSummary{LinesAdded: 1, CharsChanged: 5, Magnitude: 1, Preview: "+ hello"}},
		{"to-empty", "hello\nworld", "", proto.DiffSummary{LinesRemoved: 2, CharsChanged: 11, Magnitude: 1, Preview: "- hello\n- world"}},
		{
			// b→B is one char out, one in; "\nd" is two in: 4 of 5+7.
			"edit-and-append", "a\nb\nc", "a\nB\nc\nd",
			proto.DiffSummary{LinesAdded: 2, LinesRemoved: 1, CharsChanged: 4, Magnitude: 4.0 / 12, Preview: "- b\n+ B\n+ d"},
		},
		{
			"word-in-long-line", "the quick brown fox", "the quick red fox",
			// "brown"→"red": the character diff keeps the shared 'r'.
			proto.DiffSummary{LinesAdded: 1, LinesRemoved: 1, CharsChanged: 6, Magnitude: 6.0 / 36, Preview: "- the quick brown fox\n+ the quick red fox"},
		},
		{
			"moved-line", "x\ny\nz", "y\nz\nx",
			// "x\n" out, "\nx" in.
			proto.DiffSummary{LinesAdded: 1, LinesRemoved: 1, CharsChanged: 4, Magnitude: 4.0 / 10, Preview: "- x\n+ x"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Diff(c.prev, c.next)
			if math.Abs(got.Magnitude-c.want.Magnitude) > 1e-9 {
				t.Errorf("Magnitude = %v, want %v", got.Magnitude, c.want.Magnitude)
			}
			got.Magnitude = c.want.Magnitude
			if got != c.want {
				t.Errorf("Diff = %+v\nwant   %+v", got, c.want)
			}
		})
	}
}

func TestNumericDiff(t *testing.T) {
	d := Diff("$19.99", "$24.99")
	if !d.Numeric || math.Abs(d.Magnitude-5.00) > 1e-9 {
		t.Fatalf("price diff = %+v", d)
	}
	if !Significant(d, 1) || Significant(d, 10) {
		t.Fatal("a 5.00 move is significant at MinChange 1, not at 10")
	}
	if d := Diff("1,234", "1,200"); !d.Numeric || d.Magnitude != 34 {
		t.Fatalf("thousands: %+v", d)
	}
	if d := Diff("19.99", "19.990"); !d.Numeric || d.Magnitude != 0 || Significant(d, 0) {
		t.Fatalf("numerically equal must not be significant: %+v", d)
	}
	if d := Diff("19.99", "sold out"); d.Numeric {
		t.Fatalf("text is not numeric: %+v", d)
	}
}

func TestParseNumber(t *testing.T) {
	good := map[string]float64{
		"42": 42, " 42 ": 42, "-5": -5, "−5": -5, "+3": 3, "0.5": 0.5, ".5": 0.5,
		"19.99": 19.99, "19,99": 19.99, "$19.99": 19.99, "-$5": -5, "$-5": -5,
		"€ 12,50": 12.5, "12,50 €": 12.5, "USD 1,234.56": 1234.56, "1.234,56 EUR": 1234.56,
		"1,234": 1234, "1.234": 1.234, "1,234,567": 1234567, "1.234.567": 1234567,
		"1 234,56": 1234.56, "1\u00a0234": 1234, "1'234.5": 1234.5, "1,23,456": 123456,
		"45%": 45, "£0": 0, "¥1,000": 1000,
	}
	for s, want := range good {
		got, ok := parseNumber(s)
		if !ok || math.Abs(got-want) > 1e-9 {
			t.Errorf("parseNumber(%q) = %v, %v; want %v", s, got, ok, want)
		}
	}
	for _, s := range []string{
		"", "$", "abc", "12:34", "2024-01-01", "1-2", "5.", "1,2,3", "1.2.3,4.5", "1..2",
		"12 apples", "v1.2", "1e5", "--5", "1,", "1 ,234", "NaN", "Inf", "1/2",
		"10-20", "1,234.5.6",
	} {
		if v, ok := parseNumber(s); ok {
			t.Errorf("parseNumber(%q) = %v, want not a number", s, v)
		}
	}
}

func TestSignificantMinChange(t *testing.T) {
	var lines []string
	for i := range 200 {
		lines = append(lines, fmt.Sprintf("line %d of a long and stable document", i))
	}
	prev := strings.Join(lines, "\n")
	tiny := strings.Replace(prev, "line 100 of", "line 100 0f", 1)
	big := strings.Join(lines[:100], "\n")

	d := Diff(prev, tiny)
	if d.LinesAdded != 1 || d.LinesRemoved != 1 || d.CharsChanged != 2 {
		t.Fatalf("tiny diff = %+v", d)
	}
	if Significant(d, 0.01) {
		t.Fatalf("a one-character change (magnitude %g) must be filtered at MinChange 0.01", d.Magnitude)
	}
	if !Significant(d, 0) {
		t.Fatal("any change counts at MinChange 0")
	}
	if d := Diff(prev, big); !Significant(d, 0.01) || d.LinesRemoved != 100 {
		t.Fatalf("halving the page must count: %+v", d)
	}
	if Significant(Diff(prev, prev), 0) {
		t.Fatal("no change is never significant")
	}
}

func TestDiffPreviewCapped(t *testing.T) {
	var a, b []string
	for i := range 100 {
		a = append(a, strings.Repeat("é", 150)+fmt.Sprint(i))
		b = append(b, strings.Repeat("ü", 150)+fmt.Sprint(i))
	}
	d := Diff(strings.Join(a, "\n"), strings.Join(b, "\n"))
	if len(d.Preview) > previewMax || !utf8.ValidString(d.Preview) || !strings.HasSuffix(d.Preview, previewMore) {
		t.Fatalf("preview %d bytes, valid=%v: %q", len(d.Preview), utf8.ValidString(d.Preview), d.Preview)
	}
	if !strings.HasPrefix(d.Preview, "- ééé") || d.LinesAdded != 100 || d.LinesRemoved != 100 || d.Magnitude != 1 {
		t.Fatalf("diff = %+v", d)
	}
}

func TestDiffManyDistinctLinesFallback(t *testing.T) {
	// More distinct lines than runes to map them to: the unordered count.
	prev := "a\nb\nc\nd"
	d := diff(prev, prev+"\nextra", 3)
	if d.LinesAdded != 1 || d.LinesRemoved != 0 || d.CharsChanged != 6 || d.Preview != "+ extra" {
		t.Fatalf("fallback diff = %+v", d)
	}
	if d := diff("x\ny\nz", "y\nz\nq", 2); d.LinesAdded != 1 || d.LinesRemoved != 1 || d.Preview != "+ q\n- x" {
		t.Fatalf("fallback diff = %+v", d)
	}
}

func TestLineRuneMapping(t *testing.T) {
	for _, i := range []int{0, 1, 0xD7FF, 0xD800, 0xDFFF, 0xE000, maxLineIDs - 1} {
		r := runeOf(i)
		if !utf8.ValidRune(r) || runeIndex(r) != i {
			t.Errorf("runeOf(%#x) = %#x, back %#x", i, r, runeIndex(r))
		}
	}
}
