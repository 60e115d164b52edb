package bench

import (
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// WriteProbesSVGFile writes the content-freshness-over-time plot of
// virtual probe runs (the paper's Figure 2) to path.
func WriteProbesSVGFile(path, title string, rs []ProbesResult, warmupUnits float64) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("bench: plot: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: plot: %w", err)
	}
	if err := writeProbesSVG(f, title, rs, warmupUnits); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("bench: plot %s: %w", path, err)
	}
	return nil
}

// writeProbesSVG draws the truth's content freshness against time units,
// one line per run, the warm-up shaded: a small hand-written SVG like
// WriteSVG's. The y axis is logarithmic: the runs differ by orders of
// magnitude (Naive 2 grows without bound), and on a linear axis the
// greedy line would lie on the floor.
func writeProbesSVG(out io.Writer, title string, rs []ProbesResult, warmupUnits float64) error {
	const w, h, left, right, top, bottom = 900.0, 480.0, 70.0, 200.0, 40.0, 50.0
	pw, ph := w-left-right, h-top-bottom
	maxX, minY, maxY := 0.0, math.Inf(1), 0.0
	for _, r := range rs {
		for _, p := range r.Series {
			maxX = math.Max(maxX, p.Units)
			if v := p.ContentFreshness; v > 0 && !math.IsInf(v, 0) {
				minY, maxY = math.Min(minY, v), math.Max(maxY, v)
			}
		}
	}
	if maxX <= 0 {
		maxX = 1
	}
	if !(maxY > 0) {
		minY, maxY = 1, 10
	}
	lo, hi := math.Floor(math.Log10(minY)), math.Ceil(math.Log10(maxY))
	if hi <= lo {
		hi = lo + 1
	}
	x := func(u float64) float64 { return left + pw*u/maxX }
	y := func(v float64) float64 {
		l := lo
		if v > 0 {
			l = math.Min(math.Max(math.Log10(v), lo), hi)
		}
		return top + ph*(1-(l-lo)/(hi-lo))
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" viewBox="0 0 %g %g" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%g" height="%g" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%g" y="22" font-size="15">%s</text>`+"\n", left, html.EscapeString(title))
	if warmupUnits > 0 {
		fmt.Fprintf(&b, `<rect x="%g" y="%g" width="%g" height="%g" fill="#eeeeee"/><text x="%g" y="%g" fill="#777">warm-up</text>`+"\n",
			left, top, x(math.Min(warmupUnits, maxX))-left, ph, left+4, top+14)
	}
	for e := lo; e <= hi; e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if math.Log10(v) > hi+1e-9 {
				break
			}
			stroke := "#eee"
			if m == 1 {
				stroke = "#ccc"
			}
			fmt.Fprintf(&b, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="%s"/><text x="%g" y="%.1f" text-anchor="end">%g</text>`+"\n", left, y(v), left+pw, y(v), stroke, left-6, y(v)+4, v)
		}
	}
	for k := 0; k <= 5; k++ {
		u := maxX * float64(k) / 5
		fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle">%.0f</text>`+"\n", x(u), top+ph+18, u)
	}
	fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle">time units</text>`+"\n", left+pw/2, h-10)
	fmt.Fprintf(&b, `<text transform="translate(16 %g) rotate(-90)" text-anchor="middle">content freshness (truth; weighted citations missed, log scale)</text>`+"\n", top+ph/2)
	fmt.Fprintf(&b, `<rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="#333"/>`+"\n", left, top, pw, ph)
	for i, r := range rs {
		c := plotColour(i)
		pts := make([]string, 0, len(r.Series))
		for _, p := range r.Series {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(p.Units), y(p.ContentFreshness)))
		}
		if len(pts) > 0 {
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", c, strings.Join(pts, " "))
		}
		ly := top + 10 + 18*float64(i)
		fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="%s" stroke-width="3"/><text x="%g" y="%g">%s %.1f</text>`+"\n",
			left+pw+10, ly, left+pw+30, ly, c, left+pw+36, ly+4, html.EscapeString(r.Policy), r.ContentFreshness)
	}
	fmt.Fprintf(&b, `<text x="%g" y="%g" fill="#555" font-size="10">legend: time average after the warm-up</text>`+"\n", left+pw+10, top+10+18*float64(len(rs))+6)
	b.WriteString("</svg>\n")
	if _, err := io.WriteString(out, b.String()); err != nil {
		return fmt.Errorf("bench: plot: %w", err)
	}
	return nil
}
