package controllers

import (
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// StripUnusedFields is the informers' transform. A Pod is replaced by
// SlimPod: a whitelist of what the built-ins read. Other objects lose
// managedFields and the last-applied-configuration annotation.
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
	if pod, ok := obj.(*corev1.Pod); ok {
		return SlimPod(pod), nil
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

// SlimPod is what the pod cache keeps of a pod: the whitelist of every field
// a built-in reads from a cached pod, and nothing else (a pod with two
// containers and a kubelet's status is ten times larger). Readers, and what
// they read:
//   - identity, for patches and Events (webhooks, controllers): name,
//     namespace, uid, resourceVersion; deletionTimestamp;
//   - pod-name-label: the PodNameLabel label, the AddPodNameLabelAnnotation
//     annotation;
//   - exec-rbac: the ExecAgentAnnotation annotation, spec.serviceAccountName,
//     status.phase;
//   - pod-eviction: spec.nodeName.
//
// Other labels and annotations are dropped too. TestSlimPodKeepsWhatReadersRead
// fails when a reader's answer depends on anything dropped; a reader of a new
// field adds it here first. Running it on a slim pod returns an equal pod.
func SlimPod(p *corev1.Pod) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta: p.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion,
			DeletionTimestamp: p.DeletionTimestamp,
			Labels:            keep(p.Labels, PodNameLabel),
			Annotations:       keep(p.Annotations, AddPodNameLabelAnnotation, ExecAgentAnnotation),
		},
		Spec:   corev1.PodSpec{ServiceAccountName: p.Spec.ServiceAccountName, NodeName: p.Spec.NodeName},
		Status: corev1.PodStatus{Phase: p.Status.Phase},
	}
}

// keep copies the given keys of m, or returns nil when none is set.
func keep(m map[string]string, keys ...string) map[string]string {
	var out map[string]string
	for _, k := range keys {
		if v, ok := m[k]; ok {
			if out == nil {
				out = make(map[string]string, len(keys))
			}
			out[k] = v
		}
	}
	return out
}
