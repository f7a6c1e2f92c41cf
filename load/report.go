package load

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookback/hookback/field"
)

// Sources of a per-webhook row.
const (
	// SourceAPIServer: the apiserver's own histogram of the calls it made
	// to the webhook (apiserver_admission_webhook_admission_duration_seconds,
	// CREATE), network and TLS included.
	SourceAPIServer = "apiserver"
	// SourceHookback: hookback's histograms of the calls it served.
	SourceHookback = "hookback"
)

// Report is a run's outcome. JSON is the value itself; WriteTable and
// JUnit are the other formats (internal/report's registry).
type Report struct {
	Server    string    `json:"server"`
	Namespace string    `json:"namespace"`
	Sources   []string  `json:"sources"`
	Rates     []float64 `json:"rates"`
	BudgetMs  float64   `json:"budgetMs"`
	Steps     []Step    `json:"steps"`
	// Knee is the first step (1-based) whose p99 passed the budget or
	// that had errors; 0: none. KneeReason says which.
	Knee       int    `json:"knee,omitempty"`
	KneeReason string `json:"kneeReason,omitempty"`
	// Gates are the gates asked for; Passed is false when one failed.
	Gates       []GateResult `json:"gates,omitempty"`
	Passed      bool         `json:"passed"`
	Interrupted bool         `json:"interrupted,omitempty"`
	// Notes say what could not be measured, and why.
	Notes []string `json:"notes,omitempty"`
}

// Step is one rate's measurements. Latencies are end to end, as the
// client saw them, in milliseconds.
type Step struct {
	Step int `json:"step"`
	// OfferedRate is the rate asked for; AchievedRate the answers received
	// within the step per second of it.
	OfferedRate  float64 `json:"offeredRate"`
	AchievedRate float64 `json:"achievedRate"`
	Seconds      float64 `json:"seconds"`
	// Sent requests; Answered of them (every kind); Skipped were due while
	// MaxInFlight requests waited, and not sent.
	Sent     int `json:"sent"`
	Answered int `json:"answered"`
	Skipped  int `json:"skipped"`
	// Outcomes counts answers by kind (Kinds); ErrorRate is the share of
	// answered and skipped requests that are errors (an outcome neither ok
	// nor denied, or skipped).
	Outcomes  map[string]int `json:"outcomes"`
	ErrorRate float64        `json:"errorRate"`
	// FirstErrors holds one message per error kind.
	FirstErrors map[string]string `json:"firstErrors,omitempty"`
	P50Ms       float64           `json:"p50Ms"`
	P95Ms       float64           `json:"p95Ms"`
	P99Ms       float64           `json:"p99Ms"`
	MaxMs       float64           `json:"maxMs"`
	Webhooks    []WebhookRow      `json:"webhooks,omitempty"`
}

// WebhookRow is one webhook's calls in a step, from one source's
// histograms (percentiles interpolated within their buckets, as PromQL's
// histogram_quantile does), in milliseconds.
type WebhookRow struct {
	Webhook string  `json:"webhook"`
	Source  string  `json:"source"`
	Calls   float64 `json:"calls"`
	P50Ms   float64 `json:"p50Ms"`
	P99Ms   float64 `json:"p99Ms"`
	MeanMs  float64 `json:"meanMs"`
	// For a webhook hookback forwards to the user's server: that server's
	// share (the wait on it) and hookback's own.
	UpstreamP50Ms *float64 `json:"upstreamP50Ms,omitempty"`
	UpstreamP99Ms *float64 `json:"upstreamP99Ms,omitempty"`
	OwnP50Ms      *float64 `json:"ownP50Ms,omitempty"`
	OwnP99Ms      *float64 `json:"ownP99Ms,omitempty"`
	OwnMeanMs     *float64 `json:"ownMeanMs,omitempty"`
}

func summarize(n int, rate float64, elapsed time.Duration, st *stepStats) Step {
	st.mu.Lock()
	defer st.mu.Unlock()
	s := Step{Step: n, OfferedRate: rate, Seconds: round(elapsed.Seconds(), 3), Answered: len(st.lat), Skipped: st.skipped,
		Outcomes: map[string]int{}, FirstErrors: st.firstError}
	errs := 0
	for k, v := range st.kinds {
		s.Outcomes[k] = v
		if isError(k) {
			errs += v
		}
	}
	s.Sent = st.sent
	if elapsed > 0 {
		s.AchievedRate = round(float64(st.inTime)/elapsed.Seconds(), 1)
	}
	// A request skipped is load the webhooks did not take: an error.
	if offered := s.Answered + s.Skipped; offered > 0 {
		s.ErrorRate = round(float64(errs+s.Skipped)/float64(offered), 4)
	}
	lat := slices.Clone(st.lat)
	slices.Sort(lat)
	s.P50Ms, s.P95Ms, s.P99Ms = pct(lat, 0.50), pct(lat, 0.95), pct(lat, 0.99)
	if len(lat) > 0 {
		s.MaxMs = ms(lat[len(lat)-1])
	}
	return s
}

