package lint

import (
	"errors"
	"fmt"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hookback/hookback/manifests"
)

// The kinds lint reads beside the webhook configurations.
const (
	kindMutating   = "MutatingWebhookConfiguration"
	kindValidating = "ValidatingWebhookConfiguration"
	kindService    = "Service"
	kindNamespace  = "Namespace"
)

// nameLabel is the label the apiserver sets on every namespace to its name
// (immutable): the one label no namespace editor can use to opt out.
const nameLabel = "kubernetes.io/metadata.name"

// Object is one object of the input, as findings name it.
type Object struct {
	Kind, Name, Namespace string
	// Doc is where it was read (Source "" for an object of the cluster).
	Doc manifests.Document
	// ignore maps a rule to the reason written in the object's
	// IgnoreAnnotation.
	ignore map[string]string
}

// Ref is "Kind/name", or "Kind/namespace/name" for a namespaced object.
func (o *Object) Ref() string {
	if o.Namespace != "" {
		return o.Kind + "/" + o.Namespace + "/" + o.Name
	}
	return o.Kind + "/" + o.Name
}

// Hook is one webhook of a configuration, with the apiserver's defaults
// for its apiVersion filled in, so that rules read what the apiserver does.
type Hook struct {
	Config   *Object
	Index    int
	Mutating bool
	admissionregistrationv1.ValidatingWebhook
	Reinvocation admissionregistrationv1.ReinvocationPolicyType
	// sideEffectsSet: the manifest says sideEffects (v1 has no default).
	sideEffectsSet bool
	// raw is the webhook as written, for patches that depend on what is
	// there.
	raw map[string]any
}

// Path is the webhook's field path, "webhooks[2]", followed by sub.
func (h *Hook) Path(sub string) string {
	p := fmt.Sprintf("webhooks[%d]", h.Index)
	if sub != "" {
		p += "." + sub
	}
	return p
}

// pointer is the JSON pointer of the webhook's field, for patches.
func (h *Hook) pointer(sub string) string {
	p := fmt.Sprintf("/webhooks/%d", h.Index)
	if sub != "" {
		p += "/" + sub
	}
	return p
}

func (h *Hook) fails() bool {
	return h.FailurePolicy == nil || *h.FailurePolicy == admissionregistrationv1.Fail
}

func (h *Hook) timeout() int32 { return *h.TimeoutSeconds }

// workload is a pod template the input creates pods from.
type workload struct {
	obj      *Object
	labels   map[string]string
	template map[string]any
	creator  string // the controller's service account that creates its pods
}

// service is a Service of the input.
type service struct {
	obj      *Object
	selector map[string]string
}

// Input is what lint reads: every webhook, and the Services, workloads and
// namespaces that tell whose pods a webhook's Service needs.
type Input struct {
	Hooks      []*Hook
	services   []service
	workloads  []workload
	namespaces map[string]map[string]string
	objects    []*Object
	// policies and bindings are the admission policies (policy.go).
	policies []*Policy
	bindings []*Binding
	// Live is what the cluster tells (ReadCluster); nil offline, and the
	// online rules then check nothing.
	Live *Live
	// Reinvocations are what lint --probe saw your mutating webhooks'
	// server do with its own output (suite.Probe); none offline.
	Reinvocations []Reinvocation
	// now is when certificates are judged.
	now time.Time
	// deadline is the request's, in seconds (Run sets it).
	deadline int32
}

// Read sorts the documents into an Input. A webhook configuration that
// does not decode, or an IgnoreAnnotation that is not RULE=reason with a
// known rule, is an error naming the document.
func Read(docs []manifests.Document) (*Input, error) {
	in := &Input{namespaces: map[string]map[string]string{}, now: time.Now()}
	var errs []error
	for _, d := range docs {
		u := d.Object
		o := &Object{Kind: u.GetKind(), Name: u.GetName(), Namespace: u.GetNamespace(), Doc: d}
		ign, err := parseIgnore(u.GetAnnotations()[IgnoreAnnotation])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", d.Location(), o.Ref(), err))
			continue
		}
		o.ignore = ign
		switch o.Kind {
		case kindMutating, kindValidating:
			hooks, err := readHooks(o, u)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s %s: %w", d.Location(), o.Ref(), err))
				continue
			}
			in.Hooks = append(in.Hooks, hooks...)
		case kindService:
			sel, _, _ := unstructured.NestedStringMap(u.Object, "spec", "selector")
			in.services = append(in.services, service{obj: o, selector: sel})
		case kindNamespace:
			in.namespaces[o.Name] = u.GetLabels()
		case kindVAP, kindVAPB, kindMAP, kindMAPB:
			if err := in.readPolicy(o, u); err != nil {
				errs = append(errs, fmt.Errorf("%s %s: %w", d.Location(), o.Ref(), err))
				continue
			}
		default:
			if w, ok := readWorkload(o, u); ok {
				in.workloads = append(in.workloads, w)
			}
		}
		in.objects = append(in.objects, o)
	}
	return in, errors.Join(errs...)
}

// controllers are the service accounts of kube-controller-manager that
// create each kind's pods.
var controllers = map[string]string{
	"Deployment":  "replicaset-controller",
	"ReplicaSet":  "replicaset-controller",
	"StatefulSet": "statefulset-controller",
	"DaemonSet":   "daemon-set-controller",
	"Job":         "job-controller",
}

