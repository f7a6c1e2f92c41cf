package session

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/inspector"
	"github.com/hookback/hookback/policy"
	"github.com/hookback/hookback/record"
)

// identityOf names req without its object.
func identityOf(req *admissionv1.AdmissionRequest) inspector.ReviewIdentity {
	res := req.Resource.Resource
	if req.Resource.Group != "" {
		res += "." + req.Resource.Group
	}
	if req.SubResource != "" {
		res += "/" + req.SubResource
	}
	return inspector.ReviewIdentity{UID: string(req.UID), Operation: string(req.Operation), Resource: res, Namespace: req.Namespace, Name: req.Name}
}

// redactEvaluation keeps a Secret's data out of what is shown and
// recorded: its variables' values and its patches' values are replaced,
// their names and paths kept.
func redactEvaluation(req *admissionv1.AdmissionRequest, ev *policy.Evaluation) *policy.Evaluation {
	if req.Resource.Group != "" || req.Resource.Resource != "secrets" {
		return ev
	}
	out := *ev
	out.Patch = redactOps(ev.Patch)
	out.Bindings = slices.Clone(ev.Bindings)
	for i := range out.Bindings {
		b := &out.Bindings[i]
		b.Variables = slices.Clone(b.Variables)
		for j := range b.Variables {
			if b.Variables[j].Value != nil {
				b.Variables[j].Value = record.Redacted
			}
		}
		b.Patch = redactOps(b.Patch)
		b.Mutations = slices.Clone(b.Mutations)
		for j := range b.Mutations {
			b.Mutations[j].Patch = redactOps(b.Mutations[j].Patch)
		}
	}
	return &out
}

func redactOps(ops []policy.PatchOp) []policy.PatchOp {
	out := slices.Clone(ops)
	for i := range out {
		if out[i].Value != nil {
			out[i].Value = record.Redacted
		}
	}
	return out
}

// policyReport publishes start --policy's evaluations and comparisons: a
// log line (never an object), metrics, the inspector (the review's own
// entry), --record-dir's policy/ directory, and a summary at exit.
type policyReport struct {
	log *slog.Logger
	// store and dir are set before the server serves (attach).
	store       *inspector.Store
	dir         string
	seq         atomic.Uint64
	observed    atomic.Int64
	evaluations *prometheus.CounterVec
	comparisons *prometheus.CounterVec
	mu          sync.Mutex
	pairs       map[[2]string]*pairCounts
}

type pairCounts struct{ reviews, agree, disagree int }

func newPolicyReport(log *slog.Logger) *policyReport {
	return &policyReport{log: log, pairs: map[[2]string]*pairCounts{},
		evaluations: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "hookback", Name: "policy_evaluations_total",
			Help: "Bindings of start --policy's policies evaluated on live reviews, by policy and decision (admit, deny, error, excluded)."}, []string{"policy", "decision"}),
		comparisons: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "hookback", Name: "policy_comparisons_total",
			Help: "Reviews answered by a webhook and also evaluated by a policy (start --policy), by webhook, policy and result (agree, disagree)."}, []string{"webhook", "policy", "result"})}
}

// attach adds the metrics to reg, the inspector's store and --record-dir,
// once they exist; any may be nil or empty.
func (r *policyReport) attach(s sinks, reg prometheus.Registerer) error {
	r.store = s.store
	if s.store != nil {
		s.store.PolicyColumn()
	}
	if s.recordDir != "" {
		r.dir = filepath.Join(s.recordDir, "policy")
		if err := os.MkdirAll(r.dir, 0o700); err != nil {
			return field.Errorf("plan.PolicyInput.Paths", "", "create %s: %w", r.dir, err)
		}
	}
	if reg == nil {
		return nil
	}
	for _, c := range []prometheus.Collector{r.evaluations, r.comparisons} {
		if err := reg.Register(c); err != nil {
			return field.Errorf("plan.PolicyInput.Paths", "", "register metrics: %w", err)
		}
	}
	return nil
}

