package chain

import (
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// InformerCatalog keeps the cluster's configurations, policies and
// namespaces in informers of factory (start the factory after). A list the
// session may not read stays empty: the view then names fewer candidates.
// The catalog is built again only after an informer saw a change, not for
// every view.
type InformerCatalog struct {
	f       informers.SharedInformerFactory
	changed atomic.Bool
	mu      sync.Mutex
	cached  Catalog
}

// NewInformerCatalog registers the informers it reads on f.
func NewInformerCatalog(f informers.SharedInformerFactory) *InformerCatalog {
	c := &InformerCatalog{f: f}
	c.changed.Store(true)
	mark := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.changed.Store(true) },
		UpdateFunc: func(any, any) { c.changed.Store(true) },
		DeleteFunc: func(any) { c.changed.Store(true) },
	}
	a := f.Admissionregistration().V1()
	for _, inf := range []cache.SharedIndexInformer{
		a.MutatingWebhookConfigurations().Informer(), a.ValidatingWebhookConfigurations().Informer(),
		a.MutatingAdmissionPolicies().Informer(), a.MutatingAdmissionPolicyBindings().Informer(),
		a.ValidatingAdmissionPolicies().Informer(), a.ValidatingAdmissionPolicyBindings().Informer(),
	} {
		_, _ = inf.AddEventHandler(mark)
	}
	f.Core().V1().Namespaces().Informer()
	return c
}

// Catalog is what the informers hold now.
func (c *InformerCatalog) Catalog() Catalog {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.changed.Swap(false) {
		return c.cached
	}
	a := c.f.Admissionregistration().V1()
	mw, _ := a.MutatingWebhookConfigurations().Lister().List(labels.Everything())
	vw, _ := a.ValidatingWebhookConfigurations().Lister().List(labels.Everything())
	mp, _ := a.MutatingAdmissionPolicies().Lister().List(labels.Everything())
	mb, _ := a.MutatingAdmissionPolicyBindings().Lister().List(labels.Everything())
	vp, _ := a.ValidatingAdmissionPolicies().Lister().List(labels.Everything())
	vb, _ := a.ValidatingAdmissionPolicyBindings().Lister().List(labels.Everything())
	c.cached = NewCatalog(deref(mw), deref(vw), deref(mp), deref(mb), deref(vp), deref(vb))
	return c.cached
}

// NamespaceLabels are the namespace's labels; nil when not known.
func (c *InformerCatalog) NamespaceLabels(ns string) map[string]string {
	n, err := c.f.Core().V1().Namespaces().Lister().Get(ns)
	if err != nil {
		return nil
	}
	return n.Labels
}

func deref[T any](in []*T) []T {
	out := make([]T, 0, len(in))
	for _, x := range in {
		out = append(out, *x)
	}
	return out
}
