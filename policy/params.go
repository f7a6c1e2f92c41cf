package policy

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// staticInformer is a param source the dispatcher can read
// (generic.CollectParams uses Lister() and Informer().HasSynced() only):
// the param objects of the files, or the cluster's, listed once.
type staticInformer struct{ lister cache.GenericLister }

var _ informers.GenericInformer = staticInformer{}

func (s staticInformer) Informer() cache.SharedIndexInformer { return syncedInformer{} }
func (s staticInformer) Lister() cache.GenericLister         { return s.lister }

// syncedInformer is always synced: its objects were all read before the
// first evaluation. Only HasSynced is ever called on it.
type syncedInformer struct{ cache.SharedIndexInformer }

func (syncedInformer) HasSynced() bool { return true }

// paramSource is the informer and scope of one paramKind, or the
// configuration error the apiserver would give the policy.
type paramSource struct {
	informer informers.GenericInformer
	scope    meta.RESTScope
	err      error
}

// params resolves a policy's paramKind. The files' objects of that kind
// win; otherwise the cluster's are listed (once per kind). With neither, a
// kind the cluster does not know is the apiserver's configuration error,
// and without a cluster an empty namespaced source (no param found).
func (e *Engine) params(ctx context.Context, pk *admissionregistrationv1.ParamKind) paramSource {
	if pk == nil {
		return paramSource{}
	}
	gv, err := schema.ParseGroupVersion(pk.APIVersion)
	if err != nil {
		return paramSource{err: fmt.Errorf("failed to parse paramKind APIVersion: %w", err)}
	}
	gvk := gv.WithKind(pk.Kind)
	if ps, ok := e.paramCache[gvk]; ok {
		return ps
	}
	ps := e.resolveParams(ctx, gvk)
	e.paramCache[gvk] = ps
	return ps
}

func (e *Engine) resolveParams(ctx context.Context, gvk schema.GroupVersionKind) paramSource {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	var mapping *meta.RESTMapping
	if e.opts.Mapper != nil {
		m, err := e.opts.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil && !e.hasObjects(gvk) {
			return paramSource{err: fmt.Errorf("failed to find resource referenced by paramKind: '%v'", gvk)}
		}
		mapping = m
	}
	var scope meta.RESTScope = meta.RESTScopeNamespace
	if mapping != nil {
		scope = mapping.Scope
	}
	resource := schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}
	if mapping != nil {
		resource = mapping.Resource.GroupResource()
	}
	if e.hasObjects(gvk) {
		for _, o := range e.set.Objects {
			if o.GroupVersionKind() == gvk {
				if mapping == nil && o.GetNamespace() == "" {
					scope = meta.RESTScopeRoot
				}
				_ = indexer.Add(o)
			}
		}
		return paramSource{informer: staticInformer{cache.NewGenericLister(indexer, resource)}, scope: scope}
	}
	if mapping != nil && e.opts.Dynamic != nil {
		list, err := e.opts.Dynamic.Resource(mapping.Resource).List(ctx, metav1.ListOptions{})
		if err != nil {
			return paramSource{err: fmt.Errorf("list params %s: %w", mapping.Resource, err)}
		}
		for i := range list.Items {
			_ = indexer.Add(&list.Items[i])
		}
	}
	return paramSource{informer: staticInformer{cache.NewGenericLister(indexer, resource)}, scope: scope}
}

func (e *Engine) hasObjects(gvk schema.GroupVersionKind) bool {
	for _, o := range e.set.Objects {
		if o.GroupVersionKind() == gvk {
			return true
		}
	}
	return false
}

// paramName names a param object for the result.
func paramName(o any) string {
	u, ok := o.(*unstructured.Unstructured)
	if !ok || u == nil {
		if m, ok := o.(metav1.Object); ok && m != nil {
			return joinName(m.GetNamespace(), m.GetName())
		}
		return ""
	}
	return joinName(u.GetNamespace(), u.GetName())
}

func joinName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}
