package controllers

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// fatPod carries everything the transform must drop and everything the
// controllers and webhooks read.
func fatPod() *corev1.Pod {
	ctrl := true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "p",
			Labels:      map[string]string{"app": "x"},
			Annotations: map[string]string{lastAppliedAnnotation: `{"big":"blob"}`, ExecAgentAnnotation: "true"},
			OwnerReferences: []metav1.OwnerReference{
				{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "u", Controller: &ctrl},
			},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}},
		},
		Spec: corev1.PodSpec{
			ServiceAccountName: "sa", NodeName: "node-1",
			Containers: []corev1.Container{{Name: "c", Image: "img"}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// stripped is fatPod as the cache keeps it: SlimPod's whitelist.
func stripped() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Annotations: map[string]string{ExecAgentAnnotation: "true"}},
		Spec:       corev1.PodSpec{ServiceAccountName: "sa", NodeName: "node-1"},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// fatConfigMap stands for every other cached kind: only managedFields and
// the last-applied annotation go.
func fatConfigMap() *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", Labels: map[string]string{"app": "x"},
			Annotations:   map[string]string{lastAppliedAnnotation: `{"big":"blob"}`, "keep": "me"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Data: map[string]string{"k": "v"},
	}
}

func TestStripUnusedFields(t *testing.T) {
	var nilPod *corev1.Pod
	tests := []struct {
		name string
		in   any
		want any
	}{
		{name: "pod", in: fatPod(), want: stripped()},
		{name: "already stripped", in: stripped(), want: stripped()},
		{name: "other kinds keep all but managedFields and last-applied", in: fatConfigMap(), want: &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", Labels: map[string]string{"app": "x"}, Annotations: map[string]string{"keep": "me"}},
			Data:       map[string]string{"k": "v"}}},
		{name: "no annotations", in: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, want: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}},
		{
			name: "tombstone",
			in:   cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: fatPod()},
			want: cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: stripped()},
		},
		{
			name: "tombstone without object",
			in:   cache.DeletedFinalStateUnknown{Key: "ns/p"},
			want: cache.DeletedFinalStateUnknown{Key: "ns/p"},
		},
		{name: "nil", in: nil, want: nil},
		{name: "typed nil", in: nilPod, want: nilPod},
		{name: "not an object", in: "text", want: "text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := StripUnusedFields(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("got %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

// The shared factory's caches hold stripped objects that still have what the
// controllers and webhooks read.
func TestInformerFactoryStrips(t *testing.T) {
	cs := fake.NewClientset(fatPod())
	f := NewInformerFactory(cs, 0)
	lister := f.Core().V1().Pods().Lister()
	ctx, cancel := context.WithCancel(t.Context())
	f.Start(ctx.Done())
	defer f.Shutdown() // runs after cancel: Shutdown waits for the stopped informers
	defer cancel()
	var got *corev1.Pod
	eventually(t, "pod in cache", func(context.Context) (bool, error) {
		p, err := lister.Pods("ns").Get("p")
		got = p
		return err == nil, nil
	})
	if !equality.Semantic.DeepEqual(got, stripped()) {
		t.Errorf("cached pod = %#v\nwant %#v", got, stripped())
	}
}
