package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// The role key: the ClusterRole is repaired while pods need it, the
// namespaces are revisited, and an older version's ClusterRoleBinding goes.
func TestExecRBACReconcileRole(t *testing.T) {
	tests := []struct {
		name   string
		objs   []runtime.Object
		writes []string
		queued []string
		event  string // prefix of the one expected Event
		// legacy: the ClusterRoleBinding exists afterwards.
		legacy bool
	}{
		{
			name:   "legacy binding of hookback's deleted, no pod: no role",
			objs:   []runtime.Object{legacyBinding(managedBy)},
			writes: []string{"delete clusterrolebindings"},
		},
		{
			name:   "legacy binding of someone else kept",
			objs:   []runtime.Object{legacyBinding(foreignLabels)},
			event:  "Warning NotManaged",
			legacy: true,
		},
		{
			name:   "pods need the role: created, namespaces with pods or bindings revisited",
			objs:   []runtime.Object{newPod("b", "p", enabled), newPod("a", "p", enabled), newPod("d", "p"), ourBinding("c")},
			writes: []string{"create clusterroles"},
			queued: []string{"a", "b", "c"},
		},
		{
			name: "edited role repaired",
			objs: []runtime.Object{newPod("a", "p", enabled), func() runtime.Object {
				r := ourRole()
				r.Rules = []rbacv1.PolicyRule{broad}
				return r
			}()},
			writes: []string{"update clusterroles"},
			queued: []string{"a"},
		},
		{
			name:   "no pod: role left as it is, bindings revisited",
			objs:   []runtime.Object{ourBinding("c", sa("c", "default"))},
			queued: []string{"c"},
		},
		{
			name:   "foreign role: not touched, namespaces revisited to drop their bindings",
			objs:   []runtime.Object{newPod("a", "p", enabled), foreignRole(), ourBinding("a", sa("a", "default"))},
			queued: []string{"a"},
			event:  "Warning NotManaged",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, cs, rec, queued := newExecRBACForTest(t, tt.objs...)
			if err := c.reconcile(t.Context(), roleKey); err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			if got := writeVerbs(cs); !slices.Equal(got, tt.writes) {
				t.Errorf("writes = %v, want %v", got, tt.writes)
			}
			if !slices.Equal(*queued, tt.queued) {
				t.Errorf("queued = %q, want %q", *queued, tt.queued)
			}
			ev := drainEvents(rec)
			if (tt.event == "" && len(ev) != 0) || (tt.event != "" && (len(ev) != 1 || !strings.HasPrefix(ev[0], tt.event))) {
				t.Errorf("Events = %v, want %q", ev, tt.event)
			}
			_, err := cs.RbacV1().ClusterRoleBindings().Get(t.Context(), ExecRBACObjectName, metav1.GetOptions{})
			if (err == nil) != tt.legacy {
				t.Errorf("legacy clusterrolebinding: err = %v, want exists: %v", err, tt.legacy)
			}
			// Looked for until gone, then never again.
			cs.ClearActions()
			if err := c.reconcile(t.Context(), roleKey); err != nil {
				t.Fatalf("second reconcile: %v", err)
			}
			for _, a := range cs.Actions() {
				if a.GetResource().Resource == "clusterrolebindings" {
					t.Errorf("second reconcile: %s clusterrolebindings", a.GetVerb())
				}
			}
		})
	}
}

