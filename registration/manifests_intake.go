package registration

import (
	"fmt"
	"github.com/hookback/hookback/admission"
	"io"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// CRD kinds ReadManifests keeps.
const (
	KindCRD         = "CustomResourceDefinition"
	apiextensionsV1 = "apiextensions.k8s.io/v1"
)

// Manifests is what ReadManifests found in the user's manifests: what
// hookback registers (webhook configurations), what it installs or
// redirects (CRDs), and what it leaves out (everything else, counted).
type Manifests struct {
	// Webhooks are the Mutating- and ValidatingWebhookConfigurations, as
	// read (any apiVersion: RewriteManifests refuses all but v1, by name).
	Webhooks []Document
	// CRDs are the apiextensions.k8s.io/v1 CustomResourceDefinitions, as
	// read, in input order, each with the cert-manager CA-injection
	// annotations removed (hookback sets the caBundle itself). They belong
	// to the caller: ReadManifests keeps no reference.
	CRDs []*unstructured.Unstructured
	// CRDSources is the Document of each CRD (same index), for messages.
	CRDSources []Document
	// Skipped counts the other objects by "apiVersion Kind" (a v1beta1
	// CRD is skipped too: no apiserver of the supported versions serves it).
	Skipped map[string]int
}

// ReadManifests reads every path (see LoadManifests; a directory holding a
// kustomization is rendered as `kubectl kustomize` would) and sorts the
// objects into webhook configurations, CRDs and the rest.
func ReadManifests(paths []string, stdin io.Reader) (*Manifests, error) {
	docs, err := LoadManifests(paths, stdin)
	if err != nil {
		return nil, err
	}
	return SortManifests(docs), nil
}

// SortManifests sorts documents as ReadManifests does.
func SortManifests(docs []Document) *Manifests {
	m := &Manifests{Skipped: map[string]int{}}
	for _, d := range docs {
		o := d.Object
		switch kind := o.GetKind(); {
		case kind == KindMutatingHook || kind == KindValidatingHook:
			m.Webhooks = append(m.Webhooks, d)
		case kind == KindCRD && o.GetAPIVersion() == apiextensionsV1:
			crd := o.DeepCopy()
			removeCAInjectors(crd)
			m.CRDs = append(m.CRDs, crd)
			m.CRDSources = append(m.CRDSources, d)
		default:
			m.Skipped[strings.TrimSpace(o.GetAPIVersion()+" "+kind)]++
		}
	}
	return m
}

// SkippedSummary is the one line naming the kinds left out, with counts,
// sorted: "apps/v1 Deployment (1), v1 Service (2)"; "" when none were.
func (m *Manifests) SkippedSummary() string {
	kinds := slices.Sorted(maps.Keys(m.Skipped))
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s (%d)", k, m.Skipped[k]))
	}
	return strings.Join(parts, ", ")
}

func removeCAInjectors(o *unstructured.Unstructured) {
	ann := o.GetAnnotations()
	if ann == nil {
		return
	}
	for _, a := range caInjectors {
		delete(ann, a)
	}
	o.SetAnnotations(ann)
}

// ConversionTarget reads a CRD's spec.conversion: ok is false unless its
// strategy is Webhook; the Route (without Webhooks) is the clientConfig's
// target, service or url, read as a webhook's clientConfig is, so that
// `--upstream NAMESPACE/SERVICE=URL` maps both alike.
func ConversionTarget(crd *unstructured.Unstructured) (r Route, ok bool, err error) {
	strategy, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy")
	if strategy != "Webhook" {
		return Route{}, false, nil
	}
	wh, found, err := unstructured.NestedMap(crd.Object, "spec", "conversion", "webhook")
	if err != nil || !found {
		return Route{}, true, fmt.Errorf("CustomResourceDefinition %q: conversion strategy Webhook without spec.conversion.webhook", crd.GetName())
	}
	r, err = hookTarget(wh)
	if err != nil {
		return Route{}, true, fmt.Errorf("CustomResourceDefinition %q conversion webhook: %w", crd.GetName(), err)
	}
	return r, true, nil
}

// Services lists the in-cluster Services the manifests send requests to,
// as NAMESPACE/NAME, sorted, once each: those of the webhooks and of the
// CRDs' conversion webhooks.
func (m *Manifests) Services() []string {
	set := map[string]bool{}
	for _, d := range m.Webhooks {
		hooks, _, _ := unstructured.NestedSlice(d.Object.Object, "webhooks")
		for _, h := range hooks {
			hm, _ := h.(map[string]any)
			if r, err := hookTarget(hm); err == nil && r.Service != nil {
				set[r.Service.Key()] = true
			}
		}
	}
	for _, crd := range m.CRDs {
		if r, ok, err := ConversionTarget(crd); ok && err == nil && r.Service != nil {
			set[r.Service.Key()] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// PartCRDs is the Part of the permissions the manifests' CRDs need.
const PartCRDs = "crds"

// CRDPermissions is what the manifests' CRDs need: reading them, installing
// a missing one (server-side apply creates), and pointing a conversion
// webhook at hookback and back (patch), also after a crash (list).
func CRDPermissions() []admission.Permission {
	var ps []admission.Permission
	for _, verb := range []string{"get", "list", "create", "patch"} {
		ps = append(ps, admission.Permission{Verb: verb, Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions",
			Why: "install missing CRDs, redirect and restore conversion webhooks", Part: PartCRDs})
	}
	return ps
}