// evaluated reports the observer's evaluation of one review.
func (r *policyReport) evaluated(v inspector.PolicyView) {
	id := v.Request
	if v.Evaluation == nil {
		r.log.Warn("policies: the request cannot be evaluated", "operation", id.Operation, "resource", id.Resource,
			"namespace", id.Namespace, "name", id.Name, "error", v.Error)
	} else {
		var decisions []string
		for _, b := range v.Evaluation.Bindings {
			r.evaluations.WithLabelValues(b.Kind+"/"+b.Policy, string(b.Decision)).Inc()
			d := b.Kind + "/" + b.Policy + "=" + string(b.Decision)
			if len(b.Actions) > 0 {
				d += "(" + strings.Join(b.Actions, ",") + ")"
			}
			decisions = append(decisions, d)
		}
		r.log.Info("policy evaluation", "operation", id.Operation, "resource", id.Resource, "namespace", id.Namespace, "name", id.Name,
			"allowed", v.Evaluation.Allowed, "bindings", strings.Join(decisions, " "))
	}
	r.publish(v)
}

// compared reports each policy beside your webhook's answer to one review.
func (r *policyReport) compared(v inspector.PolicyView) {
	id := v.Request
	for _, c := range v.Comparisons {
		result := "agree"
		if !c.Agree {
			result = "disagree"
			d := c.Disagreement
			r.log.Warn("policy: your webhook and the policy disagree", "webhook", v.Webhook, "policy", c.Policy, "operation", id.Operation,
				"resource", id.Resource, "namespace", id.Namespace, "name", id.Name, "what", d.What, "webhook_result", d.WebhookResult,
				"policy_result", d.PolicyResult)
		}
		r.comparisons.WithLabelValues(v.Webhook, c.Policy, result).Inc()
		r.mu.Lock()
		pc := r.pairs[[2]string{v.Webhook, c.Policy}]
		if pc == nil {
			pc = &pairCounts{}
			r.pairs[[2]string{v.Webhook, c.Policy}] = pc
		}
		pc.reviews++
		if c.Agree {
			pc.agree++
		} else {
			pc.disagree++
		}
		r.mu.Unlock()
	}
	r.publish(v)
}

// publish sends v to the inspector's entry of its review and to
// --record-dir/policy/.
func (r *policyReport) publish(v inspector.PolicyView) {
	b, err := json.Marshal(v)
	if err != nil {
		r.log.Warn("policies: evaluation not encoded", "webhook", v.Webhook, "error", err)
		return
	}
	if r.store != nil {
		r.store.SetPolicy(v.Webhook, v.Request.UID, b)
	}
	if r.dir == "" {
		return
	}
	id := v.Request
	name := record.FileName(r.seq.Add(1), v.Webhook, id.Operation, id.Namespace, id.Name, id.UID)
	if err := record.WriteWhole(filepath.Join(r.dir, name), append(b, '\n')); err != nil {
		r.log.Warn("policies: evaluation not recorded", "webhook", v.Webhook, "error", err)
	}
}

// summary logs, per webhook and policy compared, the reviews seen, agreed
// and disagreed on, and how many reviews the observer evaluated.
func (r *policyReport) summary() {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([][2]string, 0, len(r.pairs))
	for k := range r.pairs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1]) })
	total := pairCounts{}
	for _, k := range keys {
		c := r.pairs[k]
		total.reviews, total.agree, total.disagree = total.reviews+c.reviews, total.agree+c.agree, total.disagree+c.disagree
		r.log.Info("policy summary", "webhook", k[0], "policy", k[1], "reviews", c.reviews, "agree", c.agree, "disagree", c.disagree)
	}
	r.log.Info("policy summary", "webhook", "all", "policy", "all", "reviews", total.reviews, "agree", total.agree, "disagree", total.disagree,
		"observed", r.observed.Load())
}
