package suite

import (
	"context"
	"fmt"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	apiadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/namespace"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/object"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/internal/admitmatch"
)

// Webhook is one admission webhook a suite runs against, as its
// configuration declares it, with the handler that answers it.
type Webhook struct {
	// Configuration is its configuration's name; Path where hookback
	// serves it (a case may name a webhook by it).
	Configuration, Path string
	// Exactly one of Mutating and Validating is set.
	Mutating   *admissionregistrationv1.MutatingWebhook
	Validating *admissionregistrationv1.ValidatingWebhook
	// Handler answers the webhook's reviews; unused when Schema is set.
	Handler admission.Handler
	// Policy marks an admission policy evaluated as a webhook (--policy):
	// mutating policies run before every mutating webhook, as the
	// apiserver's admission plugins are ordered.
	Policy bool
	// Schema, when set, makes the webhook a CRD's schema and CEL rules
	// (--crd): the apiserver decodes the CRD's objects with them before
	// any admission, judges them after mutating admission and before
	// validating admission, as the registry validates the object
	// (rest.BeforeCreate) before createValidation runs.
	Schema CRDRules

	accessor webhook.WebhookAccessor
}

// Name is the webhook's name in its configuration.
func (w *Webhook) Name() string { return w.access().GetName() }

// accessors guards the accessors made lazily: cases run concurrently
// (--concurrency) and may match the same webhook at once.
var accessors sync.Mutex

func (w *Webhook) access() webhook.WebhookAccessor {
	accessors.Lock()
	defer accessors.Unlock()
	if w.accessor == nil {
		defaults(w)
		if w.Mutating != nil {
			w.accessor = webhook.NewMutatingWebhookAccessor(w.Configuration+"/"+w.Mutating.Name, w.Configuration, w.Mutating)
		} else {
			w.accessor = webhook.NewValidatingWebhookAccessor(w.Configuration+"/"+w.Validating.Name, w.Configuration, w.Validating)
		}
	}
	return w.accessor
}

// defaults fills what the apiserver defaults when a configuration is
// created (k8s.io/kubernetes pkg/apis/admissionregistration/v1
// defaults.go): a nil selector selects everything there, while the
// predicates read it as selecting nothing.
func defaults(w *Webhook) {
	var ns, obj **metav1.LabelSelector
	var rs []admissionregistrationv1.RuleWithOperations
	var fp **admissionregistrationv1.FailurePolicyType
	var mp **admissionregistrationv1.MatchPolicyType
	if m := w.Mutating; m != nil {
		ns, obj, rs, fp, mp = &m.NamespaceSelector, &m.ObjectSelector, m.Rules, &m.FailurePolicy, &m.MatchPolicy
	} else {
		v := w.Validating
		ns, obj, rs, fp, mp = &v.NamespaceSelector, &v.ObjectSelector, v.Rules, &v.FailurePolicy, &v.MatchPolicy
	}
	if *ns == nil {
		*ns = &metav1.LabelSelector{}
	}
	if *obj == nil {
		*obj = &metav1.LabelSelector{}
	}
	if *fp == nil {
		f := admissionregistrationv1.Fail
		*fp = &f
	}
	if *mp == nil {
		e := admissionregistrationv1.Equivalent
		*mp = &e
	}
	for i := range rs {
		if rs[i].Scope == nil {
			all := admissionregistrationv1.AllScopes
			rs[i].Scope = &all
		}
	}
}

// timeout is the webhook's timeoutSeconds, or the apiserver's default.
func (w *Webhook) timeout() time.Duration {
	if t := w.access().GetTimeoutSeconds(); t != nil && *t > 0 {
		return time.Duration(*t) * time.Second
	}
	return 10 * time.Second
}

// matcher decides, as the apiserver's generic webhook plugin does
// (ShouldCallHook in k8s.io/apiserver's webhook/generic), whether a
// webhook is called for a request: its namespaceSelector, objectSelector
// and rules through the apiserver's predicates, then its matchConditions
// compiled and evaluated with the apiserver's CEL environment
// (admitmatch). Under
// matchPolicy Equivalent, a rule naming another version of the request's
// group and resource matches too (equivalentMatch).
type matcher struct {
	compiler cel.ConditionCompiler
	// convs convert the object for the matchConditions of a webhook
	// matched through an equivalent resource.
	convs []ConversionWebhook
}

