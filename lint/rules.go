package lint

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Where the rules' reasons are written.
const (
	admissionDocs = "https://kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/"
	goodPractices = "https://kubernetes.io/docs/concepts/cluster-administration/admission-webhooks-good-practices/"
	policyDocs    = "https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/"
)

// Rule is one check. Its findings carry its ID and Link.
type Rule struct {
	ID string `json:"id"`
	// Severity is the highest its findings have.
	Severity Severity `json:"severity"`
	Summary  string   `json:"summary"`
	Link     string   `json:"link"`
	check    func(*Input, *Rule) []Finding
}

// Rules are every rule, in the order findings of equal severity are
// reported.
func Rules() []*Rule {
	return []*Rule{
		{ID: "self-deadlock", Severity: Error, Link: admissionDocs + "#avoiding-deadlocks-in-self-hosted-webhooks",
			Summary: "a failurePolicy Fail webhook is called for the pods, ReplicaSets, Deployments or EndpointSlices its own Service needs to come back", check: checkSelfDeadlock},
		{ID: "control-plane-namespaces", Severity: Error, Link: admissionDocs + "#avoiding-operating-on-the-kube-system-namespace",
			Summary: "a failurePolicy Fail webhook is called for objects in kube-system or kube-node-lease", check: both(checkControlPlane, checkPolicyControlPlane)},
		{ID: "critical-resources", Severity: Error, Link: goodPractices,
			Summary: "a failurePolicy Fail webhook is called for leases, nodes, events or tokenreviews, which the cluster needs to stay healthy", check: both(checkCritical, checkPolicyCritical)},
		{ID: "chain-budget", Severity: Error, Link: "https://github.com/kubernetes/kubernetes/issues/128162",
			Summary: "the webhooks one request passes through can take longer than the request's deadline, which fails it even under failurePolicy Ignore", check: checkBudget},
		{ID: "dry-run-side-effects", Severity: Error, Link: admissionDocs + "#side-effects",
			Summary: "sideEffects is unset, Some or Unknown: dry-run requests the webhook matches are rejected", check: checkSideEffects},
		{ID: "review-versions", Severity: Warning, Link: admissionDocs + "#webhook-request-and-response",
			Summary: "admissionReviewVersions does not list v1", check: checkReviewVersions},
		{ID: "wildcard-subresources", Severity: Warning, Link: admissionDocs + "#matching-requests-rules",
			Summary: `a "*/*" rule also catches every subresource (pods/exec, pods/eviction, nodes/status, .../status)`, check: checkWildcard},
		{ID: "match-policy-exact", Severity: Warning, Link: admissionDocs + "#matching-requests-matchpolicy",
			Summary: "matchPolicy Exact: requests in a version the rules do not list bypass the webhook", check: checkExact},
		{ID: "no-ready-endpoints", Severity: Error, Link: goodPractices,
			Summary: "online: the webhook's Service has no ready endpoint (failurePolicy Fail: every request it matches is rejected now)", check: checkEndpoints},
		{ID: "ca-bundle", Severity: Error, Link: admissionDocs + "#contacting-the-webhook",
			Summary: "a caBundle certificate has expired or expires within 30 days; online, a url webhook's served certificate does not verify against it", check: checkCABundle},
		{ID: "slow-webhook", Severity: Warning, Link: admissionDocs + "#timeouts",
			Summary: "online: the webhook's p99 latency, by the apiserver's metrics, is 80% of its timeout or more", check: checkLatency},
		{ID: "reinvocation-unsafe", Severity: Error, Link: admissionDocs + "#reinvocation-policy",
			Summary: "probe (lint --probe): a mutating webhook's server, sent its own output as a new review, changes it again (or refuses it): under reinvocationPolicy IfNeeded every object is changed twice", check: checkReinvocation},
		{ID: "opt-out-label", Severity: Warning, Link: goodPractices,
			Summary: "an enforcing webhook's selector reads a label that whoever can edit a namespace or create the object can set or remove", check: checkOptOut},
		{ID: "unbound-policy", Severity: Warning, Link: policyDocs,
			Summary: "an admission policy binding names a policy that does not exist, or a policy has no binding: it never runs", check: checkUnbound},
		{ID: "policy-params", Severity: Error, Link: policyDocs + "#parameter-resources",
			Summary: "a policy with a paramKind whose expressions read params is bound without a paramRef: its expressions fail on every request", check: checkParams},
		{ID: "validation-actions", Severity: Warning, Link: policyDocs + "#validation-actions",
			Summary: "a ValidatingAdmissionPolicy with failurePolicy Fail is bound with validationActions that do not include Deny: it rejects nothing", check: checkActions},
	}
}

// RuleIDs lists the rules' IDs.
func RuleIDs() []string {
	var ids []string
	for _, r := range Rules() {
		ids = append(ids, r.ID)
	}
	return ids
}

