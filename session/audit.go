package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/assembly"
	"github.com/hookback/hookback/audit"
	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/registration"
)

// auditBase is the URL the audit renders the configurations with: nothing
// dials it, it only ties each webhook to the handler of its path.
const auditBase = "https://hookback.invalid"

// AuditConfig is one `hookback audit`: the webhooks of cfg (built-ins,
// template, your own manifests and upstreams, as start takes them) and how
// to send the objects through them.
type AuditConfig struct {
	Operation   admissionregistrationv1.OperationType
	Concurrency int
	PageSize    int64
	Progress    func(audit.Progress)
	// Policies, when set, are audited beside the webhooks, each as a
	// webhook of its own (PolicyWebhooks).
	Policies plan.PolicyInput
}

// Audit sends the cluster's existing objects through the webhooks a run of
// cfg would register, as dry-run reviews, and returns what each did. It
// registers and writes nothing. An upstream that cannot be reached stops
// it, named, before anything is listed.
func Audit(ctx context.Context, c *plan.Config, ac AuditConfig) ([]audit.Result, error) {
	cfg := c.Options()
	user, err := callerUpstreams(c, cfg.User)
	if err != nil {
		return nil, err
	}
	scope, err := renderScope(ctx, cfg.Scope, cfg.Kubeconfig)
	if err != nil {
		return nil, err
	}
	hooks, convs, err := auditInputs(c, user, scope)
	if err != nil {
		return nil, err
	}
	var unreachable []error
	for up, err := range probeUpstreams(ctx, user) {
		if err != nil {
			unreachable = append(unreachable, fmt.Errorf("upstream %s: %w", up, err))
		}
	}
	if len(unreachable) > 0 {
		return nil, errors.Join(unreachable...)
	}
	kc, err := kubeconfig.Load(cfg.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cs, err := kc.Clientset(30 * time.Second)
	if err != nil {
		return nil, err
	}
	dyn, err := kc.Dynamic(time.Minute)
	if err != nil {
		return nil, err
	}
	who, err := kubeconfig.WhoAmI(ctx, cs)
	if err != nil {
		// Older clusters lack SelfSubjectReview; the reviews then carry no
		// user, which is still what a dry run tells the webhook apart by.
		cfg.Log.Debug("the reviews carry no user", "error", err)
	}
	if len(ac.Policies.Paths) > 0 {
		e, _, err := loadPolicyEngine(ctx, ac.Policies, cs, dyn, cfg.Log)
		if err != nil {
			return nil, err
		}
		hooks = append(hooks, PolicyWebhooks(e)...)
	}
	lister := &audit.ClusterLister{Discovery: cs.Discovery(), Dynamic: dyn, PageSize: ac.PageSize}
	return audit.Run(ctx, audit.Options{
		Webhooks:    hooks,
		Conversions: convs,
		CRDs:        lister,
		Lister:      lister,
		Operation:   ac.Operation,
		UserInfo:    audit.Identity{Username: who.Username, Groups: who.Groups},
		Concurrency: ac.Concurrency,
		Progress:    ac.Progress,
		Log:         cfg.Log,
	})
}

// auditWebhooks are the webhooks a run of cfg would register, each with the
// handler that answers it: a built-in called in process, or a forwarder to
// your upstream with start's answer checks.
func auditWebhooks(c *plan.Config) ([]audit.Webhook, error) {
	hooks, _, err := auditInputs(c, c.Options().User, c.Options().Scope)
	return hooks, err
}

// auditInputs are the webhooks of auditWebhooks and the conversion
// webhooks of the manifests' CRDs, each narrowed by the scope: c's
// Objects, with c's upstreams and scope as the audit resolved them.
func auditInputs(c *plan.Config, spec plan.UserWebhooks, scope registration.Scope) ([]audit.Webhook, []audit.Conversion, error) {
	cfg := c.Options()
	served, err := assembly.ServedWebhooks(cfg.Webhooks, cfg.WebhookOptions, cfg.Extra)
	if err != nil {
		return nil, nil, err
	}
	user, err := newUserWebhooks(c, spec)
	if err != nil {
		return nil, nil, err
	}
	convs, err := auditConversions(user, scope, cfg.Log)
	if err != nil {
		return nil, nil, err
	}
	// The scope narrows every webhook as start registers it (ANDed
	// selectors), so the audit matches what start would send.
	objs, err := c.Objects(plan.Placement{Target: registration.Target{URL: auditBase}, Scope: scope})
	if err != nil {
		return nil, nil, err
	}
	for _, n := range objs.Notes {
		cfg.Log.Info(n)
	}
	handlers := map[string]admission.Handler{}
	for _, h := range slices.Concat(served, plan.ObserverWebhooks(cfg.Observers), user.hooks) {
		handlers[h.Path] = h.Handler
	}
	var out []audit.Webhook
	for _, o := range objs.Configurations.Objects {
		hooks, err := auditHooks(o, handlers)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, hooks...)
	}
	return out, convs, nil
}

