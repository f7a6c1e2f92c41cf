package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
)

var managedBy = map[string]string{"app.kubernetes.io/managed-by": "hookback"}

func enabled(p *corev1.Pod) { annotated(ExecAgentAnnotation, "true")(p) }

func withSA(sa string) podOpt { return func(p *corev1.Pod) { p.Spec.ServiceAccountName = sa } }

func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }

func sa(ns, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}
}

func ourRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: ExecRBACObjectName, Labels: managedBy, ResourceVersion: "1"},
		Rules:      ExecRBACRules(),
	}
}

func ourBinding(subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ExecRBACObjectName, Labels: managedBy, ResourceVersion: "1"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ExecRBACObjectName},
		Subjects:   subjects,
	}
}

// newExecRBACForTest builds the controller over listers fed with objs and a
// fake clientset holding the same objects.
func newExecRBACForTest(t *testing.T, objs ...runtime.Object) (*execRBAC, *fake.Clientset, *events.FakeRecorder) {
	t.Helper()
	// One indexer per type: the role and the binding share a name.
	var pods, roles, bindings []runtime.Object
	for _, o := range objs {
		switch o.(type) {
		case *corev1.Pod:
			pods = append(pods, o)
		case *rbacv1.ClusterRole:
			roles = append(roles, o)
		default:
			bindings = append(bindings, o)
		}
	}
	cs := fake.NewClientset(objs...)
	rec := events.NewFakeRecorder(10)
	c := &execRBAC{
		client:   cs,
		pods:     corelisters.NewPodLister(indexerWith(t, pods...)),
		roles:    rbaclisters.NewClusterRoleLister(indexerWith(t, roles...)),
		bindings: rbaclisters.NewClusterRoleBindingLister(indexerWith(t, bindings...)),
		labels:   managedBy,
		recorder: rec,
		log:      testLog(t),
	}
	return c, cs, rec
}

func TestExecRBACReconcile(t *testing.T) {
	user := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}
	tests := []struct {
		name string
		objs []runtime.Object
		// want is the binding's subjects afterwards; nil: no binding.
		want []rbacv1.Subject
		// writes are the expected write actions, as "verb resource".
		writes []string
	}{
		{
			name:   "two namespaces, two subjects, sorted",
			objs:   []runtime.Object{newPod("b", "p1", enabled), newPod("a", "p1", enabled), newPod("a", "p2", enabled)},
			want:   []rbacv1.Subject{sa("a", "default"), sa("b", "default")},
			writes: []string{"create clusterroles", "create clusterrolebindings"},
		},
		{
			name:   "custom service account",
			objs:   []runtime.Object{newPod("a", "p1", enabled, withSA("agent")), newPod("a", "p2", enabled)},
			want:   []rbacv1.Subject{sa("a", "agent"), sa("a", "default")},
			writes: []string{"create clusterroles", "create clusterrolebindings"},
		},
		{
			name: "disabled and finished pods are ignored, nothing created",
			objs: []runtime.Object{
				newPod("a", "off", annotated(ExecAgentAnnotation, "false")),
				newPod("a", "bad", annotated(ExecAgentAnnotation, "yes please")),
				newPod("a", "none"),
				newPod("b", "done", enabled, phase(corev1.PodSucceeded)),
				newPod("c", "failed", enabled, phase(corev1.PodFailed)),
			},
		},
		{
			name:   "ParseBool values enable",
			objs:   []runtime.Object{newPod("a", "p", annotated(ExecAgentAnnotation, "1")), ourRole(), ourBinding()},
			want:   []rbacv1.Subject{sa("a", "default")},
			writes: []string{"update clusterrolebindings"},
		},
		{
			name:   "namespace without pods loses its subject, the other stays",
			objs:   []runtime.Object{newPod("a", "p", enabled), ourRole(), ourBinding(sa("a", "default"), sa("b", "default"))},
			want:   []rbacv1.Subject{sa("a", "default")},
			writes: []string{"update clusterrolebindings"},
		},
		{
			name:   "no pod left: binding kept without subjects",
			objs:   []runtime.Object{ourRole(), ourBinding(sa("a", "default"))},
			want:   []rbacv1.Subject{},
			writes: []string{"update clusterrolebindings"},
		},
		{
			name: "unchanged: no write",
			objs: []runtime.Object{newPod("a", "p", enabled), newPod("b", "p", enabled), ourRole(),
				ourBinding(sa("a", "default"), sa("b", "default"))},
			want: []rbacv1.Subject{sa("a", "default"), sa("b", "default")},
		},
		{
			name:   "users and groups are kept, foreign service accounts are not",
			objs:   []runtime.Object{newPod("a", "p", enabled), ourRole(), ourBinding(user, sa("x", "someone"))},
			want:   []rbacv1.Subject{user, sa("a", "default")},
			writes: []string{"update clusterrolebindings"},
		},
		{
			name: "labelled role: edited rules and aggregationRule are put back",
			objs: []runtime.Object{newPod("a", "p", enabled),
				func() runtime.Object {
					r := ourRole()
					r.Rules = append(r.Rules, rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}})
					r.AggregationRule = &rbacv1.AggregationRule{}
					return r
				}(),
				ourBinding(sa("a", "default")),
			},
			want:   []rbacv1.Subject{sa("a", "default")},
			writes: []string{"update clusterroles"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, cs, rec := newExecRBACForTest(t, tt.objs...)
			if err := c.reconcile(t.Context(), ExecRBACObjectName); err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			var got []string
			for _, a := range writes(cs) {
				got = append(got, a.GetVerb()+" "+a.GetResource().Resource)
			}
			if !slices.Equal(got, tt.writes) {
				t.Errorf("writes = %v, want %v", got, tt.writes)
			}
			b, err := cs.RbacV1().ClusterRoleBindings().Get(t.Context(), ExecRBACObjectName, metav1.GetOptions{})
			switch {
			case tt.want == nil && !apierrors.IsNotFound(err):
				t.Errorf("want no binding, got %v, %v", b, err)
			case tt.want != nil && err != nil:
				t.Fatalf("get binding: %v", err)
			case tt.want != nil:
				if !slices.Equal(b.Subjects, tt.want) {
					t.Errorf("subjects = %v, want %v", b.Subjects, tt.want)
				}
				if b.Labels["app.kubernetes.io/managed-by"] != "hookback" {
					t.Errorf("binding labels = %v", b.Labels)
				}
				r, err := cs.RbacV1().ClusterRoles().Get(t.Context(), ExecRBACObjectName, metav1.GetOptions{})
				if err != nil || len(r.Rules) != len(ExecRBACRules()) || r.Labels["app.kubernetes.io/managed-by"] != "hookback" {
					t.Errorf("role = %v, %v", r, err)
				}
			}
			if ev := drainEvents(rec); len(ev) != 0 {
				t.Errorf("unexpected Events %v", ev)
			}
		})
	}
}

