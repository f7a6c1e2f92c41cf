package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authnv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/hookback/hookback/policy"
)

// TestPolicyFidelity: for the same objects, hookback's evaluation of a
// policy gives the decision, message and warnings the real apiserver gives
// when the same policy is enforced, and a MutatingAdmissionPolicy's object
// equals what the apiserver stores. Each table of policy/testdata is
// applied with its bindings narrowed to a scratch namespace (names
// suffixed with it), and each CREATE case is sent as a dry-run create and
// evaluated by hookback. The tables include the Kubernetes documentation's
// examples (basic, mutating), a params case with a messageExpression
// (params), Warn and Audit (actions), and a run-time error under each
// failurePolicy (failure).
func TestPolicyFidelity(t *testing.T) {
	for _, table := range []string{"basic", "params", "actions", "failure", "mutating"} {
		t.Run(table, func(t *testing.T) { policyFidelity(t, table) })
	}
}

// fidelityCase is the part of a policy/testdata cases.yaml row the e2e
// sends: the expectations there are hookback's own unit test; here the
// apiserver is the expectation.
type fidelityCase struct {
	Name      string         `json:"name"`
	Operation string         `json:"operation"`
	Object    map[string]any `json:"object"`
}

func policyFidelity(t *testing.T, table string) {
	dir := repoPath("policy", "testdata", table)
	ns := namespaceLabelled(t, map[string]string{"environment": "test"})
	plain := namespaceLabelled(t, nil) // no binding selects it: the apiserver's defaults, no policy
	set, err := policy.Load([]string{filepath.Join(dir, "policy.yaml")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	scopePolicies(set, ns)
	applyPolicies(t, set)
	// The cluster's client: Namespaces (the bindings' namespaceSelectors)
	// and the authorizer come from it, as hookback's audit and start take
	// them; params from the files.
	engine, err := policy.New(context.Background(), set, policy.Options{Client: env.client})
	if err != nil {
		t.Fatal(err)
	}
	dyn, warnings := warningClient(t)
	user := whoAmI(t)
	first := true
	for _, c := range readFidelityCases(t, filepath.Join(dir, "cases.yaml")) {
		if c.Operation != "CREATE" {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			obj := defaulted(t, dyn, c.Object, plain, ns)
			ev, err := engine.Evaluate(context.Background(), reviewOf(obj, ns, user))
			if err != nil {
				t.Fatal(err)
			}
			var ours *unstructured.Unstructured
			if ev.Patched {
				ours = defaulted(t, dyn, ev.Object, plain, ns)
			}
			var got apiAnswer
			same := func(ctx context.Context) (bool, error) {
				got = apiserverAnswer(ctx, dyn, warnings, obj, ns)
				return got.equal(ev) && (ours == nil || sameStored(ours, got)), nil
			}
			if first {
				// The apiserver loads new policies asynchronously: the first
				// case is retried until it agrees (each table's first case
				// denies, warns or mutates, so agreement means loaded).
				eventually(t, "the apiserver to answer "+c.Name+" as hookback does", same)
				first = false
			} else if ok, _ := same(context.Background()); !ok {
				t.Errorf("apiserver: allowed %v message %q warnings %q\nhookback:  allowed %v message %q warnings %q",
					got.allowed, got.message, got.warnings, ev.Allowed, ev.Message, ev.Warnings)
			}
			if ours != nil && !sameStored(ours, got) {
				a, _ := json.Marshal(ours.Object)
				b, _ := json.Marshal(got.stored)
				t.Errorf("hookback's mutated object (defaulted by the apiserver) differs from what the apiserver stores:\nhookback:  %s\napiserver: %s", a, b)
			}
		})
	}
}

// scopePolicies suffixes every policy and binding name with the namespace
// and narrows every binding to it: the policies are cluster-scoped and the
// cluster is shared with the other tests. Param objects move into it.
func scopePolicies(set *policy.Set, ns string) {
	narrow := func(m **admissionregistrationv1.MatchResources) {
		if *m == nil {
			*m = &admissionregistrationv1.MatchResources{}
		}
		sel := (*m).NamespaceSelector
		if sel == nil {
			sel = &metav1.LabelSelector{}
		}
		if sel.MatchLabels == nil {
			sel.MatchLabels = map[string]string{}
		}
		sel.MatchLabels["kubernetes.io/metadata.name"] = ns
		(*m).NamespaceSelector = sel
		if (*m).ObjectSelector == nil {
			(*m).ObjectSelector = &metav1.LabelSelector{}
		}
	}
	for _, p := range set.Validating {
		p.Name += "-" + ns
	}
	for _, b := range set.ValidatingBinding {
		b.Name, b.Spec.PolicyName = b.Name+"-"+ns, b.Spec.PolicyName+"-"+ns
		narrow(&b.Spec.MatchResources)
	}
	for _, p := range set.Mutating {
		p.Name += "-" + ns
	}
	for _, b := range set.MutatingBinding {
		b.Name, b.Spec.PolicyName = b.Name+"-"+ns, b.Spec.PolicyName+"-"+ns
		narrow(&b.Spec.MatchResources)
	}
	for _, o := range set.Objects {
		if o.GetNamespace() != "" {
			o.SetNamespace(ns)
		}
	}
}

// applyPolicies creates the set in the cluster and deletes it at the end.
func applyPolicies(t *testing.T, set *policy.Set) {
	t.Helper()
	ctx := context.Background()
	ar := env.client.AdmissionregistrationV1()
	must := func(what string, err error) {
		if err != nil {
			t.Fatalf("create %s: %v", what, err)
		}
	}
	for _, p := range set.Validating {
		_, err := ar.ValidatingAdmissionPolicies().Create(ctx, p, metav1.CreateOptions{})
		must(p.Name, err)
		t.Cleanup(func() {
			_ = ar.ValidatingAdmissionPolicies().Delete(context.Background(), p.Name, metav1.DeleteOptions{})
		})
	}
	for _, b := range set.ValidatingBinding {
		_, err := ar.ValidatingAdmissionPolicyBindings().Create(ctx, b, metav1.CreateOptions{})
		must(b.Name, err)
		t.Cleanup(func() {
			_ = ar.ValidatingAdmissionPolicyBindings().Delete(context.Background(), b.Name, metav1.DeleteOptions{})
		})
	}
	for _, p := range set.Mutating {
		_, err := ar.MutatingAdmissionPolicies().Create(ctx, p, metav1.CreateOptions{})
		must(p.Name, err)
		t.Cleanup(func() {
			_ = ar.MutatingAdmissionPolicies().Delete(context.Background(), p.Name, metav1.DeleteOptions{})
		})
	}
	for _, b := range set.MutatingBinding {
		_, err := ar.MutatingAdmissionPolicyBindings().Create(ctx, b, metav1.CreateOptions{})
		must(b.Name, err)
		t.Cleanup(func() {
			_ = ar.MutatingAdmissionPolicyBindings().Delete(context.Background(), b.Name, metav1.DeleteOptions{})
		})
	}
	for _, o := range set.Objects {
		if o.GetKind() != "ConfigMap" {
			continue
		}
		cm := o.DeepCopy()
		_, err := dynamicClient(t).Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(cm.GetNamespace()).Create(ctx, cm, metav1.CreateOptions{})
		must("param "+cm.GetName(), err)
	}
}

func readFidelityCases(t *testing.T, path string) []fidelityCase {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cases []fidelityCase
	if err := yaml.Unmarshal(b, &cases); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return cases
}

// warningClient is a dynamic client whose warnings the test reads.
func warningClient(t *testing.T) (dynamic.Interface, *warningList) {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", env.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	w := &warningList{}
	rc.WarningHandler = w
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return dyn, w
}

type warningList struct {
	mu   sync.Mutex
	list []string
}

var _ rest.WarningHandler = (*warningList)(nil)

func (w *warningList) HandleWarningHeader(_ int, _, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warningList) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.list
	w.list = nil
	return l
}

