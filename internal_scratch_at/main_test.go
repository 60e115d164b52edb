package at

import (
	"testing"

	"github.com/freshcrawl/freshcrawl/alloc"
)

func TestA(t *testing.T) {
	for _, capv := range []float64{0, 3.858e-4} {
		for _, scale := range []float64{1, 86400} {
			el := make([]alloc.Element, 1000)
			for i := range el {
				el[i] = alloc.Element{Rate: scale / 86400, Weight: 1, Host: int32(i % 10)}
			}
			caps := make([]float64, 10)
			for h := range caps {
				caps[h] = capv * scale
			}
			sol, err := alloc.Solve(alloc.Problem{Elements: el, Budget: 1000.0 / 30 / 86400 * scale, HostCaps: caps})
			t.Log(capv, scale, sol.Freshness, err)
		}
	}
}
