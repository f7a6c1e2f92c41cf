package chain

import (
	"cmp"
	"net/url"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	apiadmission "k8s.io/apiserver/pkg/admission"

	"github.com/hookback/hookback/internal/admitmatch"
	"github.com/hookback/hookback/registration"
)

// LabelObserver marks hookback's own observer configurations (its value
// says which), so that a view never names them as a part of the chain.
const LabelObserver = "hookback.dev/chain-observer"

// Catalog is what the cluster has registered that can take part in a
// request's admission: webhook configurations and admission policies.
type Catalog struct {
	// Mutating are the mutating configurations in the order the apiserver
	// calls them: sorted by name.
	Mutating []Configuration
	// Validating are the validating configurations, sorted by name (the
	// apiserver calls them in parallel).
	Validating []Configuration
	// MutatingPolicies and ValidatingPolicies are the policies with at
	// least one binding, sorted by name.
	MutatingPolicies, ValidatingPolicies []Policy
}

// Configuration is one webhook configuration.
type Configuration struct {
	Name string
	// Observer is hookback's own chain observer ("first", "last",
	// "validating"), empty for any other.
	Observer string
	// Session is the hookback session that registered it, if any (its
	// registration.LabelSession).
	Session  string
	Webhooks []Webhook
}

// Webhook is one webhook of a configuration, as far as matching goes.
type Webhook struct {
	Name              string
	Rules             []admissionregistrationv1.RuleWithOperations
	NamespaceSelector *metav1.LabelSelector
	ObjectSelector    *metav1.LabelSelector
	// Reinvocation is the mutating webhook's reinvocationPolicy (Never
	// when unset, as the apiserver defaults it).
	Reinvocation string
	// Path is the path of its clientConfig (url or service), where
	// hookback serves it when it is yours.
	Path string
	// Endpoint is where the apiserver sends its reviews (Endpoint): what
	// tells your webhook from another session's at the same path.
	Endpoint string
	// MatchConditions are its CEL conditions, evaluated with the
	// apiserver's code (admitmatch).
	MatchConditions []admissionregistrationv1.MatchCondition
}

// Policy is one admission policy with its match constraints.
type Policy struct {
	Name              string
	Rules             []admissionregistrationv1.NamedRuleWithOperations
	NamespaceSelector *metav1.LabelSelector
	ObjectSelector    *metav1.LabelSelector
	// Reinvocation is a MutatingAdmissionPolicy's reinvocationPolicy.
	Reinvocation string
	// MatchConditions are the policy's CEL conditions.
	MatchConditions []admissionregistrationv1.MatchCondition
}

// Request is what matching needs of a request.
type Request struct {
	Identity Identity
	// Namespaced says the resource is namespaced (a namespace is set).
	Namespaced bool
	// Labels are the object's labels at each view compared: a selector
	// that matches any of them could have matched.
	Labels []map[string]string
	// NamespaceLabels are the namespace's labels; nil when unknown, so
	// every namespace selector could match.
	NamespaceLabels map[string]string
	// Views are the request at each view compared, as the apiserver's
	// admission attributes, for matchConditions: conditions true for any
	// of them could have matched; with none, conditions are not evaluated.
	Views []apiadmission.Attributes
}

