package session

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/inspector"
	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/record"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/upstream"
)

// shadowTarget resolves the Target: a URL as it is, a Service through the
// apiserver's service proxy with the kubeconfig's credentials, once the
// apiserver has shown the Service exists.
func shadowTarget(s plan.ShadowConfig, kc kubeconfig.Options) (upstream.ShadowTarget, error) {
	m := s.Service()
	if m == nil {
		return upstream.ShadowTarget{URL: s.Target, CAFile: s.CAFile}, nil
	}
	cfg, err := kubeconfig.Load(kc)
	if err != nil {
		return upstream.ShadowTarget{}, err
	}
	port, _ := strconv.ParseInt(m[2], 10, 32) // "": 0, the default port
	ctx, cancel := context.WithTimeout(context.Background(), serviceCheckTimeout)
	defer cancel()
	return upstream.ServiceTarget(ctx, cfg.Rest, upstream.ServiceRef{Namespace: m[0], Name: m[1], Port: int32(port)})
}

// serviceCheckTimeout bounds reading the --shadow Service at start.
const serviceCheckTimeout = 30 * time.Second

// shadowWrap puts the deployed webhook beside each route's forwarder, or returns
// the hooks as they are without --shadow.
func shadowWrap(s plan.ShadowConfig, kco kubeconfig.Options, log *slog.Logger, routes []registration.Route, hooks []admission.Webhook, rep *shadowReport) ([]admission.Webhook, error) {
	if s.Target == "" {
		return hooks, nil
	}
	t, err := shadowTarget(s, kco)
	if err != nil {
		return nil, err
	}
	out := make([]admission.Webhook, len(hooks))
	for i, h := range hooks {
		deployed, err := upstream.NewShadowTarget(t, routes[i].UpstreamPath, upstream.Options{Log: log})
		if err != nil {
			return nil, err
		}
		h.Handler = &shadowed{local: h.Handler, deployed: deployed, webhook: h.Name, path: h.Path, report: rep}
		rep.names = append(rep.names, h.Name)
		out[i] = h
	}
	return out, nil
}

// shadowed is one webhook under --shadow: an upstream.Shadow whose
// reports carry the review's uid, so the inspector shows the comparison
// on the review's own entry.
type shadowed struct {
	local, deployed admission.Handler
	webhook, path   string
	report          *shadowReport
}

var _ admission.Handler = (*shadowed)(nil)

// Handle implements admission.Handler.
func (s *shadowed) Handle(ctx context.Context, req admission.Request) admission.Response {
	sh := upstream.Shadow{Local: s.local, Deployed: s.deployed, Report: func(r upstream.ShadowResult) {
		s.report.add(s.webhook, s.path, string(req.UID), r)
	}}
	return sh.Handle(ctx, req)
}

// unshadowed is hooks with your webhooks' own handlers in place of their
// shadowed ones: a replay asks your webhook alone, and compares with its
// answer, which the inspector keeps.
func unshadowed(hooks map[string]admission.Webhook) {
	for path, h := range hooks {
		if s, ok := h.Handler.(*shadowed); ok {
			h.Handler = s.local
			hooks[path] = h
		}
	}
}

// shadowReport counts and reports the comparisons: a log line per
// difference, a metric, and a summary at exit.
type shadowReport struct {
	log *slog.Logger
	// store and dir are set before the server serves (attach).
	store   *inspector.Store
	dir     *record.Recorder
	metric  *prometheus.CounterVec
	mu      sync.Mutex
	byHook  map[string]*shadowCounts
	enabled bool
	// names are the compared webhooks (wrap).
	names []string
}

type shadowCounts struct{ seen, identical, different int }

func newShadowReport(log *slog.Logger, enabled bool) *shadowReport {
	return &shadowReport{log: log, byHook: map[string]*shadowCounts{}, enabled: enabled,
		metric: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "hookback", Name: "shadow_reviews_total",
			Help: "Reviews answered by your webhook and the deployed one, by webhook and result (identical, different)."}, []string{"webhook", "result"})}
}

// register adds the metric to reg, when shadowing.
func (r *shadowReport) register(reg prometheus.Registerer) error {
	if !r.enabled || reg == nil {
		return nil
	}
	return reg.Register(r.metric)
}

// attach adds the inspector's store and the --record-dir recorder, once
// they exist; either may be nil.
func (r *shadowReport) attach(s sinks) error {
	if !r.enabled {
		return nil
	}
	r.store = s.store
	if s.store != nil {
		s.store.ShadowWebhooks(r.names...)
	}
	dir, err := s.dir()
	r.dir = dir
	return err
}

// add reports one comparison: to the log and --record-dir when the
// answers differ, to the metric and the inspector always.
func (r *shadowReport) add(webhook, path, uid string, res upstream.ShadowResult) {
	result := "identical"
	if len(res.Differences) > 0 {
		result = "different"
		diff := strings.Join(res.Differences, "; ")
		r.log.Warn("shadow: your webhook and the deployed one differ", "webhook", webhook, "namespace", res.Namespace, "name", res.Name,
			"differences", diff)
		if r.dir != nil && res.Answer != nil {
			r.dir.RecordShadow(webhook, path, res.Review, res.Answer, diff)
		}
	}
	if r.store != nil {
		r.store.SetShadow(webhook, uid, inspectorShadow(res))
	}
	r.metric.WithLabelValues(webhook, result).Inc()
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.byHook[webhook]
	if c == nil {
		c = &shadowCounts{}
		r.byHook[webhook] = c
	}
	c.seen++
	if result == "identical" {
		c.identical++
	} else {
		c.different++
	}
}

// inspectorShadow is the comparison as the inspector shows it.
func inspectorShadow(res upstream.ShadowResult) inspector.Shadow {
	sh := inspector.Shadow{Answer: res.Answer, Differences: res.Differences, Deployed: inWords(res.Deployed)}
	if res.Local.Failed() {
		sh.Failure = message(res.Local)
	}
	if res.Deployed.Failed() {
		sh.DeployedFailure = message(res.Deployed)
	}
	return sh
}

// inWords is an answer's decision and message.
func inWords(r admission.Response) string {
	switch {
	case r.Failed():
		return "failed: " + message(r)
	case !r.Allowed:
		return fmt.Sprintf("denied: %q", message(r))
	case len(r.Patch) > 0:
		var ops []json.RawMessage
		_ = json.Unmarshal(r.Patch, &ops)
		return fmt.Sprintf("patched: %d operation(s)", len(ops))
	case message(r) != "":
		return fmt.Sprintf("allowed: %q", message(r))
	}
	return "allowed"
}

func message(r admission.Response) string {
	if r.Result == nil {
		return ""
	}
	return r.Result.Message
}

// summary logs, per webhook, the reviews seen, identical and different.
func (r *shadowReport) summary() {
	if !r.enabled {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.byHook))
	for n := range r.byHook {
		names = append(names, n)
	}
	slices.Sort(names)
	total := shadowCounts{}
	for _, n := range names {
		c := r.byHook[n]
		total.seen, total.identical, total.different = total.seen+c.seen, total.identical+c.identical, total.different+c.different
		r.log.Info("shadow summary", "webhook", n, "reviews", c.seen, "identical", c.identical, "different", c.different)
	}
	r.log.Info("shadow summary", "webhook", "all", "reviews", total.seen, "identical", total.identical, "different", total.different)
}