// Objects named xxl-agent-exec without the managed-by labels were made by
// someone else (the in-cluster deployment of these controllers): hookback
// neither writes nor labels them, so cleanup never deletes them either.
func TestExecRBACNotManaged(t *testing.T) {
	foreignLabels := map[string]string{"app.kubernetes.io/managed-by": "Helm"}
	broad := rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}
	foreignRole := func() *rbacv1.ClusterRole {
		r := ourRole()
		r.Labels, r.Rules = foreignLabels, []rbacv1.PolicyRule{broad}
		return r
	}
	foreignBinding := func() *rbacv1.ClusterRoleBinding {
		b := ourBinding(sa("z", "agent"))
		b.Labels = nil
		return b
	}
	tests := []struct {
		name       string
		objs       []runtime.Object
		writes     []string
		wantEvents int
		wantSubj   []rbacv1.Subject
		// bindingOurs: the binding carries hookback's labels before and after.
		bindingOurs bool
	}{
		{
			name:       "both foreign",
			objs:       []runtime.Object{newPod("a", "p", enabled), foreignRole(), foreignBinding()},
			wantEvents: 1,
			wantSubj:   []rbacv1.Subject{sa("z", "agent")},
		},
		{
			// Binding service accounts to a role hookback does not control
			// (here: everything on everything) could grant them anything.
			name:        "foreign role: our binding is not bound to it",
			objs:        []runtime.Object{newPod("a", "p", enabled), foreignRole(), ourBinding()},
			wantEvents:  1,
			bindingOurs: true,
		},
		{
			name:       "foreign binding, no pod: not emptied",
			objs:       []runtime.Object{foreignRole(), foreignBinding()},
			wantEvents: 1,
			wantSubj:   []rbacv1.Subject{sa("z", "agent")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, cs, rec := newExecRBACForTest(t, tt.objs...)
			if err := c.reconcile(t.Context(), ExecRBACObjectName); err != nil {
				t.Fatalf("reconcile: %v", err) // nil: no requeue
			}
			var got []string
			for _, a := range writes(cs) {
				got = append(got, a.GetVerb()+" "+a.GetResource().Resource)
			}
			if !slices.Equal(got, tt.writes) {
				t.Errorf("writes = %v, want %v", got, tt.writes)
			}
			ev := drainEvents(rec)
			if len(ev) != tt.wantEvents {
				t.Errorf("Events = %v, want %d NotManaged", ev, tt.wantEvents)
			}
			for _, e := range ev {
				if !strings.HasPrefix(e, "Warning NotManaged") {
					t.Errorf("Event %q, want Warning NotManaged", e)
				}
			}
			r, err := cs.RbacV1().ClusterRoles().Get(t.Context(), ExecRBACObjectName, metav1.GetOptions{})
			if err != nil || r.Labels["app.kubernetes.io/managed-by"] != "Helm" || !slices.EqualFunc(r.Rules, []rbacv1.PolicyRule{broad}, func(a, b rbacv1.PolicyRule) bool {
				return slices.Equal(a.Verbs, b.Verbs) && slices.Equal(a.Resources, b.Resources)
			}) {
				t.Errorf("foreign role changed: %v, %v", r, err)
			}
			b, err := cs.RbacV1().ClusterRoleBindings().Get(t.Context(), ExecRBACObjectName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(b.Subjects, tt.wantSubj) {
				t.Errorf("binding subjects = %v, want %v", b.Subjects, tt.wantSubj)
			}
			if hasLabels(b.Labels, managedBy) != tt.bindingOurs {
				t.Errorf("binding labels = %v, want managed-by: %v", b.Labels, tt.bindingOurs)
			}
		})
	}
}

