package loadplot

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// Plot geometry, in SVG user units.
const (
	plotW, plotH                 = 720, 420
	padL, padR, padT, padB       = 70, 150, 40, 50
	innerW, innerH               = plotW - padL - padR, plotH - padT - padB
	plotTicks                    = 5
	budgetDash, kneeDash         = "6 4", "2 3"
	colorP50, colorP95, colorP99 = "#1f77b4", "#ff7f0e", "#d62728"
)

// WriteSVG writes an SVG of latency (p50, p95, p99) against the offered
// rate, one point per step, with the budget and the knee marked. It is
// drawn by hand: a few lines and labels need no plotting library.
func (r *Run) WriteSVG(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", plotW, plotH, plotW, plotH)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", plotW, plotH)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="14">hookback load: latency against rate (%s)</text>`+"\n", padL, html.EscapeString(r.Namespace))
	xmax, ymax := r.plotRanges()
	x := func(rate float64) float64 { return padL + innerW*rate/xmax }
	y := func(msv float64) float64 { return padT + innerH - innerH*msv/ymax }
	plotAxes(&b, xmax, ymax, x, y)
	if r.BudgetMs > 0 && r.BudgetMs <= ymax {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#888" stroke-dasharray="%s"/>`+"\n", padL, padL+innerW, y(r.BudgetMs), y(r.BudgetMs), budgetDash)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" fill="#888">budget %g ms</text>`+"\n", padL+innerW+6, y(r.BudgetMs)+4, r.BudgetMs)
	}
	if r.Knee > 0 && r.Knee <= len(r.Steps) {
		kx := x(r.Steps[r.Knee-1].OfferedRate)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#444" stroke-dasharray="%s"/>`+"\n", kx, kx, padT, padT+innerH, kneeDash)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#444">knee</text>`+"\n", kx+4, padT+12)
	}
	series := []struct {
		name, color string
		v           func(Point) float64
	}{
		{"p50", colorP50, func(s Point) float64 { return s.P50Ms }},
		{"p95", colorP95, func(s Point) float64 { return s.P95Ms }},
		{"p99", colorP99, func(s Point) float64 { return s.P99Ms }},
	}
	for i, s := range series {
		var pts []string
		for _, st := range r.Steps {
			px, py := x(st.OfferedRate), y(s.v(st))
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px, py))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", px, py, s.color)
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), s.color)
		ly := padT + 20 + 18*i
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"/><text x="%d" y="%d">%s</text>`+"\n",
			padL+innerW+10, padL+innerW+30, ly+40, ly+40, s.color, padL+innerW+36, ly+44, s.name)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// plotRanges are the axes' ends: a little beyond the highest rate and
// latency (and the budget), rounded to a readable number.
func (r *Run) plotRanges() (xmax, ymax float64) {
	for _, s := range r.Steps {
		xmax, ymax = max(xmax, s.OfferedRate), max(ymax, s.P99Ms)
	}
	if r.BudgetMs > 0 && r.BudgetMs < 2*ymax {
		ymax = max(ymax, r.BudgetMs)
	}
	return nice(xmax * 1.05), nice(ymax * 1.1)
}

// nice rounds x up to 1, 2, 2.5 or 5 times a power of ten (at least 1).
func nice(x float64) float64 {
	if x <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}

func plotAxes(b *strings.Builder, xmax, ymax float64, x, y func(float64) float64) {
	fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="black"/>`+"\n", padL, padL+innerW, padT+innerH, padT+innerH)
	fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="black"/>`+"\n", padL, padL, padT, padT+innerH)
	for i := 0; i <= plotTicks; i++ {
		xv, yv := xmax*float64(i)/plotTicks, ymax*float64(i)/plotTicks
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%g</text>`+"\n", x(xv), padT+innerH+18, math.Round(xv*10)/10)
		fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", padL+1, padL+innerW, y(yv), y(yv))
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%g</text>`+"\n", padL-6, y(yv)+4, math.Round(yv*100)/100)
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle">offered rate (requests/s)</text>`+"\n", padL+innerW/2, plotH-10)
	fmt.Fprintf(b, `<text x="16" y="%d" text-anchor="middle" transform="rotate(-90 16 %d)">end-to-end latency (ms)</text>`+"\n", padT+innerH/2, padT+innerH/2)
}
