package registration

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// enforceInput reads registration/testdata/policy-enforce.yaml as
// PreparePolicies gets it.
func enforceInput(t *testing.T) *EnforcedPolicies {
	t.Helper()
	b, err := os.ReadFile("testdata/policy-enforce.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeDocuments(b)
	if err != nil {
		t.Fatal(err)
	}
	in := &EnforcedPolicies{}
	for _, o := range objs {
		switch o.GetKind() {
		case KindValidatingPolicy:
			in.Policies = append(in.Policies, o)
		case KindValidatingPolicyBinding:
			in.Bindings = append(in.Bindings, o)
		default:
			in.Params = append(in.Params, PolicyParam{Object: o, Resource: configMaps, Namespaced: true})
		}
	}
	return in
}

func nestedString(t *testing.T, o *unstructured.Unstructured, path ...string) string {
	t.Helper()
	v, _, err := unstructured.NestedFieldNoCopy(o.Object, path...)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestPreparePolicies(t *testing.T) {
	tests := []struct {
		name  string
		scope Scope
		// want are JSON values of the binding's (and policy's) fields.
		nsSelector, objSelector, exclude, conditions string
	}{
		{name: "no scope: the binding's own selectors only", nsSelector: `{"matchLabels":{"env":"dev"}}`, objSelector: `{}`, exclude: `null`, conditions: `null`},
		{name: "namespaces are ANDed with the binding's selector, cluster-scoped resources excluded", scope: Scope{Namespaces: []string{"team-a", "team-b"}},
			nsSelector:  `{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"In","values":["team-a","team-b"]}],"matchLabels":{"env":"dev"}}`,
			objSelector: `{}`, exclude: `[{"apiGroups":["*"],"apiVersions":["*"],"operations":["*"],"resources":["*/*"],"scope":"Cluster"}]`, conditions: `null`},
		{name: "an object selector becomes expressions beside the binding's", scope: Scope{ObjectSelector: "app=web"},
			nsSelector: `{"matchLabels":{"env":"dev"}}`, objSelector: `{"matchExpressions":[{"key":"app","operator":"In","values":["web"]}]}`, exclude: `null`, conditions: `null`},
		{name: "only-mine is a matchCondition of the policy copy", scope: Scope{OnlyMine: true, Username: "alice"},
			nsSelector: `{"matchLabels":{"env":"dev"}}`, objSelector: `{}`, exclude: `null`,
			conditions: `[{"expression":"request.userInfo.username == \"alice\"","name":"hookback-only-mine"}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := enforceInput(t)
			if err := PreparePolicies(in, "s1", "hookback/hookback-s1", tt.scope); err != nil {
				t.Fatal(err)
			}
			p, b, param := in.Policies[0], in.Bindings[0], in.Params[0].Object
			for _, o := range []*unstructured.Unstructured{p, b, param} {
				if l := o.GetLabels(); l[LabelManagedBy] != ManagedByValue || l[LabelSession] != "s1" {
					t.Errorf("%s %s: labels %v, want hookback's with session s1", o.GetKind(), o.GetName(), l)
				}
				if o.GetAnnotations()[AnnotationLease] != "hookback/hookback-s1" {
					t.Errorf("%s %s: no lease annotation", o.GetKind(), o.GetName())
				}
			}
			names := []string{p.GetName(), b.GetName(), param.GetNamespace() + "/" + param.GetName()}
			if want := []string{"replica-limit-s1", "replica-limit-dev-s1", "team-a/limits-s1"}; !slices.Equal(names, want) {
				t.Errorf("names %v, want %v", names, want)
			}
			if got := nestedString(t, b, "spec", "policyName"); got != `"replica-limit-s1"` {
				t.Errorf("policyName %s", got)
			}
			if got := nestedString(t, b, "spec", "paramRef"); got != `{"name":"limits-s1","parameterNotFoundAction":"Deny"}` {
				t.Errorf("paramRef %s", got)
			}
			if got := nestedString(t, b, "spec", "matchResources", "namespaceSelector"); got != tt.nsSelector {
				t.Errorf("namespaceSelector\n got %s\nwant %s", got, tt.nsSelector)
			}
			if got := nestedString(t, b, "spec", "matchResources", "objectSelector"); got != tt.objSelector {
				t.Errorf("objectSelector\n got %s\nwant %s", got, tt.objSelector)
			}
			if got := nestedString(t, b, "spec", "matchResources", "excludeResourceRules"); got != tt.exclude {
				t.Errorf("excludeResourceRules\n got %s\nwant %s", got, tt.exclude)
			}
			if got := nestedString(t, p, "spec", "matchConditions"); got != tt.conditions {
				t.Errorf("matchConditions\n got %s\nwant %s", got, tt.conditions)
			}
			if got := p.GetAnnotations()[AnnotationParams]; got != `[{"version":"v1","resource":"configmaps","namespace":"team-a","name":"limits-s1"}]` {
				t.Errorf("params annotation %s", got)
			}
		})
	}
}

func TestPreparePoliciesRefuses(t *testing.T) {
	tests := []struct {
		name   string
		change func(*EnforcedPolicies)
	}{
		{name: "a namespaced param without a namespace", change: func(in *EnforcedPolicies) { in.Params[0].Object.SetNamespace("") }},
		{name: "a binding of a policy that is not enforced", change: func(in *EnforcedPolicies) { in.Policies = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := enforceInput(t)
			tt.change(in)
			if err := PreparePolicies(in, "s1", "", Scope{}); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

// policyClients are a fake cluster that serves the policy kinds at v1.
func policyClients(objs ...runtime.Object) (*fake.Clientset, *dynamicfake.FakeDynamicClient) {
	cs := fake.NewClientset()
	cs.Resources = []*metav1.APIResourceList{{GroupVersion: "admissionregistration.k8s.io/v1", APIResources: []metav1.APIResource{
		{Name: "validatingadmissionpolicies"}, {Name: "validatingadmissionpolicybindings"},
		{Name: "mutatingadmissionpolicies"}, {Name: "mutatingadmissionpolicybindings"},
		{Name: "validatingwebhookconfigurations"}, {Name: "mutatingwebhookconfigurations"},
	}}}
	kinds := map[schema.GroupVersionResource]string{configMaps: "ConfigMapList", CRDResource: "CustomResourceDefinitionList"}
	for _, pr := range policyResources {
		kinds[pr.gvr] = pr.kind + "List"
	}
	for kind, gvr := range configResources {
		kinds[gvr] = kind + "List"
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), kinds, objs...)
	// The fake stores an apply as a create, or an update of the whole
	// object: what hookback's applies amount to.
	dyn.PrependReactor("patch", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchAction)
		if p.GetPatchType() != types.ApplyPatchType {
			return false, nil, nil
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(p.GetPatch()); err != nil {
			return true, nil, err
		}
		if err := dyn.Tracker().Create(p.GetResource(), obj, p.GetNamespace()); err != nil {
			if err := dyn.Tracker().Update(p.GetResource(), obj, p.GetNamespace()); err != nil {
				return true, nil, err
			}
		}
		return true, obj, nil
	})
	return cs, dyn
}

// foreign is a policy object hookback did not create, or another session's.
func foreign(kind, name string, labels map[string]string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetAPIVersion("admissionregistration.k8s.io/v1")
	o.SetKind(kind)
	o.SetName(name)
	o.SetLabels(labels)
	return o
}

func policyNames(t *testing.T, r *Registrar) []string {
	t.Helper()
	var out []string
	for _, pr := range policyResources {
		list, err := r.Dynamic.Resource(pr.gvr).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range list.Items {
			out = append(out, pr.kind+"/"+o.GetName())
		}
	}
	list, err := r.Dynamic.Resource(configMaps).Namespace("team-a").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range list.Items {
		out = append(out, "ConfigMap/"+o.GetName())
	}
	slices.Sort(out)
	return out
}

func TestPolicyCleanup(t *testing.T) {
	// Untouchable: the user's own policy and param, and a live session's.
	userParam := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "limits", "namespace": "team-a"}}}
	others := []runtime.Object{
		foreign(KindValidatingPolicy, "replica-limit", nil),
		foreign(KindValidatingPolicyBinding, "replica-limit-dev", nil),
		userParam,
	}
	tests := []struct {
		name  string
		clean func(ctx context.Context, r *Registrar) error
	}{
		{name: "at exit (Deregister)", clean: func(ctx context.Context, r *Registrar) error { return r.Deregister(ctx) }},
		{name: "after a crash (Cleanup of a stale session)", clean: func(ctx context.Context, r *Registrar) error {
			next := &Registrar{Client: r.Client, Dynamic: r.Dynamic, Session: "s2", Log: r.Log}
			removed, err := next.Cleanup(ctx, CleanupOptions{Stale: true, Except: "s2", DefaultLeaseNamespace: "hookback"})
			if err == nil && !slices.Equal(removed, []string{"s1"}) {
				return fmt.Errorf("removed sessions %v, want [s1]", removed)
			}
			return err
		}},
		{name: "hookback cleanup --session", clean: func(ctx context.Context, r *Registrar) error {
			_, err := r.Cleanup(ctx, CleanupOptions{Sessions: []string{"s1"}, DefaultLeaseNamespace: "hookback"})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			cs, dyn := policyClients(slices.Clone(others)...)
			r := &Registrar{Client: cs, Dynamic: dyn, Session: "s1", Log: slog.New(slog.DiscardHandler)}
			in := enforceInput(t)
			if err := PreparePolicies(in, "s1", "hookback/hookback-s1", Scope{Namespaces: []string{"team-a"}}); err != nil {
				t.Fatal(err)
			}
			if err := r.ApplyPolicies(ctx, in); err != nil {
				t.Fatal(err)
			}
			sessions, err := r.Sessions(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if sessions["s1"] != "hookback/hookback-s1" {
				t.Fatalf("sessions %v: s1 with its lease is missing", sessions)
			}
			want := []string{"ConfigMap/limits", "ConfigMap/limits-s1", "ValidatingAdmissionPolicy/replica-limit", "ValidatingAdmissionPolicy/replica-limit-s1",
				"ValidatingAdmissionPolicyBinding/replica-limit-dev", "ValidatingAdmissionPolicyBinding/replica-limit-dev-s1"}
			if got := policyNames(t, r); !slices.Equal(got, want) {
				t.Fatalf("applied: %v, want %v", got, want)
			}
			if err := tt.clean(ctx, r); err != nil {
				t.Fatal(err)
			}
			want = []string{"ConfigMap/limits", "ValidatingAdmissionPolicy/replica-limit", "ValidatingAdmissionPolicyBinding/replica-limit-dev"}
			if got := policyNames(t, r); !slices.Equal(got, want) {
				t.Fatalf("left: %v, want only what hookback did not create: %v", got, want)
			}
		})
	}
}

func TestPolicyParamNotOursIsKept(t *testing.T) {
	ctx := context.Background()
	// A policy of session s1 records a param that someone else now owns
	// (its labels are not the session's): deleting the session keeps it.
	theirs := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "limits-s1", "namespace": "team-a"}}}
	p := foreign(KindValidatingPolicy, "replica-limit-s1", map[string]string{LabelManagedBy: ManagedByValue, LabelSession: "s1"})
	p.SetAnnotations(map[string]string{AnnotationParams: `[{"version":"v1","resource":"configmaps","namespace":"team-a","name":"limits-s1"}]`})
	cs, dyn := policyClients(p, theirs)
	r := &Registrar{Client: cs, Dynamic: dyn, Session: "s1", Log: slog.New(slog.DiscardHandler)}
	if err := r.Deregister(ctx); err != nil {
		t.Fatal(err)
	}
	if got := policyNames(t, r); !slices.Equal(got, []string{"ConfigMap/limits-s1"}) {
		t.Fatalf("left %v, want the param that is not the session's", got)
	}
}

func TestPolicyCleanupClusterWithoutPolicies(t *testing.T) {
	// A cluster that does not serve the policy kinds: nothing is listed
	// (the fake dynamic client would refuse an unregistered list).
	r := &Registrar{Client: fake.NewClientset(), Dynamic: fakeDynamic(), Session: "s1", Log: slog.New(slog.DiscardHandler)}
	n, err := r.deletePolicies(context.Background(), "s1")
	if err != nil || n != 0 {
		t.Fatalf("deletePolicies: %d, %v", n, err)
	}
}