func whoAmI(t *testing.T) authnv1.UserInfo {
	t.Helper()
	r, err := env.client.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectReview: %v", err)
	}
	return r.Status.UserInfo
}

func resourceOf(o *unstructured.Unstructured) schema.GroupVersionResource {
	gvk := o.GroupVersionKind()
	return gvk.GroupVersion().WithResource(strings.ToLower(gvk.Kind) + "s")
}

// defaulted is the case's object as the apiserver decodes and defaults it
// (a dry-run create where no policy is bound), moved into ns: what the
// policies see there, and what a webhook would be sent.
func defaulted(t *testing.T, dyn dynamic.Interface, obj map[string]any, plain, ns string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(obj)}
	u.SetNamespace(plain)
	out, err := dyn.Resource(resourceOf(u)).Namespace(plain).Create(context.Background(), u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatalf("dry-run create in %s (no policy): %v", plain, err)
	}
	for _, f := range []string{"uid", "creationTimestamp", "managedFields", "resourceVersion", "generation"} {
		unstructured.RemoveNestedField(out.Object, "metadata", f)
	}
	out.SetNamespace(ns)
	return out
}

func reviewOf(obj *unstructured.Unstructured, ns string, user authnv1.UserInfo) *admissionv1.AdmissionRequest {
	raw, _ := json.Marshal(obj.Object)
	gvk := obj.GroupVersionKind()
	gvr := resourceOf(obj)
	dry := true
	return &admissionv1.AdmissionRequest{
		UID: "e2e", Kind: metav1.GroupVersionKind(gvk), Resource: metav1.GroupVersionResource(gvr),
		Name: obj.GetName(), Namespace: ns, Operation: admissionv1.Create, UserInfo: user,
		Object: runtime.RawExtension{Raw: raw}, DryRun: &dry,
		Options: runtime.RawExtension{Raw: []byte(`{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1","dryRun":["All"]}`)},
	}
}

// apiAnswer is what the apiserver answered a dry-run create.
type apiAnswer struct {
	allowed  bool
	message  string
	warnings []string
	stored   *unstructured.Unstructured
	err      error
}

func (a apiAnswer) equal(ev *policy.Evaluation) bool {
	return a.err == nil && a.allowed == ev.Allowed && a.message == ev.Message && reflect.DeepEqual(a.warnings, ev.Warnings)
}

func apiserverAnswer(ctx context.Context, dyn dynamic.Interface, w *warningList, obj *unstructured.Unstructured, ns string) apiAnswer {
	w.take()
	out, err := dyn.Resource(resourceOf(obj)).Namespace(ns).Create(ctx, obj.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	a := apiAnswer{warnings: w.take(), stored: out, allowed: err == nil}
	var status apierrors.APIStatus
	switch {
	case err == nil:
	case errors.As(err, &status):
		a.message = status.Status().Message
	default:
		a.err = err
	}
	return a
}

// sameStored: the object hookback's mutations produced, defaulted by the
// apiserver (a dry-run create where no policy is bound: hookback cannot
// apply the apiserver's defaults), equals what the apiserver stores when
// it applies the same policies itself.
func sameStored(ours *unstructured.Unstructured, got apiAnswer) bool {
	if got.stored == nil {
		return false
	}
	theirs := got.stored.DeepCopy()
	for _, f := range []string{"uid", "creationTimestamp", "managedFields", "resourceVersion", "generation"} {
		unstructured.RemoveNestedField(theirs.Object, "metadata", f)
	}
	return reflect.DeepEqual(ours.Object, theirs.Object)
}
