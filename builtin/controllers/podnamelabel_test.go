package controllers

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
)

var podsGR = schema.GroupResource{Resource: "pods"}

func failPatch(err error) func(k8stesting.Action) (bool, runtime.Object, error) {
	return func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, err }
}

func TestPodNameLabelReconcile(t *testing.T) {
	on := annotated(AddPodNameLabelAnnotation, "true")
	long := strings.Repeat("x", 70)
	const (
		set    = `{"metadata":{"labels":{"padok.fr/pod-name":"web-abc"}}}`
		remove = `[{"op":"test","path":"/metadata/labels/padok.fr~1pod-name","value":"web-abc"},` +
			`{"op":"remove","path":"/metadata/labels/padok.fr~1pod-name"}]`
	)
	tests := []struct {
		name      string
		pod       *corev1.Pod // in the cache and the apiserver; nil: neither
		live      *corev1.Pod // the apiserver's pod when it differs from the cache
		patchErr  error       // the apiserver's answer to the patch
		wantPatch string      // expected patch body; "" means no write at all
		wantErr   bool        // requeued
		wantEvent string      // substring of the one expected Event
	}{
		{name: "annotated pod gets the label", pod: newPod("ns", "web-abc", on), wantPatch: set},
		{name: "wrong value is fixed", pod: newPod("ns", "web-abc", on, labelled(PodNameLabel, "old")), wantPatch: set},
		{name: "already labelled: no write", pod: newPod("ns", "web-abc", on, labelled(PodNameLabel, "web-abc"))},
		{name: "annotation gone: label removed", pod: newPod("ns", "web-abc", labelled(PodNameLabel, "web-abc")),
			wantPatch: remove},
		{name: "annotation false: label removed", pod: newPod("ns", "web-abc", annotated(AddPodNameLabelAnnotation, "false"), labelled(PodNameLabel, "web-abc")),
			wantPatch: remove},
		{name: "not annotated, user value: kept, no write", pod: newPod("ns", "web-abc", labelled(PodNameLabel, "frontend"))},
		{name: "annotation false, user value: kept, no write",
			pod: newPod("ns", "web-abc", annotated(AddPodNameLabelAnnotation, "false"), labelled(PodNameLabel, "frontend"))},
		{name: "not annotated, empty value: kept, no write", pod: newPod("ns", "web-abc", labelled(PodNameLabel, ""))},
		{name: "user value set after the cache read: test fails, kept, no Event",
			pod:  newPod("ns", "web-abc", labelled(PodNameLabel, "web-abc")),
			live: newPod("ns", "web-abc", labelled(PodNameLabel, "frontend")),
			// What the apiserver answers when a JSON patch test fails.
			patchErr:  apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "web-abc", nil),
			wantPatch: remove},
		{name: "removal refused by validation: Event",
			pod:       newPod("ns", "web-abc", labelled(PodNameLabel, "web-abc")),
			patchErr:  apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "web-abc", nil),
			wantPatch: remove, wantEvent: "Warning LabelRefused"},
		{name: "not annotated, no label: no write", pod: newPod("ns", "web-abc", labelled("app", "web"))},
		{name: "pod gone from cache: done", pod: nil},
		{name: "pod deleted before the patch: done", pod: newPod("ns", "web-abc", on),
			patchErr: apierrors.NewNotFound(podsGR, "web-abc"), wantPatch: set},
		{name: "conflict is requeued", pod: newPod("ns", "web-abc", on),
			patchErr: apierrors.NewConflict(podsGR, "web-abc", nil), wantPatch: set, wantErr: true},
		{name: "server error is requeued", pod: newPod("ns", "web-abc", on),
			patchErr: apierrors.NewInternalError(errors.New("etcd timeout")), wantPatch: set, wantErr: true},
		{name: "forbidden records an Event", pod: newPod("ns", "web-abc", on),
			patchErr:  apierrors.NewForbidden(podsGR, "web-abc", nil),
			wantPatch: set, wantEvent: "Warning LabelRefused"},
		{name: "name too long for a label: Event, no write", pod: newPod("ns", long, on), wantEvent: "Warning PodNameNotLabelable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs []runtime.Object
			if tt.pod != nil {
				objs = append(objs, tt.pod)
			}
			cs := fake.NewClientset(objs...)
			if tt.live != nil {
				cs = fake.NewClientset(tt.live)
			}
			if tt.patchErr != nil {
				cs.PrependReactor("patch", "pods", failPatch(tt.patchErr))
			}
			rec := events.NewFakeRecorder(10)
			c := &podNameLabel{client: cs, pods: corelisters.NewPodLister(indexerWith(t, objs...)), recorder: rec, log: testLog(t)}
			name := "web-abc"
			if tt.pod != nil {
				name = tt.pod.Name
			}
			err := c.reconcile(t.Context(), cache.ObjectName{Namespace: "ns", Name: name})
			if (err != nil) != tt.wantErr {
				t.Errorf("reconcile err = %v, want error: %v", err, tt.wantErr)
			}
			w := writes(cs)
			switch {
			case tt.wantPatch == "" && len(w) != 0:
				t.Errorf("want no write, got %v", w)
			case tt.wantPatch != "":
				if len(w) != 1 {
					t.Fatalf("want one patch, got %v", w)
				}
				p := w[0].(k8stesting.PatchAction)
				wantType := types.MergePatchType
				if strings.HasPrefix(tt.wantPatch, "[") {
					wantType = types.JSONPatchType
				}
				if string(p.GetPatch()) != tt.wantPatch || p.GetPatchType() != wantType {
					t.Errorf("patch = %s %s, want %s", p.GetPatchType(), p.GetPatch(), tt.wantPatch)
				}
			}
			ev := drainEvents(rec)
			if tt.wantEvent == "" && len(ev) != 0 {
				t.Errorf("unexpected Events %v", ev)
			}
			if tt.wantEvent != "" && (len(ev) != 1 || !strings.HasPrefix(ev[0], tt.wantEvent)) {
				t.Errorf("Events = %v, want one %q", ev, tt.wantEvent)
			}
		})
	}
}