func TestExecRBACWriteErrors(t *testing.T) {
	crbGR := schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterrolebindings"}
	tests := []struct {
		name      string
		objs      []runtime.Object
		reactor   func(calls int32) error // answer to binding writes, by call number
		wantErr   bool
		wantEvent string
		wantSubj  []rbacv1.Subject
	}{
		{
			name: "forbidden create: Event, not requeued",
			objs: []runtime.Object{newPod("a", "p", enabled)},
			reactor: func(int32) error {
				return apierrors.NewForbidden(crbGR, ExecRBACObjectName, fmt.Errorf("no bind permission"))
			},
			wantEvent: "Warning WriteRefused",
		},
		{
			name: "conflict retried against the live object",
			objs: []runtime.Object{newPod("a", "p", enabled), ourRole(), ourBinding()},
			reactor: func(n int32) error {
				if n == 1 {
					return apierrors.NewConflict(crbGR, ExecRBACObjectName, nil)
				}
				return nil
			},
			wantSubj: []rbacv1.Subject{sa("a", "default")},
		},
		{
			name:    "persistent server error: requeued",
			objs:    []runtime.Object{newPod("a", "p", enabled), ourRole(), ourBinding()},
			reactor: func(int32) error { return apierrors.NewServiceUnavailable("busy") },
			wantErr: true,
		},
		{
			name: "foreign roleRef: Event, untouched",
			objs: []runtime.Object{newPod("a", "p", enabled), ourRole(), func() runtime.Object {
				b := ourBinding(sa("z", "default"))
				b.RoleRef.Name = "cluster-admin"
				return b
			}()},
			reactor:   func(int32) error { return fmt.Errorf("must not write") },
			wantEvent: "Warning RoleRefMismatch",
			wantSubj:  []rbacv1.Subject{sa("z", "default")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, cs, rec := newExecRBACForTest(t, tt.objs...)
			var calls atomic.Int32
			fail := func(a k8stesting.Action) (bool, runtime.Object, error) {
				if err := tt.reactor(calls.Add(1)); err != nil {
					return true, nil, err
				}
				return false, nil, nil
			}
			cs.PrependReactor("create", "clusterrolebindings", fail)
			cs.PrependReactor("update", "clusterrolebindings", fail)
			err := c.reconcile(t.Context(), ExecRBACObjectName)
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
			if tt.wantSubj != nil {
				b, err := cs.RbacV1().ClusterRoleBindings().Get(t.Context(), ExecRBACObjectName, metav1.GetOptions{})
				if err != nil || !slices.Equal(b.Subjects, tt.wantSubj) {
					t.Errorf("binding = %v, %v; want subjects %v", b, err, tt.wantSubj)
				}
			}
		})
	}
}

// End to end over real informers: pods in many namespaces created at once
// on a running controller all end up as subjects, deleting one namespace's pods drops only its
// subject, and deleting the binding brings it back.
func TestExecRBACRun(t *testing.T) {
	cs := fake.NewClientset()
	runController(t, ExecRBACName, cs, Deps{ManagedByLabels: managedBy})
	subjects := func(ctx context.Context) []rbacv1.Subject {
		b, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, ExecRBACObjectName, metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return b.Subjects
	}
	// A first pod, so that the batch below lands on a running controller and
	// an existing binding, one reconcile after another.
	if _, err := cs.CoreV1().Pods("first").Create(t.Context(), newPod("first", "p", enabled, withSA("agent")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []rbacv1.Subject{sa("first", "agent")}
	eventually(t, "first subject", func(ctx context.Context) (bool, error) {
		return slices.Equal(subjects(ctx), want), nil
	})
	var wg sync.WaitGroup
	for i := range 8 {
		ns := fmt.Sprintf("ns-%d", i)
		want = append(want, sa(ns, "default"))
		slices.SortFunc(want, compareSubjects)
		wg.Go(func() {
			for _, name := range []string{"p1", "p2"} {
				if _, err := cs.CoreV1().Pods(ns).Create(t.Context(), newPod(ns, name, enabled), metav1.CreateOptions{}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	eventually(t, "all subjects", func(ctx context.Context) (bool, error) {
		return slices.Equal(subjects(ctx), want), nil
	})

	for _, name := range []string{"p1", "p2"} {
		if err := cs.CoreV1().Pods("ns-3").Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	want = slices.DeleteFunc(want, func(s rbacv1.Subject) bool { return s.Namespace == "ns-3" })
	eventually(t, "ns-3 dropped", func(ctx context.Context) (bool, error) {
		return slices.Equal(subjects(ctx), want), nil
	})

	if err := cs.RbacV1().ClusterRoleBindings().Delete(t.Context(), ExecRBACObjectName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "binding recreated", func(ctx context.Context) (bool, error) {
		return slices.Equal(subjects(ctx), want), nil
	})
}
