package chain

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Names of the observer configurations. The apiserver calls mutating
// configurations sorted by name with a plain string comparison
// (sort.SliceStable ByName in k8s.io/apiserver
// pkg/admission/configuration/mutating_webhook_manager.go). A name is a
// DNS-1123 subdomain: it starts with a lowercase letter or digit and
// holds only those, '-' and '.'. '-' is the smallest of them after the
// first character and '0' the smallest first character, so "0--…" sorts
// before any name but "0", "0-" followed by '-'s, or "0--" followed by a
// smaller tail; 'z' is the largest character, so a run of eight 'z' sorts
// after any name that does not itself start with eight or more.
const (
	firstPrefix      = "0--hookback-chain-first-"
	lastPrefix       = "zzzzzzzz-hookback-chain-last-"
	validatingPrefix = "hookback-chain-validating-"
)

// ConfigurationNames are the observers' configuration names for a session.
func ConfigurationNames(session string) (first, last, validating string) {
	return firstPrefix + session, lastPrefix + session, validatingPrefix + session
}

// ObserverOptions say how to register the observers.
type ObserverOptions struct {
	Session, URL, CABundle string
	// Labels and Annotations are the session's, so that deregistration
	// and the cleanup of a crashed session remove the observers too.
	Labels, Annotations map[string]string
	// TimeoutSeconds is each observer's timeout: short, as they only look.
	TimeoutSeconds int64
}

// ErrNoMutatingWebhook says a session has no mutating webhook: there is
// no chain to tell.
var ErrNoMutatingWebhook = errors.New("chain: the session registers no mutating webhook")

// Observers are the three observer configurations for a session whose
// rendered configurations are objs, and the paths of its mutating
// webhooks. They match the union of the session's mutating webhooks'
// rules; when those webhooks share their namespace selector, object
// selector and matchConditions, the observers carry the same (else none of
// their own). Apply the session's scope to them afterwards like to any of
// its configurations, so that a colleague's request never calls them.
func Observers(objs []*unstructured.Unstructured, o ObserverOptions) ([]*unstructured.Unstructured, map[string]bool, error) {
	var rules []any
	yours := map[string]bool{}
	var shared map[string]any
	first := true
	for _, obj := range objs {
		if obj.GetKind() != "MutatingWebhookConfiguration" || obj.GetLabels()[LabelObserver] != "" {
			continue
		}
		hooks, _, err := unstructured.NestedSlice(obj.Object, "webhooks")
		if err != nil {
			return nil, nil, fmt.Errorf("chain: %s %q: webhooks: %w", obj.GetKind(), obj.GetName(), err)
		}
		for _, h := range hooks {
			hm, ok := h.(map[string]any)
			if !ok {
				continue
			}
			if u, _, _ := unstructured.NestedString(hm, "clientConfig", "url"); u != "" {
				if p, err := url.Parse(u); err == nil {
					yours[p.Path] = true
				}
			}
			rs, _, _ := unstructured.NestedSlice(hm, "rules")
			for _, r := range rs {
				if !containsJSON(rules, r) {
					rules = append(rules, r)
				}
			}
			sel := map[string]any{"namespaceSelector": hm["namespaceSelector"], "objectSelector": hm["objectSelector"], "matchConditions": hm["matchConditions"]}
			switch {
			case first:
				shared, first = sel, false
			case !reflect.DeepEqual(shared, sel):
				shared = map[string]any{}
			}
		}
	}
	if len(yours) == 0 {
		return nil, nil, ErrNoMutatingWebhook
	}
	f, l, v := ConfigurationNames(o.Session)
	out := []*unstructured.Unstructured{
		o.config("MutatingWebhookConfiguration", f, "first", PathFirst, rules, shared, "Never"),
		o.config("MutatingWebhookConfiguration", l, "last", PathLast, rules, shared, "IfNeeded"),
		o.config("ValidatingWebhookConfiguration", v, "validating", PathValidating, rules, shared, ""),
	}
	return out, yours, nil
}

func (o ObserverOptions) config(kind, name, which, path string, rules []any, shared map[string]any, reinvocation string) *unstructured.Unstructured {
	timeout := o.TimeoutSeconds
	if timeout <= 0 {
		timeout = 2
	}
	hook := map[string]any{
		"name":                    which + ".chain.hookback.dev",
		"clientConfig":            map[string]any{"url": strings.TrimSuffix(o.URL, "/") + path, "caBundle": o.CABundle},
		"rules":                   deepCopy(rules),
		"failurePolicy":           "Ignore",
		"sideEffects":             "None",
		"timeoutSeconds":          timeout,
		"admissionReviewVersions": []any{"v1", "v1beta1"},
		"matchPolicy":             "Equivalent",
	}
	if reinvocation != "" {
		hook["reinvocationPolicy"] = reinvocation
	}
	for k, v := range shared {
		if v != nil {
			hook[k] = deepCopy(v)
		}
	}
	labels := map[string]any{LabelObserver: which}
	for k, v := range o.Labels {
		labels[k] = v
	}
	meta := map[string]any{"name": name, "labels": labels}
	if len(o.Annotations) > 0 {
		anns := map[string]any{}
		for k, v := range o.Annotations {
			anns[k] = v
		}
		meta["annotations"] = anns
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": meta, "webhooks": []any{hook}}}
}

func containsJSON(list []any, x any) bool {
	for _, y := range list {
		if reflect.DeepEqual(y, x) {
			return true
		}
	}
	return false
}

// deepCopy copies a JSON-like value (maps, slices, scalars).
func deepCopy[T any](v T) T {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out T
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return out
}
