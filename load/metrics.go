package load

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The histograms a run reads: the apiserver's per webhook, and hookback's
// per webhook it serves (total, the wait on the user's server, and its own
// share of a forwarded call).
const (
	apiserverWebhookHistogram = "apiserver_admission_webhook_admission_duration_seconds"
	hookbackTotal             = "hookback_admission_duration_seconds"
	hookbackUpstream          = "hookback_upstream_duration_seconds"
	hookbackOwn               = "hookback_admission_own_duration_seconds"
)

// maxMetricsBytes bounds one /metrics answer (an apiserver's is a few MiB).
const maxMetricsBytes = 256 << 20

// errForbidden: the credentials may not read the metrics.
var errForbidden = errors.New("not allowed")

// scrapeTimeout bounds one reading: an apiserver too busy to answer its
// /metrics in that time gets a note, and the run goes on without them.
const scrapeTimeout = 15 * time.Second

// histogram is a cumulative Prometheus histogram: counts[i] observations
// at or below bounds[i] (the last bound is +Inf).
type histogram struct {
	bounds, counts []float64
	count, sum     float64
}

// snapshot holds, per family, a histogram per key (a webhook's name).
type snapshot map[string]map[string]*histogram

// scrapeSpec says what to read of one /metrics: the families, the label
// that names a webhook, and which series count (nil: all).
type scrapeSpec struct {
	families []string
	key      string
	keep     func(labels map[string]string) bool
}

var (
	apiserverSpec = scrapeSpec{families: []string{apiserverWebhookHistogram}, key: "name",
		keep: func(l map[string]string) bool { return l["operation"] == "CREATE" }}
	hookbackSpec = scrapeSpec{families: []string{hookbackTotal, hookbackUpstream, hookbackOwn}, key: "webhook"}
)

// scrape reads url's metrics through client. The series of one key are
// summed (the apiserver's are split by type and rejected).
func scrape(ctx context.Context, client *http.Client, url string, spec scrapeSpec) (snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusForbidden, http.StatusUnauthorized:
		return nil, fmt.Errorf("%w: %s", errForbidden, resp.Status)
	default:
		return nil, fmt.Errorf("%s", resp.Status)
	}
	text, err := keepFamilies(io.LimitReader(resp.Body, maxMetricsBytes), spec.families)
	if err != nil {
		return nil, err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	out := snapshot{}
	for name, f := range fams {
		out[name] = collect(f, spec)
	}
	return out, nil
}

// keepFamilies keeps only the lines of the families wanted: the parser
// then reads kilobytes of the apiserver's megabytes.
func keepFamilies(r io.Reader, families []string) ([]byte, error) {
	var out bytes.Buffer
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		name := line
		if rest, ok := bytes.CutPrefix(line, []byte("# TYPE ")); ok {
			name = rest
		} else if bytes.HasPrefix(line, []byte("#")) {
			continue
		}
		for _, f := range families {
			if bytes.HasPrefix(name, []byte(f)) {
				out.Write(line)
				out.WriteByte('\n')
				break
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read metrics: %w", err)
	}
	return out.Bytes(), nil
}

func collect(f *dto.MetricFamily, spec scrapeSpec) map[string]*histogram {
	out := map[string]*histogram{}
	for _, m := range f.GetMetric() {
		h := m.GetHistogram()
		if h == nil {
			continue
		}
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if spec.keep != nil && !spec.keep(labels) {
			continue
		}
		key := labels[spec.key]
		acc := out[key]
		if acc == nil {
			acc = &histogram{}
			out[key] = acc
		}
		acc.add(h)
	}
	return out
}

// add sums a series into h; series of one family share their bounds.
func (h *histogram) add(p *dto.Histogram) {
	if h.bounds == nil {
		for _, b := range p.GetBucket() {
			h.bounds = append(h.bounds, b.GetUpperBound())
		}
		if len(h.bounds) == 0 || !math.IsInf(h.bounds[len(h.bounds)-1], 1) {
			h.bounds = append(h.bounds, math.Inf(1))
		}
		h.counts = make([]float64, len(h.bounds))
	}
	for i, b := range p.GetBucket() {
		if i < len(h.counts) {
			h.counts[i] += float64(b.GetCumulativeCount())
		}
	}
	h.count += float64(p.GetSampleCount())
	h.sum += p.GetSampleSum()
	// The +Inf bucket is the count; exposition may leave it implicit.
	h.counts[len(h.counts)-1] = max(h.counts[len(h.counts)-1], h.count)
}

// minus is h less an earlier reading of the same series (nil: nothing).
func (h *histogram) minus(before *histogram) *histogram {
	d := &histogram{bounds: h.bounds, counts: slices.Clone(h.counts), count: h.count, sum: h.sum}
	if before == nil || len(before.counts) != len(h.counts) {
		return d
	}
	for i := range d.counts {
		d.counts[i] -= before.counts[i]
	}
	d.count -= before.count
	d.sum -= before.sum
	return d
}

// quantile is q's value, interpolated within its bucket as PromQL's
// histogram_quantile does; in the +Inf bucket it is the highest finite
// bound (a floor). NaN when empty.
func (h *histogram) quantile(q float64) float64 {
	if h == nil || h.count <= 0 {
		return math.NaN()
	}
	rank := q * h.count
	lower, below := 0.0, 0.0
	for i, b := range h.bounds {
		if h.counts[i] >= rank {
			if math.IsInf(b, 1) {
				return lower
			}
			if h.counts[i] == below {
				return b
			}
			return lower + (b-lower)*(rank-below)/(h.counts[i]-below)
		}
		lower, below = b, h.counts[i]
	}
	return lower
}

func (h *histogram) mean() float64 {
	if h == nil || h.count <= 0 {
		return math.NaN()
	}
	return h.sum / h.count
}

// keys lists a family's keys, sorted.
func (s snapshot) keys(family string) []string {
	out := make([]string, 0, len(s[family]))
	for k := range s[family] {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
