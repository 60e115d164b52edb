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

// plotColour is the i-th line colour: the Okabe–Ito palette, distinguishable
// on white and by colour-blind readers.
func plotColour(i int) string {
	palette := [...]string{"#000000", "#E69F00", "#56B4E9", "#009E73", "#D55E00", "#0072B2", "#CC79A7", "#F0E442"}
	return palette[i%len(palette)]
}

// WriteSVGFile writes the freshness-over-time plot of one workload's
// results to path.
func WriteSVGFile(path, title string, rs []Result, warmupDays float64) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("bench: plot: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: plot: %w", err)
	}
	if err := writeSVG(f, title, rs, warmupDays); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("bench: plot %s: %w", path, err)
	}
	return nil
}

// writeSVG draws freshness (truth) against simulated days, one line per
// policy, with the warm-up shaded and each policy's oracle as a dashed
// line: a small hand-written SVG, so the bench needs no plotting library.
func writeSVG(out io.Writer, title string, rs []Result, warmupDays float64) error {
	const w, h, left, right, top, bottom = 900.0, 480.0, 60.0, 190.0, 40.0, 50.0
	pw, ph := w-left-right, h-top-bottom
	maxDay := 0.0
	for _, r := range rs {
		if n := len(r.Series); n > 0 {
			maxDay = math.Max(maxDay, r.Series[n-1].Day)
		}
	}
	if maxDay <= 0 {
		maxDay = 1
	}
	x := func(d float64) float64 { return left + pw*d/maxDay }
	y := func(f float64) float64 { return top + ph*(1-f) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" viewBox="0 0 %g %g" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%g" height="%g" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%g" y="22" font-size="15">%s</text>`+"\n", left, html.EscapeString(title))
	if warmupDays > 0 {
		fmt.Fprintf(&b, `<rect x="%g" y="%g" width="%g" height="%g" fill="#eeeeee"/><text x="%g" y="%g" fill="#777">warm-up</text>`+"\n",
			left, top, x(math.Min(warmupDays, maxDay))-left, ph, left+4, top+14)
	}
	for k := 0; k <= 10; k++ {
		f := float64(k) / 10
		fmt.Fprintf(&b, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#ddd"/><text x="%g" y="%.1f" text-anchor="end">%.1f</text>`+"\n", left, y(f), left+pw, y(f), left-6, y(f)+4, f)
	}
	for k := 0; k <= 5; k++ {
		d := maxDay * float64(k) / 5
		fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle">%.0f</text>`+"\n", x(d), top+ph+18, d)
	}
	fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle">simulated days</text>`+"\n", left+pw/2, h-10)
	fmt.Fprintf(&b, `<text transform="translate(16 %g) rotate(-90)" text-anchor="middle">freshness (truth)</text>`+"\n", top+ph/2)
	fmt.Fprintf(&b, `<rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="#333"/>`+"\n", left, top, pw, ph)
	for i, r := range rs {
		c := plotColour(i)
		var pts []string
		for _, p := range r.Series {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(p.Day), y(p.Freshness)))
		}
		if len(pts) > 0 {
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", c, strings.Join(pts, " "))
		}
		if r.Oracle > 0 {
			fmt.Fprintf(&b, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="%s" stroke-dasharray="4 4" stroke-width="0.8"/>`+"\n", x(math.Min(warmupDays, maxDay)), y(r.Oracle), left+pw, y(r.Oracle), c)
		}
		ly := top + 10 + 18*float64(i)
		fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="%s" stroke-width="3"/><text x="%g" y="%g">%s %.3f</text>`+"\n",
			left+pw+10, ly, left+pw+30, ly, c, left+pw+36, ly+4, html.EscapeString(r.Policy), r.Freshness)
	}
	fmt.Fprintf(&b, `<text x="%g" y="%g" fill="#555" font-size="10">dashed: oracle at the policy's fetches</text>`+"\n", left+pw+10, top+10+18*float64(len(rs))+6)
	b.WriteString("</svg>\n")
	if _, err := io.WriteString(out, b.String()); err != nil {
		return fmt.Errorf("bench: plot: %w", err)
	}
	return nil
}
