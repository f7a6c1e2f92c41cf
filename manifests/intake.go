package manifests

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/hookback/hookback/internal/errkind"
	"github.com/hookback/hookback/rbac"
	"github.com/hookback/hookback/registration"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// CRD kinds Read keeps.
const (
	KindCRD         = "CustomResourceDefinition"
	apiextensionsV1 = "apiextensions.k8s.io/v1"
)

// Manifests is what Read found in the user's manifests: what
// hookback registers (webhook configurations), what it installs or
// redirects (CRDs), and what it leaves out (everything else, counted).
type Set struct {
	// Webhooks are the Mutating- and ValidatingWebhookConfigurations, as
	// read (any apiVersion: Rewrite refuses all but v1, by name).
	Webhooks []Document
	// CRDs are the apiextensions.k8s.io/v1 CustomResourceDefinitions, as
	// read, in input order, each with the cert-manager CA-injection
	// annotations removed (hookback sets the caBundle itself). They belong
	// to the caller: Read keeps no reference.
	CRDs []*unstructured.Unstructured
	// CRDSources is the Document of each CRD (same index), for messages.
	CRDSources []Document
	// Skipped counts the other objects by "apiVersion Kind" (a v1beta1
	// CRD is skipped too: no apiserver of the supported versions serves it).
	Skipped map[string]int
}

// Read reads every path (see Load; a directory holding a
// kustomization is rendered as `kubectl kustomize` would) and sorts the
// objects into webhook configurations, CRDs and the rest.
func Read(paths []string, stdin io.Reader) (*Set, error) {
	docs, err := Load(paths, stdin)
	if err != nil {
		return nil, err
	}
	return Sort(docs), nil
}

// Sort sorts documents as Read does.
func Sort(docs []Document) *Set {
	m := &Set{Skipped: map[string]int{}}
	for _, d := range docs {
		o := d.Object
		switch kind := o.GetKind(); {
		case kind == registration.KindMutatingHook || kind == registration.KindValidatingHook:
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
func (m *Set) SkippedSummary() string {
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
	for _, a := range registration.CAInjectors {
		delete(ann, a)
	}
	o.SetAnnotations(ann)
}

// ConversionTarget reads a CRD's spec.conversion: ok is false unless its
// strategy is Webhook; the Route (without Webhooks) is the clientConfig's
// target, service or url, read as a webhook's clientConfig is, so that
// `--upstream NAMESPACE/SERVICE=URL` maps both alike.
func ConversionTarget(crd *unstructured.Unstructured) (r registration.Route, ok bool, err error) {
	strategy, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy")
	if strategy != "Webhook" {
		return registration.Route{}, false, nil
	}
	wh, found, err := unstructured.NestedMap(crd.Object, "spec", "conversion", "webhook")
	if err != nil || !found {
		return registration.Route{}, true, fmt.Errorf("CustomResourceDefinition %q: conversion strategy Webhook without spec.conversion.webhook", crd.GetName())
	}
	r, err = hookTarget(wh)
	if err != nil {
		return registration.Route{}, true, fmt.Errorf("CustomResourceDefinition %q conversion webhook: %w", crd.GetName(), err)
	}
	return r, true, nil
}

// Services lists the in-cluster Services the manifests send requests to,
// as NAMESPACE/NAME, sorted, once each: those of the webhooks and of the
// CRDs' conversion webhooks.
func (m *Set) Services() []string {
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
func CRDPermissions() []rbac.Permission {
	var ps []rbac.Permission
	for _, verb := range []string{"get", "list", "create", "patch"} {
		ps = append(ps, rbac.Permission{Verb: verb, Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions",
			Why: "install missing CRDs, redirect and restore conversion webhooks", Part: PartCRDs})
	}
	return ps
}

// CRDsOf reads the intake's CRDs. A CRD whose conversion webhook names no
// usable target is an error naming its document.
func CRDsOf(m *Set) ([]registration.CRD, error) {
	var crds []registration.CRD
	var errs []error
	for i, o := range m.CRDs {
		c := registration.CRD{Object: o, Source: m.CRDSources[i].Location(), Name: o.GetName()}
		r, ok, err := ConversionTarget(o)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.Source, err))
			continue
		}
		if ok {
			r.Path, r.Webhooks = registration.ConversionPath(c.Name, r.UpstreamPath), []string{c.Name}
			c.Conversion = &r
		}
		crds = append(crds, c)
	}
	if len(errs) > 0 {
		return nil, errkind.New(ErrInvalid, errors.Join(errs...))
	}
	return crds, nil
}