func checkSideEffects(in *Input, r *Rule) []Finding {
	var fs []Finding
	for _, h := range in.Hooks {
		var msg string
		switch {
		case h.SideEffects == nil:
			msg = "sideEffects is not set: admissionregistration.k8s.io/v1 requires it, and the apiserver refuses the configuration"
		case *h.SideEffects == admissionregistrationv1.SideEffectClassSome || *h.SideEffects == admissionregistrationv1.SideEffectClassUnknown:
			msg = fmt.Sprintf("sideEffects %s: every dry-run request this webhook matches (kubectl apply --dry-run=server, kubectl diff, hookback audit) is rejected", *h.SideEffects)
		default:
			continue
		}
		f := h.finding(r, Error, "sideEffects", "%s", msg)
		f.Fix = []PatchOp{{Op: "add", Path: h.pointer("sideEffects"), Value: "None"}}
		f.Advice = "None when the webhook changes nothing but the object it answers for; NoneOnDryRun when it skips its side effects when request.dryRun is true"
		fs = append(fs, f)
	}
	return fs
}

func checkReviewVersions(in *Input, r *Rule) []Finding {
	var fs []Finding
	for _, h := range in.Hooks {
		if slices.Contains(h.AdmissionReviewVersions, "v1") {
			continue
		}
		if len(h.AdmissionReviewVersions) == 0 {
			f := h.finding(r, Error, "admissionReviewVersions", "admissionReviewVersions is empty: admissionregistration.k8s.io/v1 requires it, and the apiserver refuses the configuration")
			f.Fix = []PatchOp{{Op: "add", Path: h.pointer("admissionReviewVersions"), Value: []string{"v1"}}}
			fs = append(fs, f)
			continue
		}
		f := h.finding(r, Warning, "admissionReviewVersions", "admissionReviewVersions %v does not list v1: the apiserver sends the deprecated v1beta1 AdmissionReview, which it may stop sending", h.AdmissionReviewVersions)
		f.Fix = []PatchOp{{Op: "add", Path: h.pointer("admissionReviewVersions/0"), Value: "v1"}}
		f.Advice = "the server must then answer a v1 review in v1 (controller-runtime does)"
		fs = append(fs, f)
	}
	return fs
}

func checkWildcard(in *Input, r *Rule) []Finding {
	var fs []Finding
	for _, h := range in.Hooks {
		for j, rule := range h.Rules {
			for k, res := range rule.Resources {
				if res != "*/*" {
					continue
				}
				f := h.finding(r, Warning, fmt.Sprintf("rules[%d].resources[%d]", j, k),
					`resource "*/*" catches every subresource as well: pods/exec, pods/attach and pods/portforward (CONNECT), pods/eviction, pods/binding, nodes/status, every .../status and .../scale`)
				f.Fix = []PatchOp{{Op: "replace", Path: h.pointer(fmt.Sprintf("rules/%d/resources/%d", j, k)), Value: "*"}}
				f.Advice = `"*" is every resource without its subresources; list the subresources the webhook means beside it ("pods/status")`
				fs = append(fs, f)
			}
		}
	}
	return fs
}

func checkExact(in *Input, r *Rule) []Finding {
	var fs []Finding
	for _, h := range in.Hooks {
		if *h.MatchPolicy != admissionregistrationv1.Exact {
			continue
		}
		for j, rule := range h.Rules {
			if slices.Contains(rule.APIVersions, "*") {
				continue
			}
			f := h.finding(r, Warning, "matchPolicy", "matchPolicy Exact with rules[%d] for versions %v only: a request in another version of the same resource (a CRD served in several versions, autoscaling/v1 and v2, a future version) is never sent to this webhook", j, rule.APIVersions)
			f.Fix = []PatchOp{{Op: "add", Path: h.pointer("matchPolicy"), Value: "Equivalent"}}
			f.Advice = "under Equivalent the apiserver converts such a request to a version the rules list before calling the webhook"
			fs = append(fs, f)
			break
		}
	}
	return fs
}

// checkOptOut: a validating webhook with failurePolicy Fail enforces
// something; a selector on any label but the apiserver's own namespace name
// can be met or escaped by whoever can label the namespace, or, for an
// objectSelector, by whoever writes the object.
func checkOptOut(in *Input, r *Rule) []Finding {
	var fs []Finding
	for _, h := range in.Hooks {
		if h.Mutating || !h.fails() {
			continue
		}
		if keys := selectorKeys(h.NamespaceSelector, nameLabel); len(keys) > 0 {
			f := h.finding(r, Warning, "namespaceSelector", "namespaceSelector reads %s: anyone who may patch a namespace's labels can take the namespace out of this webhook's enforcement", strings.Join(keys, ", "))
			f.Advice = "select namespaces by " + nameLabel + " (set by the apiserver, immutable), or guard the label with a ValidatingAdmissionPolicy on namespaces that only administrators pass"
			fs = append(fs, f)
		}
		if keys := selectorKeys(h.ObjectSelector, ""); len(keys) > 0 {
			f := h.finding(r, Warning, "objectSelector", "objectSelector reads %s: whoever creates or updates an object sets its labels, and so decides whether this webhook judges it", strings.Join(keys, ", "))
			f.Advice = "enforce on every object the rules match, and exempt what must be exempt with matchConditions on request.userInfo or the namespace"
			fs = append(fs, f)
		}
	}
	return fs
}

// selectorKeys are the label keys a selector reads, but safe.
func selectorKeys(s *metav1.LabelSelector, safe string) []string {
	var keys []string
	for k := range s.MatchLabels {
		if k != safe {
			keys = append(keys, k)
		}
	}
	for _, e := range s.MatchExpressions {
		if e.Key != safe && !slices.Contains(keys, e.Key) {
			keys = append(keys, e.Key)
		}
	}
	slices.Sort(keys)
	return keys
}