// NewCatalog sorts what the cluster has as the apiserver orders it. A
// policy without a binding is left out: it applies to nothing.
func NewCatalog(mutating []admissionregistrationv1.MutatingWebhookConfiguration, validating []admissionregistrationv1.ValidatingWebhookConfiguration,
	maps []admissionregistrationv1.MutatingAdmissionPolicy, mapBindings []admissionregistrationv1.MutatingAdmissionPolicyBinding,
	vaps []admissionregistrationv1.ValidatingAdmissionPolicy, vapBindings []admissionregistrationv1.ValidatingAdmissionPolicyBinding) Catalog {
	var c Catalog
	for _, m := range mutating {
		conf := configuration(m.ObjectMeta)
		for _, w := range m.Webhooks {
			reinv := string(admissionregistrationv1.NeverReinvocationPolicy)
			if w.ReinvocationPolicy != nil {
				reinv = string(*w.ReinvocationPolicy)
			}
			conf.Webhooks = append(conf.Webhooks, Webhook{Name: w.Name, Rules: w.Rules, NamespaceSelector: w.NamespaceSelector,
				ObjectSelector: w.ObjectSelector, Reinvocation: reinv, Path: clientPath(w.ClientConfig), Endpoint: Endpoint(w.ClientConfig), MatchConditions: w.MatchConditions})
		}
		c.Mutating = append(c.Mutating, conf)
	}
	for _, v := range validating {
		conf := configuration(v.ObjectMeta)
		for _, w := range v.Webhooks {
			conf.Webhooks = append(conf.Webhooks, Webhook{Name: w.Name, Rules: w.Rules, NamespaceSelector: w.NamespaceSelector,
				ObjectSelector: w.ObjectSelector, Path: clientPath(w.ClientConfig), Endpoint: Endpoint(w.ClientConfig), MatchConditions: w.MatchConditions})
		}
		c.Validating = append(c.Validating, conf)
	}
	bound := map[string]bool{}
	for _, b := range mapBindings {
		bound["m/"+b.Spec.PolicyName] = true
	}
	for _, b := range vapBindings {
		bound["v/"+b.Spec.PolicyName] = true
	}
	for _, p := range maps {
		if bound["m/"+p.Name] {
			reinv := string(admissionregistrationv1.NeverReinvocationPolicy)
			if p.Spec.ReinvocationPolicy != "" {
				reinv = string(p.Spec.ReinvocationPolicy)
			}
			c.MutatingPolicies = append(c.MutatingPolicies, policy(p.Name, p.Spec.MatchConstraints, reinv, p.Spec.MatchConditions))
		}
	}
	for _, p := range vaps {
		if bound["v/"+p.Name] {
			c.ValidatingPolicies = append(c.ValidatingPolicies, policy(p.Name, p.Spec.MatchConstraints, "", p.Spec.MatchConditions))
		}
	}
	// The apiserver's order: sort.SliceStable by name, in k8s.io/apiserver
	// pkg/admission/configuration/{mutating,validating}_webhook_manager.go.
	byName := func(a, b Configuration) int { return strings.Compare(a.Name, b.Name) }
	slices.SortStableFunc(c.Mutating, byName)
	slices.SortStableFunc(c.Validating, byName)
	slices.SortStableFunc(c.MutatingPolicies, func(a, b Policy) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortStableFunc(c.ValidatingPolicies, func(a, b Policy) int { return cmp.Compare(a.Name, b.Name) })
	return c
}

func configuration(m metav1.ObjectMeta) Configuration {
	return Configuration{Name: m.Name, Observer: m.Labels[LabelObserver], Session: m.Labels[registration.LabelSession]}
}

func policy(name string, mc *admissionregistrationv1.MatchResources, reinv string, conds []admissionregistrationv1.MatchCondition) Policy {
	p := Policy{Name: name, Reinvocation: reinv, MatchConditions: conds}
	if mc != nil {
		p.Rules, p.NamespaceSelector, p.ObjectSelector = mc.ResourceRules, mc.NamespaceSelector, mc.ObjectSelector
	}
	return p
}

// clientPath is the path a clientConfig sends reviews to: its URL's, or
// its Service's.
func clientPath(cc admissionregistrationv1.WebhookClientConfig) string {
	switch {
	case cc.URL != nil:
		p, err := url.Parse(*cc.URL)
		if err != nil {
			return ""
		}
		return p.Path
	case cc.Service != nil && cc.Service.Path != nil:
		return *cc.Service.Path
	}
	return ""
}

// Matches reports whether the webhook could be called for r: its rules
// match, its selectors match some view of the object, and its
// matchConditions are not false for every view (conditionsMatch). note
// says why a webhook is kept though that is not known.
func (w Webhook) Matches(r Request) (ok bool, note string) {
	if !rulesMatch(w.Rules, r) || !selectorsMatch(w.NamespaceSelector, w.ObjectSelector, r) {
		return false, ""
	}
	return conditionsMatch(w.MatchConditions, false, r)
}

// Matches reports whether the policy could apply to r (see
// Webhook.Matches; the binding's own matchResources are not read).
func (p Policy) Matches(r Request) (ok bool, note string) {
	rules := make([]admissionregistrationv1.RuleWithOperations, 0, len(p.Rules))
	for _, nr := range p.Rules {
		rules = append(rules, nr.RuleWithOperations)
	}
	if !rulesMatch(rules, r) || !selectorsMatch(p.NamespaceSelector, p.ObjectSelector, r) {
		return false, ""
	}
	return conditionsMatch(p.MatchConditions, true, r)
}

// rulesMatch is the apiserver's rule matching (k8s.io/apiserver
// pkg/admission/plugin/webhook/predicates/rules/rules.go) on operation,
// group, resource, subresource and scope. Versions are not compared: under
// the default matchPolicy Equivalent a rule for another version of the
// resource is called too.
func rulesMatch(rules []admissionregistrationv1.RuleWithOperations, r Request) bool {
	id := r.Identity
	for _, rule := range rules {
		if !slices.Contains(rule.Operations, admissionregistrationv1.OperationAll) && !slices.Contains(rule.Operations, admissionregistrationv1.OperationType(id.Operation)) {
			continue
		}
		if !slices.Contains(rule.APIGroups, "*") && !slices.Contains(rule.APIGroups, id.Group) {
			continue
		}
		if !admitmatch.ResourceMatches(rule.Resources, id.Resource, id.Subresource) {
			continue
		}
		scope := admissionregistrationv1.AllScopes
		if rule.Scope != nil {
			scope = *rule.Scope
		}
		if scope == admissionregistrationv1.ClusterScope && r.Namespaced || scope == admissionregistrationv1.NamespacedScope && !r.Namespaced {
			continue
		}
		return true
	}
	return false
}

func selectorsMatch(ns, obj *metav1.LabelSelector, r Request) bool {
	if r.Namespaced && r.NamespaceLabels != nil && !selects(ns, r.NamespaceLabels) {
		return false
	}
	if len(r.Labels) == 0 {
		return true
	}
	for _, l := range r.Labels {
		if selects(obj, l) {
			return true
		}
	}
	return false
}

// selects reports whether sel matches set; nil matches everything, and a
// selector that does not parse is taken to match (listed, not hidden).
func selects(sel *metav1.LabelSelector, set map[string]string) bool {
	if sel == nil {
		return true
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err != nil || s.Matches(labels.Set(set))
}
