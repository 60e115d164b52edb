package bench

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
)

// WriteScaleSVG plots RunScale's costs against N: seconds (seed, restart,
// re-plan) on the left, bytes per URL (store file, compacted, schedule)
// on the right, both against N on a log scale.
func WriteScaleSVG(path string, r ScaleReport) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("scale plot: %w", err)
	}
	w := bufio.NewWriter(f)
	writeScaleSVG(w, r)
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("scale plot: %w", err)
	}
	return f.Close()
}

type scaleSeries struct {
	name string
	y    func(ScaleResult) float64
}

func writeScaleSVG(w io.Writer, r ScaleReport) {
	const W, H = 900, 380
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", W, H)
	fmt.Fprintf(w, `<rect width="%d" height="%d" fill="white"/>`+"\n", W, H)
	m := r.Machine
	fmt.Fprintf(w, `<text x="%d" y="18" text-anchor="middle" font-size="14">Coordinator cost against N (freshcrawl bench scale; %s, %d CPUs, load %s)</text>`+"\n", W/2, m.GoVersion, m.CPUs, m.LoadAvg)
	scalePanel(w, r, 60, 40, 360, 280, "seconds", []scaleSeries{
		{"seed", func(s ScaleResult) float64 { return s.SeedSeconds }},
		{"restart (load + first plan)", func(s ScaleResult) float64 { return s.RestartSeconds }},
		{"re-plan", func(s ScaleResult) float64 { return s.ReplanSeconds }},
	})
	scalePanel(w, r, 510, 40, 360, 280, "bytes per URL", []scaleSeries{
		{"store file", func(s ScaleResult) float64 { return s.FileBytesPerURL }},
		{"store, compacted", func(s ScaleResult) float64 { return s.CompactBytesPerURL }},
		{"schedule heap", func(s ScaleResult) float64 { return s.SchedulerBytesPerURL }},
	})
	fmt.Fprintln(w, "</svg>")
}

// scalePanel draws series against N (log x) in the box at (x0, y0) of
// size pw × ph, y linear from 0.
func scalePanel(w io.Writer, r ScaleReport, x0, y0, pw, ph float64, unit string, series []scaleSeries) {
	if len(r.Sizes) == 0 {
		return
	}
	nMin, nMax, yMax := math.Inf(1), math.Inf(-1), 0.0
	for _, s := range r.Sizes {
		nMin, nMax = min(nMin, float64(s.URLs)), max(nMax, float64(s.URLs))
		for _, se := range series {
			yMax = max(yMax, se.y(s))
		}
	}
	if nMax == nMin {
		nMin, nMax = nMin/2, nMax*2
	}
	if yMax <= 0 {
		yMax = 1
	}
	yMax *= 1.1
	px := func(n float64) float64 {
		return x0 + pw*(math.Log(n)-math.Log(nMin))/(math.Log(nMax)-math.Log(nMin))
	}
	py := func(v float64) float64 { return y0 + ph - ph*v/yMax }
	fmt.Fprintf(w, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#888"/>`+"\n", x0, y0, pw, ph)
	for i := 0; i <= 4; i++ {
		v := yMax * float64(i) / 4
		fmt.Fprintf(w, `<text x="%.0f" y="%.0f" text-anchor="end">%.3g</text>`+"\n", x0-4, py(v)+4, v)
		fmt.Fprintf(w, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", x0, x0+pw, py(v), py(v))
	}
	for _, s := range r.Sizes {
		fmt.Fprintf(w, `<text x="%.1f" y="%.0f" text-anchor="middle">%.3g M</text>`+"\n", px(float64(s.URLs)), y0+ph+16, float64(s.URLs)/1e6)
	}
	fmt.Fprintf(w, `<text x="%.0f" y="%.0f" text-anchor="middle">URLs (log scale)</text>`+"\n", x0+pw/2, y0+ph+32)
	fmt.Fprintf(w, `<text x="%.0f" y="%.0f" text-anchor="middle" transform="rotate(-90 %.0f %.0f)">%s</text>`+"\n", x0-42, y0+ph/2, x0-42, y0+ph/2, unit)
	for i, se := range series {
		col := plotColour(i)
		fmt.Fprintf(w, `<polyline fill="none" stroke="%s" stroke-width="2" points="`, col)
		for _, s := range r.Sizes {
			fmt.Fprintf(w, "%.1f,%.1f ", px(float64(s.URLs)), py(se.y(s)))
		}
		fmt.Fprintln(w, `"/>`)
		for _, s := range r.Sizes {
			fmt.Fprintf(w, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", px(float64(s.URLs)), py(se.y(s)), col)
		}
		fmt.Fprintf(w, `<text x="%.0f" y="%.0f" fill="%s">%s</text>`+"\n", x0+8, y0+16+14*float64(i), col, se.name)
	}
}
