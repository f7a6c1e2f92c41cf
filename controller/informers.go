package controller

import (
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// lastAppliedAnnotation is written by `kubectl apply` and holds a full copy of
// the object as last applied: often the largest field of a pod, and nothing
// in hookback reads it.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// NewInformerFactory returns the one informer factory shared by all controllers
// and by the webhooks' caches. Every object it caches goes through
// StripUnusedFields, so memory stays low with thousands of pods.
func NewInformerFactory(cs kubernetes.Interface, resync time.Duration) informers.SharedInformerFactory {
	return informers.NewSharedInformerFactoryWithOptions(cs, resync,
		informers.WithTransform(StripUnusedFields))
}

// StripUnusedFields is the informers' transform. It drops managedFields and
// the last-applied-configuration annotation and keeps everything else
// (labels, other annotations, ownerReferences, spec, status), because the
// controllers and webhooks read many different fields of the cached objects.
//
// It edits the object in place, which client-go allows because a transform
// sees a freshly decoded object before anyone else. It only writes when there
// is something to drop, so running it again on an already-cached object (for
// example the one inside a cache.DeletedFinalStateUnknown tombstone) changes
// nothing and cannot race with readers of the cache.
func StripUnusedFields(obj any) (any, error) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		inner, err := StripUnusedFields(tomb.Obj)
		if err != nil {
			return nil, err
		}
		tomb.Obj = inner
		return tomb, nil
	}
	if v := reflect.ValueOf(obj); !v.IsValid() || (v.Kind() == reflect.Pointer && v.IsNil()) {
		return obj, nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		// Not an object with metadata (a list, a status...): nothing to strip.
		return obj, nil
	}
	if m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	if ann := m.GetAnnotations(); ann != nil {
		if _, ok := ann[lastAppliedAnnotation]; ok {
			delete(ann, lastAppliedAnnotation)
		}
	}
	return obj, nil
}