// The event handler is what keeps the controller from reacting to its own
// patch: an update that already matches is not queued.
func TestPodNameLabelMatches(t *testing.T) {
	on := annotated(AddPodNameLabelAnnotation, "true")
	tests := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"annotated, labelled", newPod("ns", "p", on, labelled(PodNameLabel, "p")), true},
		{"annotated, unlabelled", newPod("ns", "p", on), false},
		{"annotated, other value", newPod("ns", "p", on, labelled(PodNameLabel, "q")), false},
		{"annotated True is not true", newPod("ns", "p", annotated(AddPodNameLabelAnnotation, "True")), true},
		{"not annotated, labelled", newPod("ns", "p", labelled(PodNameLabel, "p")), false},
		{"not annotated, unlabelled", newPod("ns", "p"), true},
		{"not annotated, user value", newPod("ns", "p", labelled(PodNameLabel, "frontend")), true},
		{"annotated false, user value", newPod("ns", "p", annotated(AddPodNameLabelAnnotation, "false"), labelled(PodNameLabel, "frontend")), true},
		{"annotated false, own value", newPod("ns", "p", annotated(AddPodNameLabelAnnotation, "false"), labelled(PodNameLabel, "p")), false},
		{"name not labelable is left alone", newPod("ns", strings.Repeat("x", 64), on), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := podNameLabelMatches(tt.pod); got != tt.want {
				t.Errorf("podNameLabelMatches = %v, want %v", got, tt.want)
			}
		})
	}
}

// End to end over a real informer: the label follows the annotation, a
// conflict is retried, the controller's own update causes no new write, and
// a value the user set is never touched.
func TestPodNameLabelRun(t *testing.T) {
	cs := fake.NewClientset()
	var conflicts atomic.Int32
	cs.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts.Add(1) <= 2 { // the first two patches conflict
			return true, nil, apierrors.NewConflict(podsGR, "web-1", nil)
		}
		return false, nil, nil
	})
	runController(t, PodNameLabelName, cs, Deps{})
	pods := cs.CoreV1().Pods("ns")
	label := func(ctx context.Context) (string, bool) {
		p, err := pods.Get(ctx, "web-1", metav1.GetOptions{})
		if err != nil {
			return "", false
		}
		v, ok := p.Labels[PodNameLabel]
		return v, ok
	}
	// Created first, so the informer hands it to the controller before the
	// pods below: when those are done, this one was judged too.
	user := newPod("ns", "user", labelled(PodNameLabel, "frontend"))
	if _, err := pods.Create(t.Context(), user, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Create(t.Context(), newPod("ns", "web-1", annotated(AddPodNameLabelAnnotation, "true")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "label set", func(ctx context.Context) (bool, error) {
		v, _ := label(ctx)
		return v == "web-1", nil
	})
	if n := conflicts.Load(); n != 3 {
		t.Errorf("patches = %d, want 3 (two conflicts, one success)", n)
	}

	p, err := pods.Get(t.Context(), "web-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(p.Annotations, AddPodNameLabelAnnotation)
	if _, err := pods.Update(t.Context(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "label removed", func(ctx context.Context) (bool, error) {
		_, ok := label(ctx)
		return !ok, nil
	})
	if n := conflicts.Load(); n != 4 {
		t.Errorf("patches = %d, want 4 (none of the user's pod)", n)
	}
	if p, err := pods.Get(t.Context(), "user", metav1.GetOptions{}); err != nil || p.Labels[PodNameLabel] != "frontend" {
		t.Errorf("user's pod = %v, %v; want its label %s=frontend kept", p.Labels, err, PodNameLabel)
	}
}
