package alloc

import (
	"math"
	"testing"
)

func benchInner(b *testing.B, fn func(lam, w, m, prev, acc float64) (float64, float64), ratio float64, cold bool) {
	p := benchProblem(1<<16, 1)
	prev := make([]float64, len(p.Elements))
	mu := 0.02
	if fn == nil {
		return
	}
	for i, e := range p.Elements {
		prev[i], _ = fn(e.Rate, e.Weight, mu, 0, fullAcc)
	}
	b.ResetTimer()
	var s float64
	for b.Loop() {
		for i, e := range p.Elements {
			pv := prev[i]
			if cold {
				pv = 0
			}
			f, _ := fn(e.Rate, e.Weight, mu*ratio, pv, fullAcc)
			s += f
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(p.Elements)), "ns/elem")
	_ = math.Abs(s)
}

func BenchmarkInnerFreshCold(b *testing.B)  { benchInner(b, freshFreq, 1, true) }
func BenchmarkInnerFreshWarm3(b *testing.B) { benchInner(b, freshFreq, 1.001, false) }
func BenchmarkInnerFreshWarm6(b *testing.B) { benchInner(b, freshFreq, 1.000001, false) }
func BenchmarkInnerAgeCold(b *testing.B)    { benchInner(b, ageFreq, 1, true) }
func BenchmarkInnerAgeWarm3(b *testing.B)   { benchInner(b, ageFreq, 1.001, false) }
func BenchmarkExp(b *testing.B) {
	x := 0.0
	for b.Loop() {
		x += math.Exp(-x*1e-300 - 1.5)
	}
}