func TestExecRBACWriteErrors(t *testing.T) {
	rbGR := schema.GroupResource{Group: rbacv1.GroupName, Resource: "rolebindings"}
	terminating := apierrors.NewForbidden(rbGR, ExecRBACObjectName, errors.New("namespace a is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	tests := []struct {
		name      string
		objs      []runtime.Object
		reactor   func(calls int32) error // answer to binding writes, by call number
		wantErr   bool
		wantEvent string
		// want is the binding's subjects afterwards; nil: no binding.
		want []rbacv1.Subject
	}{
		{
			name: "forbidden create: Event, not requeued",
			objs: []runtime.Object{newPod("a", "p", enabled)},
			reactor: func(int32) error {
				return apierrors.NewForbidden(rbGR, ExecRBACObjectName, fmt.Errorf("no bind permission"))
			},
			wantEvent: "Warning WriteRefused",
		},
		{
			name:    "namespace terminating: nothing to do, no Event",
			objs:    []runtime.Object{newPod("a", "p", enabled)},
			reactor: func(int32) error { return terminating },
		},
		{
			name: "update conflict retried against the live object",
			objs: []runtime.Object{newPod("a", "p", enabled), ourRole(), ourBinding("a")},
			reactor: func(n int32) error {
				if n == 1 {
					return apierrors.NewConflict(rbGR, ExecRBACObjectName, nil)
				}
				return nil
			},
			want: []rbacv1.Subject{sa("a", "default")},
		},
		{
			name: "delete conflict retried against the live object",
			objs: []runtime.Object{ourRole(), ourBinding("a", sa("a", "default"))},
			reactor: func(n int32) error {
				if n == 1 {
					return apierrors.NewConflict(rbGR, ExecRBACObjectName, nil)
				}
				return nil
			},
		},
		{
			name:    "persistent server error: requeued",
			objs:    []runtime.Object{newPod("a", "p", enabled), ourRole(), ourBinding("a")},
			reactor: func(int32) error { return apierrors.NewServiceUnavailable("busy") },
			wantErr: true,
			want:    []rbacv1.Subject{},
		},
		{
			name: "foreign roleRef: Event, untouched",
			objs: []runtime.Object{newPod("a", "p", enabled), ourRole(), func() runtime.Object {
				b := ourBinding("a", sa("a", "other"))
				b.RoleRef.Name = "cluster-admin"
				return b
			}()},
			reactor:   func(int32) error { return fmt.Errorf("must not write") },
			wantEvent: "Warning RoleRefMismatch",
			want:      []rbacv1.Subject{sa("a", "other")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, cs, rec, _ := newExecRBACForTest(t, tt.objs...)
			var calls atomic.Int32
			fail := func(k8stesting.Action) (bool, runtime.Object, error) {
				if err := tt.reactor(calls.Add(1)); err != nil {
					return true, nil, err
				}
				return false, nil, nil
			}
			for _, verb := range []string{"create", "update", "delete"} {
				cs.PrependReactor(verb, "rolebindings", fail)
			}
			err := c.reconcile(t.Context(), "a")
			if (err != nil) != tt.wantErr {
				t.Errorf("reconcile err = %v, want error: %v", err, tt.wantErr)
			}
			ev := drainEvents(rec)
			if tt.wantEvent == "" && len(ev) != 0 {
				t.Errorf("unexpected Events %v", ev)
			}
			if tt.wantEvent != "" && (len(ev) != 1 || !strings.HasPrefix(ev[0], tt.wantEvent)) {
				t.Errorf("Events = %v, want one %q", ev, tt.wantEvent)
			}
			b, ok := bindingSubjects(t, cs, "a")
			switch {
			case tt.want == nil && ok:
				t.Errorf("want no binding, got %v", b)
			case tt.want != nil && (!ok || !slices.Equal(b.Subjects, tt.want)):
				t.Errorf("binding = %v; want subjects %v", b, tt.want)
			}
		})
	}
}

// End to end over real informers: pods in many namespaces created at once
// on a running controller each get their namespace's binding, deleting one
// namespace's pods deletes only its binding, a deleted binding comes back,
// and an older version's ClusterRoleBinding is deleted at start.
func TestExecRBACRun(t *testing.T) {
	cs := fake.NewClientset(legacyBinding(managedBy))
	runController(t, ExecRBACName, cs, Deps{ManagedByLabels: managedBy})
	// subjects returns the ServiceAccount subjects of every binding, keyed by
	// the binding's namespace.
	subjects := func(ctx context.Context) map[string][]rbacv1.Subject {
		list, err := cs.RbacV1().RoleBindings("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil
		}
		out := map[string][]rbacv1.Subject{}
		for _, b := range list.Items {
			out[b.Namespace] = b.Subjects
		}
		return out
	}
	equal := func(want map[string][]rbacv1.Subject) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			got := subjects(ctx)
			for ns, s := range want {
				if !slices.Equal(got[ns], s) {
					return false, nil
				}
			}
			return len(got) == len(want), nil
		}
	}
	eventually(t, "legacy clusterrolebinding deleted", func(ctx context.Context) (bool, error) {
		_, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, ExecRBACObjectName, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	// A first pod, so that the batch below lands on a running controller.
	if _, err := cs.CoreV1().Pods("first").Create(t.Context(), newPod("first", "p", enabled, withSA("agent")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := map[string][]rbacv1.Subject{"first": {sa("first", "agent")}}
	eventually(t, "first binding", equal(want))
	var wg sync.WaitGroup
	for i := range 8 {
		ns := fmt.Sprintf("ns-%d", i)
		want[ns] = []rbacv1.Subject{sa(ns, "agent"), sa(ns, "default")}
		wg.Go(func() {
			for _, p := range []*corev1.Pod{newPod(ns, "p1", enabled), newPod(ns, "p2", enabled, withSA("agent"))} {
				if _, err := cs.CoreV1().Pods(ns).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	eventually(t, "a binding per namespace", equal(want))

	for _, name := range []string{"p1", "p2"} {
		if err := cs.CoreV1().Pods("ns-3").Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	delete(want, "ns-3")
	eventually(t, "ns-3's binding deleted", equal(want))

	if err := cs.RbacV1().RoleBindings("ns-1").Delete(t.Context(), ExecRBACObjectName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "ns-1's binding recreated", equal(want))
	if _, err := cs.RbacV1().ClusterRoleBindings().Get(t.Context(), ExecRBACObjectName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("clusterrolebinding: err = %v, want NotFound", err)
	}
}

// TestExecRBACRunsAgain: an in-cluster replica that lost the Lease and
// leads again runs the same controller a second time. The second Run must
// work as the first: its RBAC informers are new (the first Run's factory was
// shut down, and a stopped informer takes no handler), and a binding deleted
// between the terms is written again.
func TestExecRBACRunsAgain(t *testing.T) {
	cs := fake.NewClientset(newPod("a", "agent", enabled, withSA("agent")))
	factory := NewInformerFactory(cs, 0)
	ctrls, err := Build([]string{ExecRBACName}, Deps{Client: cs, Factory: factory, ManagedByLabels: managedBy, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	// As in `hookback serve`, the shared pod cache outlives the terms.
	cacheCtx, stopCache := context.WithCancel(t.Context())
	factory.Start(cacheCtx.Done())
	defer func() { stopCache(); factory.Shutdown() }()
	bound := func(ctx context.Context) (bool, error) {
		_, err := cs.RbacV1().RoleBindings("a").Get(ctx, ExecRBACObjectName, metav1.GetOptions{})
		return err == nil, nil
	}
	for term := 1; term <= 2; term++ {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- ctrls[0].Run(ctx, 1) }()
		eventually(t, fmt.Sprintf("the binding in term %d", term), bound)
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("term %d: Run = %v", term, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("term %d: Run did not return", term)
		}
		// Between the terms someone deletes the binding.
		if err := cs.RbacV1().RoleBindings("a").Delete(t.Context(), ExecRBACObjectName, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}