// auditHooks reads one rendered configuration's webhooks.
func auditHooks(o *unstructured.Unstructured, handlers map[string]admission.Handler) ([]audit.Webhook, error) {
	var out []audit.Webhook
	add := func(name string, cc admissionregistrationv1.WebhookClientConfig, timeout *int32, w audit.Webhook) error {
		path := "/"
		if cc.URL != nil {
			path = strings.TrimPrefix(*cc.URL, auditBase)
		}
		h, ok := handlers[path]
		if !ok {
			return fmt.Errorf("webhook %s: nothing serves path %s", name, path)
		}
		w.Name, w.Handler = name, h
		if timeout != nil {
			w.Timeout = time.Duration(*timeout) * time.Second
		}
		out = append(out, w)
		return nil
	}
	switch o.GetKind() {
	case "MutatingWebhookConfiguration":
		var c admissionregistrationv1.MutatingWebhookConfiguration
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &c); err != nil {
			return nil, fmt.Errorf("read %s: %w", o.GetName(), err)
		}
		for _, h := range c.Webhooks {
			w := audit.Webhook{Mutating: true, Rules: h.Rules, NamespaceSelector: h.NamespaceSelector, ObjectSelector: h.ObjectSelector,
				MatchConditions: len(h.MatchConditions), ReviewVersions: h.AdmissionReviewVersions}
			if err := add(h.Name, h.ClientConfig, h.TimeoutSeconds, w); err != nil {
				return nil, err
			}
		}
	case "ValidatingWebhookConfiguration":
		var c admissionregistrationv1.ValidatingWebhookConfiguration
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &c); err != nil {
			return nil, fmt.Errorf("read %s: %w", o.GetName(), err)
		}
		for _, h := range c.Webhooks {
			w := audit.Webhook{Rules: h.Rules, NamespaceSelector: h.NamespaceSelector, ObjectSelector: h.ObjectSelector,
				MatchConditions: len(h.MatchConditions), ReviewVersions: h.AdmissionReviewVersions}
			if err := add(h.Name, h.ClientConfig, h.TimeoutSeconds, w); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// auditConversions are the conversion webhooks of the manifests' CRDs,
// forwarding to the user's upstreams with start's checks, and the scope as
// selectors on the objects.
func auditConversions(user *userWebhooks, scope registration.Scope, log *slog.Logger) ([]audit.Conversion, error) {
	c, err := loadConversions(user, log)
	if err != nil || len(c.hooks) == 0 {
		return nil, err
	}
	nsSel, objSel, err := scopeSelectors(scope)
	if err != nil {
		return nil, err
	}
	out := make([]audit.Conversion, 0, len(c.hooks))
	for _, h := range c.hooks {
		out = append(out, audit.Conversion{CRD: h.CRD, Converter: h.Converter, NamespaceSelector: nsSel, ObjectSelector: objSel})
	}
	return out, nil
}

// scopeSelectors are the scope's namespaces and selectors as label
// selectors (nil for none), ANDed as start ANDs them with a webhook's.
func scopeSelectors(s registration.Scope) (ns, obj *metav1.LabelSelector, err error) {
	if s.NamespaceSelector != "" {
		if ns, err = metav1.ParseToLabelSelector(s.NamespaceSelector); err != nil {
			return nil, nil, field.Errorf("registration.Scope.NamespaceSelector", strconv.Quote(s.NamespaceSelector), "%w", err)
		}
	}
	if len(s.Namespaces) > 0 {
		if ns == nil {
			ns = &metav1.LabelSelector{}
		}
		ns.MatchExpressions = append(ns.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: s.Namespaces})
	}
	if s.ObjectSelector != "" {
		if obj, err = metav1.ParseToLabelSelector(s.ObjectSelector); err != nil {
			return nil, nil, field.Errorf("registration.Scope.ObjectSelector", strconv.Quote(s.ObjectSelector), "%w", err)
		}
	}
	return ns, obj, nil
}
