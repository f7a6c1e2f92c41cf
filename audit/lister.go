package audit

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/pager"

	"github.com/hookback/hookback/conversion"
)

// ClusterLister reads a cluster through discovery and paged lists.
type ClusterLister struct {
	Discovery discovery.DiscoveryInterface
	Dynamic   dynamic.Interface
	// PageSize is the list chunk (ListOptions.Limit); zero means 500.
	PageSize int64
}

var _ Lister = (*ClusterLister)(nil)

// Resources implements Lister: every served resource and its status
// subresource (the one subresource whose objects are the parent's).
func (l *ClusterLister) Resources(context.Context) ([]APIResource, error) {
	groups, lists, err := l.Discovery.ServerGroupsAndResources()
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	preferred := map[string]string{}
	for _, g := range groups {
		preferred[g.Name] = g.PreferredVersion.Version
	}
	var out []APIResource
	for _, list := range lists {
		gv, perr := schema.ParseGroupVersion(list.GroupVersion)
		if perr != nil {
			continue
		}
		parents := map[string]metav1.APIResource{}
		for _, r := range list.APIResources {
			if !strings.Contains(r.Name, "/") {
				parents[r.Name] = r
			}
		}
		for _, r := range list.APIResources {
			res, sub, _ := strings.Cut(r.Name, "/")
			parent, ok := parents[res]
			if !ok || (sub != "" && sub != "status") {
				continue
			}
			out = append(out, APIResource{
				GVR:         gv.WithResource(res),
				Kind:        gv.WithKind(parent.Kind),
				Subresource: sub,
				Namespaced:  parent.Namespaced,
				Listable:    slices.Contains(parent.Verbs, "list"),
				Preferred:   preferred[gv.Group] == gv.Version,
			})
		}
	}
	return out, err
}

// List implements Lister, one page of PageSize at a time.
func (l *ClusterLister) List(ctx context.Context, gvr schema.GroupVersionResource, each func(map[string]any) error) error {
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return l.Dynamic.Resource(gvr).List(ctx, opts)
	})
	p.PageSize = l.PageSize
	if p.PageSize == 0 {
		p.PageSize = 500
	}
	return p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("list %s: unexpected item %T", gvr.Resource, obj)
		}
		return each(u.Object)
	})
}

var _ CRDReader = (*ClusterLister)(nil)

// crdResource is apiextensions.k8s.io/v1 customresourcedefinitions.
var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// CRD implements CRDReader.
func (l *ClusterLister) CRD(ctx context.Context, name string) (CRDInfo, bool, error) {
	u, err := l.Dynamic.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return CRDInfo{}, false, nil
	}
	if err != nil {
		return CRDInfo{}, false, err
	}
	return crdInfo(u.Object), true, nil
}

// crdInfo reads a CRD: its storage and served versions, and the first
// ConversionReview version of its webhook that hookback speaks (v1 when
// none is).
func crdInfo(crd map[string]any) CRDInfo {
	str := func(fields ...string) string {
		s, _, _ := unstructured.NestedString(crd, fields...)
		return s
	}
	info := CRDInfo{Group: str("spec", "group"), Resource: str("spec", "names", "plural"), Namespaced: str("spec", "scope") == "Namespaced",
		ReviewVersion: conversion.V1}
	versions, _, _ := unstructured.NestedSlice(crd, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		name, _ := m["name"].(string)
		if storage, _ := m["storage"].(bool); storage {
			info.Storage = name
		}
		if served, _ := m["served"].(bool); served {
			info.Served = append(info.Served, name)
		}
	}
	reviews, _, _ := unstructured.NestedStringSlice(crd, "spec", "conversion", "webhook", "conversionReviewVersions")
	for _, v := range reviews {
		if v == "v1" || v == "v1beta1" {
			info.ReviewVersion = "apiextensions.k8s.io/" + v
			break
		}
	}
	return info
}
