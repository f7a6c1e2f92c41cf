package session

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/inspector"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/policy"
	"github.com/hookback/hookback/reload"
)

// Where start --policy's observer is served, and its name (the inspector's
// and the records' webhook).
const (
	PolicyObserverPath = "/policy/observe"
	PolicyObserverName = "policy-observer"
)

// livePolicies is start --policy: the policies, read before the session
// connects (render prints their observer), evaluated with the apiserver's
// code on every review the observer or your webhooks receive, and read
// again at each edit of their files.
type livePolicies struct {
	in  plan.PolicyInput
	log *slog.Logger
	// set is the policies as last read; rules the observer's rules, as
	// registered (a reload that needs others says to restart).
	set   atomic.Pointer[policy.Set]
	rules []admissionregistrationv1.RuleWithOperations
	// engine is nil until connect; then replaced whole by each good edit.
	engine atomic.Pointer[policy.Engine]
	cs     kubernetes.Interface
	dyn    dynamic.Interface
	// kinds are the kinds of webhook (policy.KindValidating,
	// policy.KindMutating) each served path answers for, as last
	// registered (learn); nil before.
	kinds atomic.Pointer[map[string][]string]
	// out publishes evaluations and comparisons (inspector, --record-dir,
	// log, metrics, summary).
	out *policyReport
}

// readPolicies reads start --policy's manifests; nil without --policy.
func readPolicies(in plan.PolicyInput, log *slog.Logger) (*livePolicies, error) {
	if len(in.Paths) == 0 {
		return nil, nil
	}
	set, err := policy.Load(in.Paths, in.Stdin)
	if err != nil {
		return nil, field.Errorf("plan.PolicyInput.Paths", "", "%w", err)
	}
	p := &livePolicies{in: in, log: log, rules: observedRules(set), out: newPolicyReport(log)}
	if len(p.rules) == 0 {
		return nil, field.New("plan.PolicyInput.Paths", strings.Join(in.Paths, ","),
			"no ValidatingAdmissionPolicy or MutatingAdmissionPolicy with matchConstraints.resourceRules: nothing to observe")
	}
	p.set.Store(set)
	return p, nil
}

// observers are the policies' observer as a Placement adds it (Run and
// Render): none without --policy.
func (p *livePolicies) observers() ([]plan.Observer, error) {
	if p == nil {
		return nil, nil
	}
	o, err := p.observer()
	if err != nil {
		return nil, err
	}
	return []plan.Observer{o}, nil
}

// observedRules are the resourceRules of every policy's matchConstraints,
// each once: what the observer asks the apiserver for. The policies'
// excludeResourceRules, selectors and bindings are left to the engine.
func observedRules(set *policy.Set) []admissionregistrationv1.RuleWithOperations {
	var all []*admissionregistrationv1.MatchResources
	for _, p := range set.Validating {
		all = append(all, p.Spec.MatchConstraints)
	}
	for _, p := range set.Mutating {
		all = append(all, p.Spec.MatchConstraints)
	}
	var out []admissionregistrationv1.RuleWithOperations
	for _, m := range all {
		if m == nil {
			continue
		}
		for _, r := range m.ResourceRules {
			if !slices.ContainsFunc(out, func(o admissionregistrationv1.RuleWithOperations) bool { return sameRule(o, r.RuleWithOperations) }) {
				out = append(out, r.RuleWithOperations)
			}
		}
	}
	return out
}

