package scratch

import (
	"fmt"
	"testing"

	"github.com/freshcrawl/freshcrawl/alloc"
)

func TestT6(t *testing.T) {
	rates := []float64{1, 1.0 / 7, 1.0 / 30, 1.0 / 90, 1.0 / 365}
	shares := []float64{23, 15, 16, 16, 30}
	var el []alloc.Element
	for c, r := range rates {
		for range int(shares[c]) {
			el = append(el, alloc.Element{Rate: r, Weight: 1, Host: -1})
		}
	}
	for _, B := range []float64{100.0 / 30, 0.5 * 100 / 30} {
		s, err := alloc.Solve(alloc.Problem{Elements: el, Budget: B})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("B=%.3f F=%.4f mu=%v\n", B, s.Freshness, s.Mu)
		i := 0
		for c := range rates {
			fmt.Printf("  class %d rate %.4f f=%.4f (interval %.1f d) r=%.3f\n", c, rates[c], s.Freq[i], 1/s.Freq[i], rates[c]/s.Freq[i])
			i += int(shares[c])
		}
	}
}
