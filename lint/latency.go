package lint

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"slices"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
)

// latencyMetric is the apiserver's histogram of each webhook call.
const latencyMetric = "apiserver_admission_webhook_admission_duration_seconds"

// readLatency reads the apiserver's /metrics (nonResourceURL get /metrics)
// for each webhook's p99.
func readLatency(ctx context.Context, cs kubernetes.Interface) (map[string]float64, error) {
	rc := cs.Discovery().RESTClient()
	if rc == nil {
		return nil, fmt.Errorf("read apiserver metrics: no REST client")
	}
	b, err := rc.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("read apiserver metrics: %w", err)
	}
	return parseLatency(bytes.NewReader(b))
}

// parseLatency is each webhook's p99 from the histogram, its series (per
// operation, type, rejected) added up, interpolated within its bucket as
// PromQL's histogram_quantile does.
func parseLatency(r io.Reader) (map[string]float64, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("read apiserver metrics: %w", err)
	}
	fam, ok := fams[latencyMetric]
	if !ok {
		return map[string]float64{}, nil
	}
	type hist struct {
		count   uint64
		buckets map[float64]uint64
	}
	byName := map[string]*hist{}
	for _, m := range fam.GetMetric() {
		name := label(m, "name")
		h := byName[name]
		if h == nil {
			h = &hist{buckets: map[float64]uint64{}}
			byName[name] = h
		}
		h.count += m.GetHistogram().GetSampleCount()
		for _, b := range m.GetHistogram().GetBucket() {
			h.buckets[b.GetUpperBound()] += b.GetCumulativeCount()
		}
	}
	out := map[string]float64{}
	for name, h := range byName {
		if h.count > 0 {
			out[name] = quantile(0.99, h.count, h.buckets)
		}
	}
	return out, nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// quantile interpolates q within the cumulative buckets; past the last
// finite bucket it is that bucket's bound.
func quantile(q float64, count uint64, buckets map[float64]uint64) float64 {
	bounds := make([]float64, 0, len(buckets))
	for b := range buckets {
		bounds = append(bounds, b)
	}
	slices.Sort(bounds)
	rank := q * float64(count)
	lower, below := 0.0, uint64(0)
	for _, ub := range bounds {
		c := buckets[ub]
		if float64(c) >= rank {
			if math.IsInf(ub, 1) {
				return lower
			}
			if c == below {
				return ub
			}
			return lower + (ub-lower)*(rank-float64(below))/float64(c-below)
		}
		lower, below = ub, c
	}
	return lower
}
