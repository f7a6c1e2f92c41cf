package session

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"

	"github.com/hookback/hookback/kubeconfig"
)

// objectProbes send each of objs as a dry-run create in the version it
// names (drill --object): the requests of your own kinds that matter, a
// CRD's objects, or a resource in another of its served versions (which a
// matchPolicy Exact webhook never sees). Each goes to its namespace, else
// the scope's first, else default; a cluster-scoped kind to none.
func objectProbes(kc *kubeconfig.Config, cs kubernetes.Interface, objs []*unstructured.Unstructured, namespaces []string) ([]drillProbe, error) {
	if len(objs) == 0 {
		return nil, nil
	}
	dyn, err := kc.Dynamic(drillRequestTimeout)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery()))
	def := metav1.NamespaceDefault
	if len(namespaces) > 0 {
		def = namespaces[0]
	}
	var probes []drillProbe
	for _, o := range objs {
		ns := o.GetNamespace()
		if ns == "" {
			ns = def
		}
		gvk := o.GroupVersionKind()
		probes = append(probes, drillProbe{name: gvk.Kind + " create (" + o.GetAPIVersion() + ")", namespace: ns,
			send1: func(ctx context.Context, _ kubernetes.Interface) error {
				return createDryRun(ctx, dyn, mapper, o.DeepCopy(), ns)
			}})
	}
	return probes, nil
}

// createDryRun creates o (dry run) through the resource mapper's mapping of
// its kind and version.
func createDryRun(ctx context.Context, dyn dynamic.Interface, mapper meta.RESTMapper, o *unstructured.Unstructured, ns string) error {
	gvk := o.GroupVersionKind()
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("the cluster serves no %s: %w", gvk, err)
	}
	var r dynamic.ResourceInterface = dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		o.SetNamespace(ns)
		r = dyn.Resource(m.Resource).Namespace(ns)
	} else {
		o.SetNamespace("")
	}
	if o.GetName() == "" && o.GetGenerateName() == "" {
		o.SetGenerateName("hookback-drill-")
	}
	_, err = r.Create(ctx, o, metav1.CreateOptions{DryRun: dryRun})
	return err
}