func newMatcher() *matcher {
	return &matcher{compiler: admitmatch.Compiler()}
}

// calls reports whether the apiserver would call w for in, and, when w
// matched only through matchPolicy Equivalent, the resource its rules
// name in place of the request's; an error is the apiserver's own refusal
// (a matchCondition that fails under failurePolicy Fail, a bad selector).
func (m *matcher) calls(ctx context.Context, w *Webhook, in *input) (bool, *equivalent, error) {
	attr, err := admitmatch.Attributes(&in.req)
	if err != nil {
		return false, nil, err
	}
	h := w.access()
	nsm := &namespace.Matcher{NamespaceLister: oneNamespace{namespaceOf(in)}}
	if ok, serr := nsm.MatchNamespaceSelector(h, attr); serr != nil {
		return false, nil, fmt.Errorf("namespaceSelector: %w", serr)
	} else if !ok {
		return false, nil, nil
	}
	if ok, serr := (&object.Matcher{}).MatchObjectSelector(h, attr); serr != nil {
		return false, nil, fmt.Errorf("objectSelector: %w", serr)
	} else if !ok {
		return false, nil, nil
	}
	matched := false
	for _, r := range h.GetRules() {
		if (&rules.Matcher{Rule: r, Attr: attr}).Matches() {
			matched = true
			break
		}
	}
	var eq *equivalent
	if !matched {
		eq = equivalentMatch(h, attr)
		matched = eq != nil
	}
	if !matched || len(h.GetMatchConditions()) == 0 {
		return matched, eq, nil
	}
	va, err := m.versioned(ctx, attr, in, eq)
	if err != nil {
		return false, nil, err
	}
	res := h.GetCompiledMatcher(m.compiler).Match(ctx, va, nil, nil)
	if res.Error != nil {
		return false, nil, fmt.Errorf("matchConditions (the apiserver refuses the request under failurePolicy Fail): %w", res.Error)
	}
	return res.Matches, eq, nil
}

// versioned is the request as the webhook's matchConditions see it: in
// the version its rules name when it matched through an equivalent
// resource (the apiserver converts before evaluating them).
func (m *matcher) versioned(ctx context.Context, attr apiadmission.Attributes, in *input, eq *equivalent) (*apiadmission.VersionedAttributes, error) {
	va := &apiadmission.VersionedAttributes{Attributes: attr, VersionedKind: attr.GetKind(),
		VersionedObject: attr.GetObject(), VersionedOldObject: attr.GetOldObject()}
	if eq == nil {
		return va, nil
	}
	conv, err := in.inVersion(ctx, eq, m.convs)
	if err != nil {
		return nil, err
	}
	if va.VersionedObject, err = admitmatch.ObjectOf(conv.req.Object); err != nil {
		return nil, fmt.Errorf("object: %w", err)
	}
	if va.VersionedOldObject, err = admitmatch.ObjectOf(conv.req.OldObject); err != nil {
		return nil, fmt.Errorf("oldObject: %w", err)
	}
	va.VersionedKind = eq.kind
	return va, nil
}

// namespaceOf is the case's namespace with its labels; the apiserver
// always sets kubernetes.io/metadata.name.
func namespaceOf(in *input) *corev1.Namespace {
	l := map[string]string{corev1.LabelMetadataName: in.req.Namespace}
	for k, v := range in.nsLabels {
		l[k] = v
	}
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: in.req.Namespace, Labels: l}}
}

// oneNamespace is a NamespaceLister that knows the case's namespace.
type oneNamespace struct{ ns *corev1.Namespace }

var _ corelisters.NamespaceLister = oneNamespace{}

func (o oneNamespace) List(sel labels.Selector) ([]*corev1.Namespace, error) {
	if sel.Matches(labels.Set(o.ns.Labels)) {
		return []*corev1.Namespace{o.ns}, nil
	}
	return nil, nil
}

func (o oneNamespace) Get(name string) (*corev1.Namespace, error) {
	if name == o.ns.Name {
		return o.ns, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("namespaces"), name)
}
