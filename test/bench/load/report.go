package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"

	"github.com/hookback/hookback/load"
)

const apiserverHistogram = "apiserver_admission_webhook_admission_duration_seconds"

// hist is the apiserver's histogram of the no-op webhook's CREATE calls,
// its series summed (this program's own reading, apart from load's).
type hist struct {
	bounds, counts []float64
	count, sum     float64
}

// scrapeWebhook reads the apiserver's /metrics.
func scrapeWebhook(ctx context.Context, cs kubernetes.Interface) (hist, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return hist{}, fmt.Errorf("read the apiserver's /metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return hist{}, fmt.Errorf("parse the apiserver's /metrics: %w", err)
	}
	var h hist
	f := fams[apiserverHistogram]
	if f == nil {
		return h, nil // no webhook called yet since the apiserver started
	}
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if !strings.Contains(labels["name"], webhookName) || labels["operation"] != "CREATE" {
			continue
		}
		p := m.GetHistogram()
		if h.bounds == nil {
			for _, b := range p.GetBucket() {
				h.bounds = append(h.bounds, b.GetUpperBound())
			}
			h.counts = make([]float64, len(h.bounds))
		}
		for i, b := range p.GetBucket() {
			h.counts[i] += float64(b.GetCumulativeCount())
		}
		h.count += float64(p.GetSampleCount())
		h.sum += p.GetSampleSum()
	}
	return h, nil
}

func (h hist) minus(b hist) hist {
	d := hist{bounds: h.bounds, counts: append([]float64(nil), h.counts...), count: h.count - b.count, sum: h.sum - b.sum}
	for i := range d.counts {
		if i < len(b.counts) {
			d.counts[i] -= b.counts[i]
		}
	}
	return d
}

// quantile interpolates within q's bucket, as PromQL's
// histogram_quantile; beyond the last finite bound it is that bound.
func (h hist) quantile(q float64) float64 {
	rank, lower, below := q*h.count, 0.0, 0.0
	for i, b := range h.bounds {
		if h.counts[i] >= rank {
			if h.counts[i] == below {
				return b
			}
			return lower + (b-lower)*(rank-below)/(h.counts[i]-below)
		}
		lower, below = b, h.counts[i]
	}
	return lower
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// report prints the full run's steps, the whole run beside the
// apiserver's histogram, and the generator's CPU per request.
func report(full, short loadRun, whole hist, answered int64) error {
	fmt.Printf("| offered/s | achieved/s | sent | p50 | p99 | errors | the apiserver's histogram (load's reading per step): calls, p50, p99, mean | hookback's: calls, p50, p99, own mean |\n|---|---|---|---|---|---|---|---|\n")
	apiCalls := 0.0
	for _, s := range full.rep.Steps {
		api, hb := "not read", "-"
		for _, w := range s.Webhooks {
			if !strings.Contains(w.Webhook, webhookName) {
				continue
			}
			switch w.Source {
			case load.SourceAPIServer:
				api = fmt.Sprintf("%g, %.1f ms, %.1f ms, %.2f ms", w.Calls, w.P50Ms, w.P99Ms, w.MeanMs)
				apiCalls += w.Calls
			case load.SourceHookback:
				own := "-"
				if w.OwnMeanMs != nil {
					own = fmt.Sprintf("%.3f ms", *w.OwnMeanMs)
				}
				hb = fmt.Sprintf("%g, %.2f ms, %.2f ms, %s", w.Calls, w.P50Ms, w.P99Ms, own)
			}
		}
		fmt.Printf("| %g | %g | %d | %.1f ms | %.1f ms | %.2f%% | %s | %s |\n", s.OfferedRate, s.AchievedRate, s.Sent, s.P50Ms, s.P99Ms, s.ErrorRate*100, api, hb)
	}
	fmt.Printf("\nThe whole run: load sent %d requests; the no-op webhook answered %d calls; the apiserver's histogram, read by this program before and after, counts %g calls of it (load's per-step readings: %g)",
		full.sent, answered, whole.count, apiCalls)
	if whole.count > 0 {
		fmt.Printf(", p50 %.1f ms, p99 %.1f ms, mean %.2f ms", whole.quantile(0.5)*1000, whole.quantile(0.99)*1000, whole.sum/whole.count*1000)
	}
	fmt.Println(".")
	slope, fixed := cpuSlope(full, short)
	fmt.Printf("\n| generator run | requests | CPU (user+system) | per request, all included |\n|---|---|---|---|\n")
	for _, r := range []struct {
		name string
		run  loadRun
	}{{"full steps", full}, {"short steps", short}} {
		fmt.Printf("| %s | %d | %v | %.1f µs |\n", r.name, r.run.sent, r.run.cpu.Round(time.Millisecond), float64(r.run.cpu.Microseconds())/float64(r.run.sent))
	}
	if math.IsNaN(slope) {
		fmt.Println("\nThe two runs sent as many requests: no slope.")
	} else {
		fmt.Printf("\nThe generator's CPU per request, apart from its fixed costs (the slope between the two runs): %.1f µs; its fixed costs (startup, discovery, %d readings of /metrics): %v.\n",
			slope, len(full.rep.Steps)+1, time.Duration(fixed*float64(time.Microsecond)).Round(time.Millisecond))
	}
	for _, n := range append(full.rep.Notes, short.rep.Notes...) {
		fmt.Printf("Note: %s\n", n)
	}
	return nil
}

// cpuSlope is the CPU per request between two runs of the same steps (µs)
// and what is left at zero requests: the fixed costs (µs).
func cpuSlope(a, b loadRun) (slope, fixed float64) {
	if a.sent == b.sent {
		return math.NaN(), math.NaN()
	}
	ca, cb := float64(a.cpu.Microseconds()), float64(b.cpu.Microseconds())
	slope = (ca - cb) / float64(a.sent-b.sent)
	return slope, ca - slope*float64(a.sent)
}
