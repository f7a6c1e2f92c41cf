package suite

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes/scheme"
)

// probeName and probeNamespace name every minimal sample.
const (
	probeName      = "hookback-probe"
	probeNamespace = "default"
)

// probeSamples builds a minimal object of each resource w's rules name
// for CREATE (or, failing that, UPDATE, sent with the object as its old
// object too): for pods, the pod hookback drill creates; for others,
// apiVersion, kind and a name. A wildcard group or version stands for the
// core group's v1, a wildcard resource there for pods; subresources, and
// versions of other groups given as a wildcard, are left out.
func probeSamples(w *Webhook) ([]sample, error) {
	seen := map[schema.GroupVersionResource]bool{}
	var out []sample
	for _, r := range w.Mutating.Rules {
		op := probeOp(r.Operations)
		if op == "" {
			continue
		}
		for _, gvr := range ruleResources(r.Rule) {
			if seen[gvr] {
				continue
			}
			seen[gvr] = true
			in, err := probeInput(gvr, op, r.Scope)
			if err != nil {
				return nil, err
			}
			out = append(out, sample{name: fmt.Sprintf("%s %s (a minimal object)", gvr.Resource, op), in: in})
		}
	}
	return out, nil
}

// probeOp is the operation a sample is sent as: CREATE when the rule
// takes it, else UPDATE, else none.
func probeOp(ops []admissionregistrationv1.OperationType) string {
	switch {
	case slices.Contains(ops, admissionregistrationv1.OperationAll), slices.Contains(ops, admissionregistrationv1.Create):
		return "CREATE"
	case slices.Contains(ops, admissionregistrationv1.Update):
		return "UPDATE"
	}
	return ""
}

// ruleResources are the resources a rule names that a sample can be
// built of.
func ruleResources(r admissionregistrationv1.Rule) []schema.GroupVersionResource {
	var out []schema.GroupVersionResource
	for _, g := range r.APIGroups {
		g = strings.ReplaceAll(g, "*", "")
		for _, v := range r.APIVersions {
			if v == "*" && g != "" {
				continue
			}
			if v == "*" {
				v = "v1"
			}
			for _, res := range r.Resources {
				if strings.Contains(res, "/") || res == "*" && g != "" {
					continue
				}
				if res == "*" {
					res = "pods"
				}
				out = append(out, schema.GroupVersionResource{Group: g, Version: v, Resource: res})
			}
		}
	}
	return out
}

// kindFor is the kind client-go's scheme knows for gvr, else the
// resource's singular, capitalized (a CRD's plural usually is).
func kindFor(gvr schema.GroupVersionResource) string {
	for gvk := range scheme.Scheme.AllKnownTypes() {
		if gvk.Group != gvr.Group || gvk.Version != gvr.Version {
			continue
		}
		if plural, _ := meta.UnsafeGuessKindToResource(gvk); plural.Resource == gvr.Resource {
			return gvk.Kind
		}
	}
	singular := strings.TrimSuffix(gvr.Resource, "s")
	if singular == "" {
		return gvr.Resource
	}
	return strings.ToUpper(singular[:1]) + singular[1:]
}

// probeInput is the review of a minimal object of gvr, as the apiserver
// would send it for op.
func probeInput(gvr schema.GroupVersionResource, op string, scope *admissionregistrationv1.ScopeType) (*input, error) {
	gvk := gvr.GroupVersion().WithKind(kindFor(gvr))
	ns := probeNamespace
	if scope != nil && *scope == admissionregistrationv1.ClusterScope {
		ns = ""
	}
	md := map[string]any{"name": probeName}
	if ns != "" {
		md["namespace"] = ns
	}
	obj := map[string]any{"apiVersion": gvk.GroupVersion().String(), "kind": gvk.Kind, "metadata": md}
	if gvr.Group == "" && gvr.Resource == "pods" {
		obj["spec"] = map[string]any{"containers": []any{map[string]any{"name": "probe", "image": "registry.k8s.io/pause:3.10"}}}
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	kind, res := metav1.GroupVersionKind(gvk), metav1.GroupVersionResource(gvr)
	dry := false
	req := admissionv1.AdmissionRequest{
		UID: uuid.NewUUID(), Kind: kind, Resource: res, RequestKind: &kind, RequestResource: &res,
		Name: probeName, Namespace: ns, Operation: admissionv1.Operation(op), DryRun: &dry,
		UserInfo: authenticationv1.UserInfo{Username: defaultUser}, Object: runtime.RawExtension{Raw: raw},
	}
	if op == "UPDATE" {
		req.OldObject = runtime.RawExtension{Raw: raw}
	}
	opts, _ := json.Marshal(map[string]string{"kind": optionsKinds[op], "apiVersion": "meta.k8s.io/v1"})
	req.Options = runtime.RawExtension{Raw: opts}
	return &input{req: req}, nil
}
