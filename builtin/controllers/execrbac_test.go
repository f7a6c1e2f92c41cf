package controllers

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/events"
)

var managedBy = map[string]string{"app.kubernetes.io/managed-by": "hookback"}

func enabled(p *corev1.Pod) { annotated(ExecAgentAnnotation, "true")(p) }

func withSA(sa string) podOpt { return func(p *corev1.Pod) { p.Spec.ServiceAccountName = sa } }

func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }

func sa(ns, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}
}

var user = rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}

func ourRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: ExecRBACObjectName, Labels: managedBy, ResourceVersion: "1", UID: "role"},
		Rules:      ExecRBACRules(),
	}
}

func ourBinding(ns string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ExecRBACObjectName, Namespace: ns, Labels: managedBy,
			ResourceVersion: "1", UID: types.UID("rb-" + ns)},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ExecRBACObjectName},
		Subjects: subjects,
	}
}

var foreignLabels = map[string]string{"app.kubernetes.io/managed-by": "Helm"}

// broad is what a role someone else made under the same name may grant.
var broad = rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}

func foreignRole() *rbacv1.ClusterRole {
	r := ourRole()
	r.Labels, r.Rules = foreignLabels, []rbacv1.PolicyRule{broad}
	return r
}

func foreignBinding(ns string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	b := ourBinding(ns, subjects...)
	b.Labels = nil
	return b
}

// legacyBinding is the ClusterRoleBinding older versions of hookback made.
func legacyBinding(labels map[string]string) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ExecRBACObjectName, Labels: labels, UID: "crb"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ExecRBACObjectName},
		Subjects:   []rbacv1.Subject{sa("a", "default")},
	}
}

// newExecRBACForTest builds the controller over listers fed with objs and a
// fake clientset holding the same objects. The keys it queues are appended
// to the returned slice.
func newExecRBACForTest(t *testing.T, objs ...runtime.Object) (*execRBAC, *fake.Clientset, *events.FakeRecorder, *[]string) {
	t.Helper()
	// One indexer per type: the objects share a name.
	var pods, roles, bindings []runtime.Object
	for _, o := range objs {
		switch o.(type) {
		case *corev1.Pod:
			pods = append(pods, o)
		case *rbacv1.ClusterRole:
			roles = append(roles, o)
		case *rbacv1.RoleBinding:
			bindings = append(bindings, o)
		}
	}
	cs := fake.NewClientset(objs...)
	rec := events.NewFakeRecorder(10)
	var queued []string
	c := &execRBAC{
		client:   cs,
		pods:     corelisters.NewPodLister(indexerWith(t, pods...)),
		roles:    rbaclisters.NewClusterRoleLister(indexerWith(t, roles...)),
		bindings: rbaclisters.NewRoleBindingLister(indexerWith(t, bindings...)),
		labels:   managedBy,
		recorder: rec,
		log:      testLog(t),
		enqueue:  func(k string) { queued = append(queued, k) },
	}
	return c, cs, rec, &queued
}

// writeVerbs returns the fake client's writes as "verb resource[ namespace]".
func writeVerbs(cs *fake.Clientset) []string {
	var got []string
	for _, a := range writes(cs) {
		got = append(got, strings.TrimSpace(a.GetVerb()+" "+a.GetResource().Resource+" "+a.GetNamespace()))
	}
	return got
}

// bindingSubjects returns the subjects of the RoleBinding in ns, and false
// when there is none.
func bindingSubjects(t *testing.T, cs *fake.Clientset, ns string) (*rbacv1.RoleBinding, bool) {
	t.Helper()
	b, err := cs.RbacV1().RoleBindings(ns).Get(t.Context(), ExecRBACObjectName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatalf("get rolebinding %s: %v", ns, err)
	}
	return b, true
}

