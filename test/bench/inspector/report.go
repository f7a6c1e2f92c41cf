package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// phaseResult is what one phase measured, merged over rounds.
type phaseResult struct {
	latency   []float64 // ms per answer
	n         int
	rowLag    []float64 // ms from an answer to its row on the page
	missing   int       // answers whose row never showed
	timerLate []float64 // ms
	longTasks []float64 // ms
	maxRows   int
}

func (r *phaseResult) merge(o *phaseResult) *phaseResult {
	if r == nil {
		return o
	}
	r.latency = append(r.latency, o.latency...)
	r.n += o.n
	r.rowLag = append(r.rowLag, o.rowLag...)
	r.missing += o.missing
	r.timerLate = append(r.timerLate, o.timerLate...)
	r.longTasks = append(r.longTasks, o.longTasks...)
	r.maxRows = max(r.maxRows, o.maxRows)
	return r
}

func (r *phaseResult) addPage(m *pageMetrics, answered map[string]int64) {
	for seq, at := range answered {
		if shown, ok := m.Rows[seq]; ok {
			r.rowLag = append(r.rowLag, float64(max(0, shown-at)))
		} else {
			r.missing++
		}
	}
	r.timerLate = m.TimerLate
	r.longTasks = m.LongTasks
	r.maxRows = m.RowCount
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func report(w io.Writer, res map[string]*phaseResult, rate int, phase time.Duration, rounds int, loadStart, loadEnd string) {
	fmt.Fprintf(w, "%d admissions/s, %d rounds of three %s phases, alternating; load average before: %s, after: %s\n\n",
		rate, rounds, phase, strings.TrimSpace(loadStart), strings.TrimSpace(loadEnd))
	fmt.Fprintln(w, "| phase | answers | p50 | p99 | mean | mean vs inspector off |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
	off := mean(res[phaseOff].latency)
	for _, name := range phaseNames {
		r := res[name]
		fmt.Fprintf(w, "| %s | %d | %.3f ms | %.3f ms | %.3f ms | %.2f× |\n", name, r.n,
			quantile(r.latency, 0.5), quantile(r.latency, 0.99), mean(r.latency), mean(r.latency)/off)
	}
	p := res[phasePage]
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| the open page | p50 | p99 | max |")
	fmt.Fprintln(w, "|---|---:|---:|---:|")
	fmt.Fprintf(w, "| answer -> its row on the page | %.0f ms | %.0f ms | %.0f ms |\n", quantile(p.rowLag, 0.5), quantile(p.rowLag, 0.99), quantile(p.rowLag, 1))
	fmt.Fprintf(w, "| a 50 ms timer's lateness (input delay) | %.1f ms | %.1f ms | %.1f ms |\n", quantile(p.timerLate, 0.5), quantile(p.timerLate, 0.99), quantile(p.timerLate, 1))
	fmt.Fprintf(w, "\nrows never shown: %d of %d; long tasks (>50 ms) on the page: %d (longest %.0f ms); rows in the list at the end: %d\n",
		p.missing, p.n, len(p.longTasks), quantile(p.longTasks, 1), p.maxRows)
}
