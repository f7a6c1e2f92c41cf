package session

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/openapi"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/inspector"
	"github.com/hookback/hookback/internal/admissionhttp"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/policy"
	"github.com/hookback/hookback/registration"
)

// docsPolicy is the Kubernetes documentation's ValidatingAdmissionPolicy
// example (policy/testdata/README.md): deployments of at most 5 replicas
// in namespaces labelled environment=test.
var docsPolicy = filepath.Join("..", "policy", "testdata", "basic", "policy.yaml")

// TestPolicyObserverRendered: --policy's observer is one of the session's
// configurations (Config.Objects, as render prints it): the policies'
// resources, always failing open, narrowed by the scope.
func TestPolicyObserverRendered(t *testing.T) {
	cfg := startConfig(t, &syncBuffer{})
	cfg.Policies = plan.PolicyInput{Paths: []string{docsPolicy}}
	cfg.Scope = registration.Scope{Namespaces: []string{"team-a"}}
	out, err := render(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := configurations(t, out)["ValidatingWebhookConfiguration/hookback-policy-observer-unit"]
	if got == nil {
		t.Fatalf("render printed no policy observer:\n%s", out)
	}
	b, _ := json.Marshal(got)
	for _, want := range []string{`"resources":["deployments"]`, `"operations":["CREATE","UPDATE"]`, `"failurePolicy":"Ignore"`,
		`/policy/observe"`, `"team-a"`, `"hookback.dev/session":"unit"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the observer lacks %s:\n%s", want, b)
		}
	}
}

func TestPolicyReadErrors(t *testing.T) {
	dir := t.TempDir()
	noRules := filepath.Join(dir, "cm.yaml")
	if err := os.WriteFile(noRules, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"missing file", filepath.Join(dir, "nope.yaml"), "plan.PolicyInput.Paths: "},
		{"no policy", noRules, "no ValidatingAdmissionPolicy or MutatingAdmissionPolicy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Read before the run dials anything (runOn, Render).
			if _, err := readPolicies(plan.PolicyInput{Paths: []string{tc.path}}, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("readPolicies = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// livePoliciesFor is --policy on path, its engine compiled offline (the
// Namespaces from the file), reporting to a store and dir.
func livePoliciesFor(t testing.TB, path string, logs *bytes.Buffer) (*livePolicies, *inspector.Store, string) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(logs, nil))
	p, err := readPolicies(plan.PolicyInput{Paths: []string{path}}, log)
	if err != nil {
		t.Fatal(err)
	}
	e, err := policy.New(context.Background(), p.set.Load(), policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.engine.Store(e)
	store, dir := inspector.NewStore(inspector.StoreOptions{}), t.TempDir()
	if err := p.attach(sinks{recordDir: dir, store: store}, nil); err != nil {
		t.Fatal(err)
	}
	return p, store, dir
}

func deploymentRequest(uid string, replicas int) admission.Request {
	obj, _ := json.Marshal(map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "test"}, "spec": map[string]any{"replicas": replicas}})
	return admission.Request{ReviewVersion: "admission.k8s.io/v1", AdmissionRequest: admissionv1.AdmissionRequest{
		UID: types.UID(uid), Operation: admissionv1.Create, Namespace: "test", Name: "web",
		Kind:     metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
		Resource: metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
		Object:   runtime.RawExtension{Raw: obj}}}
}

// recorded reads the views --record-dir's policy/ holds.
func recorded(t testing.TB, dir string) []inspector.PolicyView {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "policy", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []inspector.PolicyView
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v inspector.PolicyView
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, v)
	}
	return out
}

// TestPolicyObserve: the observer always allows, and publishes each
// binding's decision, what the apiserver would do, and each validation.
func TestPolicyObserve(t *testing.T) {
	var logs bytes.Buffer
	p, _, dir := livePoliciesFor(t, docsPolicy, &logs)
	obs, err := p.observer()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		uid      string
		replicas int
		decision policy.Decision
		actions  string
		result   string
	}{
		{"seven", 7, policy.Deny, "deny", "false"},
		{"three", 3, policy.Admit, "", "true"},
	} {
		t.Run(tc.uid, func(t *testing.T) {
			resp := obs.Webhook.Handler.Handle(context.Background(), deploymentRequest(tc.uid, tc.replicas))
			if !resp.Allowed || len(resp.Patch) > 0 {
				t.Fatalf("the observer answered %+v: it must allow, unpatched", resp)
			}
			var v *inspector.PolicyView
			for _, r := range recorded(t, dir) {
				if r.Request.UID == tc.uid {
					v = &r
				}
			}
			if v == nil || v.Evaluation == nil || len(v.Evaluation.Bindings) != 1 {
				t.Fatalf("recorded view %+v, want one binding evaluated", v)
			}
			b := v.Evaluation.Bindings[0]
			if b.Policy != "demo-policy.example.com" || b.Decision != tc.decision || strings.Join(b.Actions, ",") != tc.actions ||
				len(b.Validations) != 1 || b.Validations[0].Result != tc.result {
				t.Errorf("binding %+v, want %s (%s), validation %s", b, tc.decision, tc.actions, tc.result)
			}
		})
	}
	if strings.Contains(logs.String(), `"replicas"`) || strings.Contains(logs.String(), "replicas\":7") {
		t.Errorf("the log shows the object:\n%s", logs.String())
	}
}

// TestPolicyMigration: a webhook's answer beside the policy, judged as
// audit --policy judges it; only the disagreement is logged, and the
// store's entry of the webhook's review carries the comparison.
func TestPolicyMigration(t *testing.T) {
	var logs bytes.Buffer
	p, store, dir := livePoliciesFor(t, docsPolicy, &logs)
	// The webhook to replace: at most 5 replicas, but its message differs
	// from the policy's when it is 9 or more.
	hook := admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
		var d struct {
			Spec struct{ Replicas int } `json:"spec"`
		}
		_ = json.Unmarshal(req.Object.Raw, &d)
		switch {
		case d.Spec.Replicas >= 9:
			return admission.Denied("way too many replicas")
		case d.Spec.Replicas > 5:
			return admission.Denied("failed expression: object.spec.replicas <= 5")
		}
		return admission.Allowed("")
	})
	hooks := p.wrap([]admission.Webhook{{Name: "replicas", Path: "/replicas", Handler: hook}})
	for i, n := range []int{1, 3, 7, 9} {
		req := deploymentRequest(string(rune('a'+i)), n)
		hooks[0].Handler.Handle(context.Background(), req)
		store.RecordServed(admissionhttp.Served{Webhook: "replicas", Path: "/replicas", UID: string(req.UID), Review: req.Review()})
	}
	var disagree []string
	for _, v := range recorded(t, dir) {
		for _, c := range v.Comparisons {
			if !c.Agree {
				disagree = append(disagree, v.Request.UID+":"+c.Disagreement.What)
			}
		}
	}
	if strings.Join(disagree, " ") != "d:message" {
		t.Errorf("disagreements %v, want only d:message (9 replicas)", disagree)
	}
	if n := strings.Count(logs.String(), "disagree\" webhook=replicas") + strings.Count(logs.String(), "disagree webhook=replicas"); n != 1 {
		t.Errorf("%d disagreement log lines, want 1:\n%s", n, logs.String())
	}
	logs.Reset()
	p.summary()
	if !strings.Contains(logs.String(), "reviews=4 agree=3 disagree=1") {
		t.Errorf("summary:\n%s", logs.String())
	}
	// Registered as a mutating webhook, it is not compared with a
	// validating policy.
	mutating := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
		"webhooks": []any{map[string]any{"name": "replicas.example.com", "clientConfig": map[string]any{"url": "https://127.0.0.1:8443/replicas"}}}}}
	p.learn([]*unstructured.Unstructured{mutating})
	hooks[0].Handler.Handle(context.Background(), deploymentRequest("e", 9))
	if n := len(recorded(t, dir)); n != 4 {
		t.Errorf("%d views recorded, want still 4: a mutating webhook's answer was compared with a validating policy", n)
	}
}

// policyClient is a fake cluster that serves the policies at
// admissionregistration.k8s.io/v1 (and no OpenAPI schemas: the fake's
// OpenAPIV3 panics).
func policyClient() kubernetes.Interface {
	cs := fake.NewClientset()
	d := cs.Discovery().(*fakediscovery.FakeDiscovery)
	d.Resources = []*metav1.APIResourceList{{GroupVersion: "admissionregistration.k8s.io/v1",
		APIResources: []metav1.APIResource{{Name: "validatingadmissionpolicies"}, {Name: "validatingadmissionpolicybindings"},
			{Name: "mutatingadmissionpolicies"}, {Name: "mutatingadmissionpolicybindings"}}}}
	return policyCluster{Clientset: cs, d: noOpenAPI{d}}
}

type policyCluster struct {
	*fake.Clientset
	d discovery.DiscoveryInterface
}

func (c policyCluster) Discovery() discovery.DiscoveryInterface { return c.d }

type noOpenAPI struct{ *fakediscovery.FakeDiscovery }

func (noOpenAPI) OpenAPIV3() openapi.Client { return nil }

// TestPolicyReload: an edit of the policy file changes the next
// evaluation; an edit that does not read keeps the previous policies and
// says why.
func TestPolicyReload(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "policy.yaml")
	orig, err := os.ReadFile(docsPolicy)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	p, err := readPolicies(plan.PolicyInput{Paths: []string{file}}, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := p.connect(ctx, policyClient(), nil); err != nil {
		t.Fatal(err)
	}
	wait := p.watch(ctx, 50*time.Millisecond)
	defer func() { cancel(); wait() }()
	allowed := func() bool {
		req := deploymentRequest("r", 7)
		ev, err := p.engine.Load().Evaluate(ctx, &req.AdmissionRequest)
		if err != nil {
			t.Fatal(err)
		}
		return ev.Allowed
	}
	if allowed() {
		t.Fatal("7 replicas allowed before the edit")
	}
	if err := os.WriteFile(file, bytes.Replace(orig, []byte("<= 5"), []byte("<= 10"), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the edit to be evaluated", allowed)
	if err := os.WriteFile(file, []byte("apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nspec: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the bad edit to be reported", func() bool { return strings.Contains(logs.String(), "cannot be read; the previous ones stay live") })
	if !allowed() {
		t.Error("a bad edit replaced the previous policies")
	}
}

// waitUntil polls cond until it holds, or fails the test after 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPolicyMigrationShadow: under --shadow hookback's copy always allows;
// the policy is compared with your webhook's own answer, not the copy's.
func TestPolicyMigrationShadow(t *testing.T) {
	var logs bytes.Buffer
	p, _, dir := livePoliciesFor(t, docsPolicy, &logs)
	deny := admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		return admission.Denied("failed expression: object.spec.replicas <= 5")
	})
	allow := admission.HandlerFunc(func(context.Context, admission.Request) admission.Response { return admission.Allowed("") })
	sh := &shadowed{local: deny, deployed: allow, webhook: "replicas", path: "/replicas", report: newShadowReport(slog.New(slog.DiscardHandler), true)}
	hooks := p.wrap([]admission.Webhook{{Name: "replicas", Path: "/replicas", Handler: sh}})
	if resp := hooks[0].Handler.Handle(context.Background(), deploymentRequest("s", 7)); !resp.Allowed {
		t.Fatalf("the shadow copy answered %+v: it must allow", resp)
	}
	views := recorded(t, dir)
	if len(views) != 1 || len(views[0].Comparisons) != 1 || !views[0].Comparisons[0].Agree {
		t.Errorf("views %+v: want your webhook's denial compared with the policy's, agreeing", views)
	}
}