// Reconciling namespace "a": its binding lists exactly the service accounts
// of its own pods, and goes when none is left.
func TestExecRBACReconcileNamespace(t *testing.T) {
	tests := []struct {
		name string
		objs []runtime.Object
		// want is the binding's subjects in "a" afterwards; nil: no binding.
		want   []rbacv1.Subject
		writes []string
	}{
		{
			name:   "only the namespace's own service accounts, once each",
			objs:   []runtime.Object{newPod("b", "p1", enabled), newPod("a", "p1", enabled), newPod("a", "p2", enabled)},
			want:   []rbacv1.Subject{sa("a", "default")},
			writes: []string{"create clusterroles", "create rolebindings a"},
		},
		{
			name:   "custom service account, sorted",
			objs:   []runtime.Object{newPod("a", "p1", enabled, withSA("zeta")), newPod("a", "p2", enabled, withSA("agent"))},
			want:   []rbacv1.Subject{sa("a", "agent"), sa("a", "zeta")},
			writes: []string{"create clusterroles", "create rolebindings a"},
		},
		{
			name: "disabled and finished pods are ignored, nothing created",
			objs: []runtime.Object{
				newPod("a", "off", annotated(ExecAgentAnnotation, "false")),
				newPod("a", "bad", annotated(ExecAgentAnnotation, "yes please")),
				newPod("a", "none"),
				newPod("a", "done", enabled, phase(corev1.PodSucceeded)),
				newPod("a", "failed", enabled, phase(corev1.PodFailed)),
			},
		},
		{
			name:   "ParseBool values enable",
			objs:   []runtime.Object{newPod("a", "p", annotated(ExecAgentAnnotation, "1")), ourRole(), ourBinding("a")},
			want:   []rbacv1.Subject{sa("a", "default")},
			writes: []string{"update rolebindings a"},
		},
		{
			name:   "last pod gone: binding deleted",
			objs:   []runtime.Object{ourRole(), ourBinding("a", sa("a", "default"))},
			writes: []string{"delete rolebindings a"},
		},
		{
			name:   "pods elsewhere do not keep the namespace's binding",
			objs:   []runtime.Object{newPod("b", "p", enabled), ourRole(), ourBinding("a", sa("a", "default"))},
			writes: []string{"delete rolebindings a"},
		},
		{
			name: "one service account's pods gone: its subject goes, the other stays",
			objs: []runtime.Object{newPod("a", "p", enabled), ourRole(),
				ourBinding("a", sa("a", "agent"), sa("a", "default"))},
			want:   []rbacv1.Subject{sa("a", "default")},
			writes: []string{"update rolebindings a"},
		},
		{
			name:   "unchanged: no write",
			objs:   []runtime.Object{newPod("a", "p", enabled), ourRole(), ourBinding("a", sa("a", "default"))},
			want:   []rbacv1.Subject{sa("a", "default")},
			writes: nil,
		},
		{
			name: "users are kept; service accounts not derived from pods, other namespaces' included, are not",
			objs: []runtime.Object{newPod("a", "p", enabled), ourRole(),
				ourBinding("a", user, sa("x", "someone"), sa("a", "other"))},
			want:   []rbacv1.Subject{user, sa("a", "default")},
			writes: []string{"update rolebindings a"},
		},
		{
			name:   "no pod left but a user: kept with the user only",
			objs:   []runtime.Object{ourRole(), ourBinding("a", user, sa("a", "default"))},
			want:   []rbacv1.Subject{user},
			writes: []string{"update rolebindings a"},
		},
		{
			name: "labelled role: edited rules and aggregationRule are put back",
			objs: []runtime.Object{newPod("a", "p", enabled),
				func() runtime.Object {
					r := ourRole()
					r.Rules = append(r.Rules, broad)
					r.AggregationRule = &rbacv1.AggregationRule{}
					return r
				}(),
				ourBinding("a", sa("a", "default")),
			},
			want:   []rbacv1.Subject{sa("a", "default")},
			writes: []string{"update clusterroles"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, cs, rec, _ := newExecRBACForTest(t, tt.objs...)
			if err := c.reconcile(t.Context(), "a"); err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			if got := writeVerbs(cs); !slices.Equal(got, tt.writes) {
				t.Errorf("writes = %v, want %v", got, tt.writes)
			}
			b, ok := bindingSubjects(t, cs, "a")
			switch {
			case tt.want == nil && ok:
				t.Errorf("want no binding, got %v", b)
			case tt.want != nil && !ok:
				t.Fatal("want a binding, got none")
			case tt.want != nil:
				if !slices.Equal(b.Subjects, tt.want) {
					t.Errorf("subjects = %v, want %v", b.Subjects, tt.want)
				}
				if !hasLabels(b.Labels, managedBy) || b.RoleRef.Kind != "ClusterRole" || b.RoleRef.Name != ExecRBACObjectName {
					t.Errorf("binding labels %v, roleRef %v", b.Labels, b.RoleRef)
				}
				r, err := cs.RbacV1().ClusterRoles().Get(t.Context(), ExecRBACObjectName, metav1.GetOptions{})
				if err != nil || len(r.Rules) != len(ExecRBACRules()) || r.AggregationRule != nil || !hasLabels(r.Labels, managedBy) {
					t.Errorf("role = %v, %v", r, err)
				}
			}
			if _, err := cs.RbacV1().ClusterRoleBindings().Get(t.Context(), ExecRBACObjectName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("a ClusterRoleBinding exists (err %v): exec must be granted per namespace only", err)
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
	tests := []struct {
		name   string
		objs   []runtime.Object
		writes []string
		// events is the number of Warning NotManaged Events.
		events int
		// want is the binding in "a" afterwards (nil: none); ours: it
		// carries hookback's labels.
		want []rbacv1.Subject
		ours bool
	}{
		{
			name:   "both foreign: neither touched",
			objs:   []runtime.Object{newPod("a", "p", enabled), foreignRole(), foreignBinding("a", sa("z", "agent"))},
			events: 2,
			want:   []rbacv1.Subject{sa("z", "agent")},
		},
		{
			// Binding service accounts to a role hookback does not control
			// (here: everything on everything) could grant them anything.
			name:   "foreign role: hookback's binding to it is deleted",
			objs:   []runtime.Object{newPod("a", "p", enabled), foreignRole(), ourBinding("a", sa("a", "default"))},
			writes: []string{"delete rolebindings a"},
			events: 1,
		},
		{
			name:   "foreign binding, our role: no subject added",
			objs:   []runtime.Object{newPod("a", "p", enabled), ourRole(), foreignBinding("a", sa("z", "agent"))},
			events: 1,
			want:   []rbacv1.Subject{sa("z", "agent")},
		},
		{
			name:   "foreign binding, no pod: not deleted",
			objs:   []runtime.Object{ourRole(), foreignBinding("a", sa("z", "agent"))},
			events: 1,
			want:   []rbacv1.Subject{sa("z", "agent")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, cs, rec, _ := newExecRBACForTest(t, tt.objs...)
			if err := c.reconcile(t.Context(), "a"); err != nil {
				t.Fatalf("reconcile: %v", err) // nil: no requeue
			}
			if got := writeVerbs(cs); !slices.Equal(got, tt.writes) {
				t.Errorf("writes = %v, want %v", got, tt.writes)
			}
			ev := drainEvents(rec)
			if len(ev) != tt.events {
				t.Errorf("Events = %v, want %d NotManaged", ev, tt.events)
			}
			for _, e := range ev {
				if !strings.HasPrefix(e, "Warning NotManaged") {
					t.Errorf("Event %q, want Warning NotManaged", e)
				}
			}
			foreign := slices.ContainsFunc(tt.objs, func(o runtime.Object) bool {
				r, ok := o.(*rbacv1.ClusterRole)
				return ok && !hasLabels(r.Labels, managedBy)
			})
			r, err := cs.RbacV1().ClusterRoles().Get(t.Context(), ExecRBACObjectName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if foreign && (hasLabels(r.Labels, managedBy) || len(r.Rules) != 1 || !slices.Equal(r.Rules[0].Verbs, broad.Verbs)) {
				t.Errorf("foreign role changed: %v", r)
			}
			b, ok := bindingSubjects(t, cs, "a")
			switch {
			case tt.want == nil && ok:
				t.Errorf("want no binding, got %v", b)
			case tt.want != nil && !ok:
				t.Fatal("want a binding, got none")
			case tt.want != nil:
				if !slices.Equal(b.Subjects, tt.want) {
					t.Errorf("binding subjects = %v, want %v", b.Subjects, tt.want)
				}
				if hasLabels(b.Labels, managedBy) != tt.ours {
					t.Errorf("binding labels = %v, want managed-by: %v", b.Labels, tt.ours)
				}
			}
		})
	}
}