func sameRule(a, b admissionregistrationv1.RuleWithOperations) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// observer is the webhook that sends the policies' reviews here: a
// ValidatingWebhookConfiguration for the policies' resources that always
// allows, never patches and fails open. Config.Objects names, labels and
// scopes it like every other webhook of the session.
func (p *livePolicies) observer() (plan.Observer, error) {
	rules, err := json.Marshal(p.rules)
	if err != nil {
		return plan.Observer{}, field.Errorf("plan.PolicyInput.Paths", "", "encode the observer's rules: %w", err)
	}
	tmpl := `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: hookback-policy-observer
webhooks:
  - name: policy-observer.hookback.dev
    clientConfig:
      url: {{ .URL }}` + PolicyObserverPath + `
      {{- with .CABundle }}
      caBundle: {{ . }}
      {{- end }}
    rules: ` + string(rules) + `
    namespaceSelector:
      matchExpressions:
      - key: kubernetes.io/metadata.name
        operator: NotIn
        values: ["kube-system", "kube-public", "kube-node-lease"]
    failurePolicy: Ignore
    sideEffects: None
    timeoutSeconds: 5
    admissionReviewVersions: ["v1"]
`
	h := admission.HandlerFunc(p.observe)
	return plan.Observer{Webhook: admission.Webhook{Name: PolicyObserverName, Path: PolicyObserverPath, Handler: h}, Template: []byte(tmpl)}, nil
}

// connect compiles the policies against the cluster (served versions,
// namespaces, params, authorizer, schemas).
func (p *livePolicies) connect(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface) error {
	if p == nil {
		return nil
	}
	p.cs, p.dyn = cs, dyn
	e, err := connectPolicies(ctx, p.set.Load(), cs, dyn, p.log)
	if err != nil {
		return err
	}
	p.engine.Store(e)
	return nil
}

// observe evaluates every policy on the request and publishes how; it
// always allows, with no patch: the policies decide nothing here.
func (p *livePolicies) observe(ctx context.Context, req admission.Request) admission.Response {
	p.out.observed.Add(1)
	e := p.engine.Load()
	if e == nil {
		return admission.Allowed("")
	}
	view := inspector.PolicyView{Webhook: PolicyObserverName, Request: identityOf(&req.AdmissionRequest)}
	ev, err := e.Evaluate(ctx, &req.AdmissionRequest)
	if err != nil {
		view.Error = err.Error()
	} else {
		view.Evaluation = redactEvaluation(&req.AdmissionRequest, ev)
	}
	p.out.evaluated(view)
	return admission.Allowed("")
}

// watch reads the policies again after each edit of their files until ctx
// ends; stdin is read once.
func (p *livePolicies) watch(ctx context.Context, interval time.Duration) (wait func()) {
	if p == nil || slices.Contains(p.in.Paths, "-") {
		return func() {}
	}
	w, err := reload.New(reload.Options{Trees: manifestRoots(p.in.Paths), Interval: interval, Debounce: 50 * time.Millisecond, Log: p.log,
		OnChange: p.reload})
	if err != nil {
		p.log.Warn("policies: hot reload disabled", "error", err)
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.Start(ctx)
	}()
	return func() { <-done }
}

// reload reads and compiles the policies again; a bad edit keeps the
// previous ones live and says why.
func (p *livePolicies) reload(ctx context.Context) {
	set, err := policy.Load(p.in.Paths, nil)
	if err != nil {
		p.log.Error("policies: the policies changed but cannot be read; the previous ones stay live", "error", err)
		return
	}
	if errs := set.CompileErrors(); len(errs) > 0 {
		names := policy.Names(errs)
		p.log.Error("policies: the policies changed but the apiserver would refuse them: they do not compile; the previous ones stay live",
			"policy", names[0], "error", errs[names[0]].ToAggregate().Error())
		return
	}
	e, err := connectPolicies(ctx, set, p.cs, p.dyn, p.log)
	if err != nil {
		p.log.Error("policies: the policies changed but cannot be evaluated; the previous ones stay live", "error", err)
		return
	}
	p.set.Store(set)
	p.engine.Store(e)
	p.log.Info("policies reloaded", "policies", len(e.Policies()))
	if rules := observedRules(set); !slices.EqualFunc(rules, p.rules, sameRule) {
		p.log.Warn("policies: the policies now match other resources than the observer was registered for: restart hookback start to observe them; until then only the resources matched at start are evaluated")
	}
}

// attach gives the report the inspector's store, --record-dir and the
// metrics registry.
func (p *livePolicies) attach(s sinks, reg prometheus.Registerer) error {
	if p == nil {
		return nil
	}
	return p.out.attach(s, reg)
}

// summary logs the comparisons at exit.
func (p *livePolicies) summary() {
	if p != nil {
		p.out.summary()
	}
}
