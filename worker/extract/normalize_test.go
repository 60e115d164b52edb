package extract

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// normalize decides every page's hash, so it must not drift: on random
// inputs over the characters it treats specially it gives what the
// rune-by-rune version before issue 16 gave (normalizeBefore, kept here as
// the reference), for strings and for byte slices, and appending to a
// buffer that holds something already leaves that alone.
func TestNormalizeMatchesReference(t *testing.T) {
	alphabet := []string{"a", "Z", ".", "0", " ", "  ", "\t", "\n", "\r\n", "\v", "\f", "\u00a0", "\u2028", "\u0085",
		"\u200b", "\ufeff", "\u00ad", "\u2060", "é", "日", "\x00", "\x7f", "\xff", "\xe2\x82", "~", "word", " x "}
	rng := rand.New(rand.NewPCG(16, 17))
	for i := range 20000 {
		var b strings.Builder
		for range rng.IntN(24) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		s := b.String()
		want := normalizeBefore(s)
		if got := normalize(s); got != want {
			t.Fatalf("case %d: normalize(%q) = %q, want %q", i, s, got, want)
		}
		if got := normalize([]byte(s)); got != want {
			t.Fatalf("case %d: normalize([]byte(%q)) = %q, want %q", i, s, got, want)
		}
		if got := string(appendNormalized([]byte("prefix\n"), s)); got != "prefix\n"+want {
			t.Fatalf("case %d: appendNormalized after a prefix = %q, want %q", i, got, "prefix\n"+want)
		}
	}
}

// normalizeBefore is normalize as it was before issue 16.
func normalizeBefore[T string | []byte](s T) string {
	var b strings.Builder
	b.Grow(len(s))
	space, lineStarted := false, false
	for i := 0; i < len(s); {
		if c := s[i]; c > 0x20 && c < 0x7f {
			j := i + 1
			for j < len(s) && s[j] > 0x20 && s[j] < 0x7f {
				j++
			}
			if space && lineStarted {
				b.WriteByte(' ')
			}
			b.WriteString(string(s[i:j]))
			space, lineStarted = false, true
			i = j
			continue
		}
		c, size := rune(s[i]), 1
		if c >= utf8.RuneSelf {
			c, size = utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
		}
		i += size
		switch {
		case c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == '\u2028' || c == '\u2029' || c == '\u0085':
			if lineStarted {
				b.WriteByte('\n')
			}
			space, lineStarted = false, false
			continue
		case c == ' ' || c == '\t':
			space = true
			continue
		case c == '\u200b' || c == '\ufeff' || c == '\u00ad' || c == '\u2060':
			continue // invisible: not even a word break
		case unicode.IsSpace(c) || unicode.IsControl(c):
			space = true
			continue
		}
		if space && lineStarted {
			b.WriteByte(' ')
		}
		if c == utf8.RuneError && size == 1 {
			b.WriteString("\uFFFD") // an invalid byte
		} else {
			b.WriteString(string(s[i-size : i]))
		}
		space, lineStarted = false, true
	}
	return strings.TrimSuffix(b.String(), "\n")
}