func readWorkload(o *Object, u *unstructured.Unstructured) (workload, bool) {
	if o.Kind == "Pod" {
		return workload{obj: o, labels: u.GetLabels(), template: u.Object, creator: ""}, true
	}
	sa, ok := controllers[o.Kind]
	if !ok {
		return workload{}, false
	}
	tmpl, found, _ := unstructured.NestedMap(u.Object, "spec", "template")
	if !found {
		return workload{}, false
	}
	labels, _, _ := unstructured.NestedStringMap(tmpl, "metadata", "labels")
	return workload{obj: o, labels: labels, template: tmpl, creator: sa}, true
}

func readHooks(o *Object, u *unstructured.Unstructured) ([]*Hook, error) {
	v1beta1 := strings.HasSuffix(u.GetAPIVersion(), "/v1beta1")
	raws, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
	var hooks []*Hook
	for i, r := range raws {
		m, ok := r.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("webhooks[%d] is not an object", i)
		}
		// Both kinds' webhooks share every field lint reads but
		// reinvocationPolicy, which is read separately below.
		var wh admissionregistrationv1.MutatingWebhook
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &wh); err != nil {
			return nil, fmt.Errorf("webhooks[%d]: %w", i, err)
		}
		h := &Hook{Config: o, Index: i, Mutating: o.Kind == kindMutating, raw: m, sideEffectsSet: wh.SideEffects != nil,
			ValidatingWebhook: admissionregistrationv1.ValidatingWebhook{
				Name: wh.Name, ClientConfig: wh.ClientConfig, Rules: wh.Rules, FailurePolicy: wh.FailurePolicy,
				MatchPolicy: wh.MatchPolicy, NamespaceSelector: wh.NamespaceSelector, ObjectSelector: wh.ObjectSelector,
				SideEffects: wh.SideEffects, TimeoutSeconds: wh.TimeoutSeconds,
				AdmissionReviewVersions: wh.AdmissionReviewVersions, MatchConditions: wh.MatchConditions,
			}}
		if wh.ReinvocationPolicy != nil {
			h.Reinvocation = *wh.ReinvocationPolicy
		}
		defaults(h, v1beta1)
		hooks = append(hooks, h)
	}
	return hooks, nil
}

// defaults are the apiserver's defaults for each apiVersion
// (k8s.io/kubernetes pkg/apis/admissionregistration/{v1,v1beta1}/defaults.go).
func defaults(h *Hook, v1beta1 bool) {
	fail, exact, equivalent := admissionregistrationv1.Fail, admissionregistrationv1.Exact, admissionregistrationv1.Equivalent
	timeout, all := int32(10), admissionregistrationv1.AllScopes
	if v1beta1 {
		fail, equivalent, timeout = admissionregistrationv1.Ignore, exact, 30
		if h.SideEffects == nil {
			unknown := admissionregistrationv1.SideEffectClassUnknown
			h.SideEffects = &unknown
		}
		if len(h.AdmissionReviewVersions) == 0 {
			h.AdmissionReviewVersions = []string{"v1beta1"}
		}
	}
	if h.FailurePolicy == nil {
		h.FailurePolicy = &fail
	}
	if h.MatchPolicy == nil {
		h.MatchPolicy = &equivalent
	}
	if h.TimeoutSeconds == nil {
		h.TimeoutSeconds = &timeout
	}
	if h.NamespaceSelector == nil {
		h.NamespaceSelector = &metav1.LabelSelector{}
	}
	if h.ObjectSelector == nil {
		h.ObjectSelector = &metav1.LabelSelector{}
	}
	if h.Reinvocation == "" {
		h.Reinvocation = admissionregistrationv1.NeverReinvocationPolicy
	}
	for i := range h.Rules {
		if h.Rules[i].Scope == nil {
			h.Rules[i].Scope = &all
		}
	}
}

// namespaceLabels are a namespace's labels: those of its Namespace in the
// input, else the one the apiserver always sets.
func (in *Input) namespaceLabels(ns string) map[string]string {
	labels := map[string]string{nameLabel: ns}
	for k, v := range in.namespaces[ns] {
		labels[k] = v
	}
	return labels
}

// serviceOf finds the webhook's Service in the input; an object written
// without a namespace (kustomize sets it) matches any.
func (in *Input) serviceOf(h *Hook) *service {
	ref := h.ClientConfig.Service
	if ref == nil {
		return nil
	}
	for i, s := range in.services {
		if s.obj.Name == ref.Name && (s.obj.Namespace == ref.Namespace || s.obj.Namespace == "") {
			return &in.services[i]
		}
	}
	return nil
}

// backends are the workloads whose pods the Service selects.
func (in *Input) backends(s *service, ns string) []workload {
	if len(s.selector) == 0 {
		return nil
	}
	var ws []workload
	for _, w := range in.workloads {
		if w.obj.Namespace != ns && w.obj.Namespace != "" {
			continue
		}
		if subset(s.selector, w.labels) {
			ws = append(ws, w)
		}
	}
	return ws
}

func subset(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}
