package audit

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/pager"
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