// pct is the nearest-rank percentile of sorted durations, in ms.
func pct(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return ms(sorted[max(i, 0)])
}

func ms(d time.Duration) float64 { return round(float64(d)/float64(time.Millisecond), 3) }

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}

// webhookRows compares two readings: one row per webhook and source.
func webhookRows(before, after map[string]snapshot) []WebhookRow {
	var rows []WebhookRow
	if a := after[SourceAPIServer]; a != nil {
		for _, name := range a.keys(apiserverWebhookHistogram) {
			d := a[apiserverWebhookHistogram][name].minus(before[SourceAPIServer][apiserverWebhookHistogram][name])
			if d.count > 0 {
				rows = append(rows, row(name, SourceAPIServer, d))
			}
		}
	}
	h := after[SourceHookback]
	if h == nil {
		return rows
	}
	for _, name := range h.keys(hookbackTotal) {
		b := before[SourceHookback]
		d := h[hookbackTotal][name].minus(b[hookbackTotal][name])
		if d.count <= 0 {
			continue
		}
		r := row(name, SourceHookback, d)
		if up := h[hookbackUpstream][name]; up != nil {
			u := up.minus(b[hookbackUpstream][name])
			o := h[hookbackOwn][name].minus(b[hookbackOwn][name])
			if u.count > 0 && o != nil {
				r.UpstreamP50Ms, r.UpstreamP99Ms = msp(u.quantile(0.5)), msp(u.quantile(0.99))
				r.OwnP50Ms, r.OwnP99Ms, r.OwnMeanMs = msp(o.quantile(0.5)), msp(o.quantile(0.99)), msp(o.mean())
			}
		}
		rows = append(rows, r)
	}
	return rows
}

func row(name, source string, d *histogram) WebhookRow {
	return WebhookRow{Webhook: name, Source: source, Calls: d.count, P50Ms: round(d.quantile(0.5)*1000, 3),
		P99Ms: round(d.quantile(0.99)*1000, 3), MeanMs: round(d.mean()*1000, 3)}
}

func msp(seconds float64) *float64 {
	v := round(seconds*1000, 3)
	return &v
}

// Gates fail a run: any step whose p99 is above MaxP99, or whose error
// rate is above MaxErrorRate (a fraction such as 0.01, or a percentage
// such as 1%).
type Gates struct {
	MaxP99       time.Duration
	MaxErrorRate string
}

func (g Gates) errorRate() (float64, bool, error) {
	s := strings.TrimSpace(g.MaxErrorRate)
	if s == "" {
		return 0, false, nil
	}
	scale := 1.0
	if t, ok := strings.CutSuffix(s, "%"); ok {
		s, scale = t, 100
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || v/scale > 1 {
		return 0, false, field.New("load.Gates.MaxErrorRate", strconv.Quote(g.MaxErrorRate), "want a fraction from 0 to 1, such as 0.01, or a percentage, such as 1%")
	}
	return v / scale, true, nil
}

// Validate checks the gates' values.
func (g Gates) Validate() error {
	if g.MaxP99 < 0 {
		return field.New("load.Gates.MaxP99", g.MaxP99.String(), "want 0 (no gate) or more")
	}
	_, _, err := g.errorRate()
	return err
}

// GateResult is one gate over the run: the worst step's value against
// the limit.
type GateResult struct {
	Gate   string  `json:"gate"`
	Limit  float64 `json:"limit"`
	Worst  float64 `json:"worst"`
	Step   int     `json:"step"`
	Passed bool    `json:"passed"`
}

// finish names the knee and judges the gates.
func (r *Report) finish(g Gates) {
	r.Knee, r.KneeReason = knee(r.Steps, r.BudgetMs)
	r.Passed = true
	if g.MaxP99 > 0 {
		r.gate("max-p99 (ms)", ms(g.MaxP99), func(s Step) float64 { return s.P99Ms })
	}
	if rate, ok, _ := g.errorRate(); ok {
		r.gate("max-error-rate", rate, func(s Step) float64 { return s.ErrorRate })
	}
}

// knee is the first step whose p99 passes the budget or that has errors,
// and why (0: none).
func knee(steps []Step, budgetMs float64) (int, string) {
	for _, s := range steps {
		switch {
		case s.ErrorRate > 0:
			return s.Step, fmt.Sprintf("errors start (%.2f%%)", s.ErrorRate*100)
		case budgetMs > 0 && s.P99Ms > budgetMs:
			return s.Step, fmt.Sprintf("p99 %.1f ms passes the budget of %g ms", s.P99Ms, budgetMs)
		}
	}
	return 0, ""
}

func (r *Report) gate(name string, limit float64, value func(Step) float64) {
	res := GateResult{Gate: name, Limit: limit, Passed: true}
	for _, s := range r.Steps {
		if v := value(s); v > res.Worst || res.Step == 0 {
			res.Worst, res.Step = v, s.Step
		}
	}
	res.Passed = res.Worst <= limit
	r.Passed = r.Passed && res.Passed
	r.Gates = append(r.Gates, res)
}
