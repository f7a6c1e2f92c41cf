package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hookback/hookback/policy"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// suiteWidgets are the Widgets of the CRD TestSuiteWebhooksAndCRD
// installs: testdata/crdvalidate's, in a group of its own so that the
// tests that install that CRD run beside it.
var suiteWidgets = schema.GroupVersionResource{Group: "suitecrd.hookback.dev", Version: "v1", Resource: "widgets"}

// TestSuiteWebhooksAndCRD: cases that name a MutatingAdmissionPolicy,
// controller-runtime webhooks (e2e/crupstream's /mutate-widgets and
// /validate-widgets) and a CRD run them in the apiserver's order, and
// `hookback test` gives each the verdict, message and warnings the
// apiserver gives when the same policy, configurations (registered by
// hookback start) and CRD are in the cluster. The policy and the mutating
// webhook see the object defaulted and without the body's unknown field;
// the validating webhook sees it as the registry prepared it; a patch
// over the schema's maximum, or one that breaks a CEL rule, is refused
// with the apiserver's message.
func TestSuiteWebhooksAndCRD(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	up, _ := startCRUpstream(t)
	session := sessionFor(t)
	dir := t.TempDir()
	crd := suiteGroupCopy(t, dir, "widgets-crd.yaml")
	policyFile := suiteGroupCopy(t, dir, filepath.Join("suite-policy", "policy.yaml"))
	dyn, warnings := warningClient(t)
	installCRD(t, dyn, crd, suiteWidgets)
	manifests := filepath.Join(dir, "manifests.yaml")
	writeAtomic(t, manifests, widgetWebhooks(session))
	cases := filepath.Join(dir, "suite.yaml")
	writeAtomic(t, cases, widgetCases(ns, session))

	out, errOut, code := hookback(t, env.kubeconfig, "test", "--crd", crd, "--policy", policyFile, "--webhook-config", manifests,
		"--upstream", up, "--upstream-insecure", "-o", "json", cases)
	if code != 0 {
		t.Fatalf("hookback test: exit %d, want every case passed\n%s\n%s", code, out, errOut)
	}
	offline := suiteVerdicts(t, out)

	applyScopedPolicy(t, dyn, policyFile, ns, session)
	p := startEnv(t, append(os.Environ(), "KUBECONFIG="+env.kubeconfig), "--session", session,
		"--webhooks", "none", "--controllers", "none", "--webhook-config", manifests, "--upstream", up, "--upstream-insecure")
	p.ready(t)
	warnings.take() // the probes' of applyScopedPolicy
	for _, name := range []string{"plain", "big-one", "deny-one", "ceiling"} {
		t.Run(name, func(t *testing.T) {
			want, ok := offline[name]
			if !ok {
				t.Fatalf("hookback test gave no rows for %s:\n%s", name, out)
			}
			created, err := dyn.Resource(suiteWidgets).Namespace(ns).Create(context.Background(), widgetObject(name, session),
				metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			got := verdict{Allowed: err == nil, Warnings: warnings.take()}
			if err != nil {
				got.Message = err.Error()
			}
			if got.Allowed != want.Allowed || !strings.Contains(got.Message, want.Message) || !reflect.DeepEqual(got.Warnings, want.Warnings) {
				t.Errorf("the apiserver: %+v\nhookback test: %+v", got, want)
			}
			if err == nil {
				// The policy and the webhook were called, each with the
				// object defaulted; the field the webhook added was
				// pruned on the way to storage.
				spec, _, _ := unstructured.NestedMap(created.Object, "spec")
				saw, labelled := created.GetAnnotations()["crupstream.example.com/saw-protocol"], created.GetLabels()["protocol"]
				if saw != "HTTP" || labelled != "HTTP" || spec["colour"] != nil {
					t.Errorf("the apiserver's object: saw-protocol %q, label protocol %q, spec %v: want HTTP, HTTP and no colour", saw, labelled, spec)
				}
			}
		})
	}
}

// suiteGroupCopy is testdata/crdvalidate/NAME with the Widgets' group
// replaced by suiteWidgets', written in dir.
func suiteGroupCopy(t *testing.T, dir, name string) string {
	t.Helper()
	src, err := os.ReadFile(repoPath("testdata", "crdvalidate", name))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, filepath.Base(name))
	writeAtomic(t, out, strings.ReplaceAll(string(src), "crdvalidate.hookback.dev", suiteWidgets.Group))
	return out
}

// applyScopedPolicy creates the policies of path with their bindings
// narrowed to ns (TestPolicyFidelity's scopePolicies), and waits until
// the apiserver applies them: a dry-run create comes back patched.
func applyScopedPolicy(t *testing.T, dyn dynamic.Interface, path, ns, session string) {
	t.Helper()
	set, err := policy.Load([]string{path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	scopePolicies(set, ns)
	applyPolicies(t, set)
	probe := widgetObject("probe", session)
	probe.SetLabels(nil) // no webhook of the session's
	eventually(t, "the MutatingAdmissionPolicy to take effect", func(ctx context.Context) (bool, error) {
		got, err := dyn.Resource(suiteWidgets).Namespace(ns).Create(ctx, probe.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && got.GetLabels()["protocol"] == "HTTP", nil
	})
}

// verdict is what a create comes to: the apiserver's answer, or the
// suite's rows of a case put together as the apiserver would (the first
// denial, every warning).
type verdict struct {
	Allowed  bool
	Message  string
	Warnings []string
}

// suiteVerdicts reads `hookback test -o json`, whose rows are in the
// order the suite called the webhooks.
func suiteVerdicts(t *testing.T, out string) map[string]verdict {
	t.Helper()
	var rows []struct {
		Case string `json:"case"`
		Got  *struct {
			Result   string   `json:"result"`
			Message  string   `json:"message"`
			Warnings []string `json:"warnings"`
		} `json:"got"`
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("hookback test -o json: %v\n%s", err, out)
	}
	verdicts := map[string]verdict{}
	for _, r := range rows {
		v, seen := verdicts[r.Case]
		if !seen {
			v.Allowed = true
		}
		if r.Got != nil && v.Allowed {
			v.Warnings = append(v.Warnings, r.Got.Warnings...)
			if r.Got.Result == "denied" {
				v.Allowed, v.Message = false, r.Got.Message
			}
		}
		verdicts[r.Case] = v
	}
	return verdicts
}

// widgetObject is a Widget of suiteWidgets selected by session's
// webhooks, with an unknown field in its spec.
func widgetObject(name, session string) *unstructured.Unstructured {
	spec := map[string]any{"class": "gold", "shade": "dark"}
	if name == "ceiling" {
		spec["maxReplicas"] = int64(0) // under the policy's minReplicas
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": suiteWidgets.GroupVersion().String(), "kind": "Widget",
		"metadata": map[string]any{"name": name, "labels": map[string]any{"e2e-upstream": session}},
		"spec":     spec,
	}}
}

// widgetWebhooks are the configurations of crupstream's Widget webhooks,
// selecting the Widgets labelled for session.
func widgetWebhooks(session string) string {
	hook := func(name, path string) string {
		return "webhooks:\n- name: " + name + `
  clientConfig:
    service: {namespace: widgets, name: widget-webhooks, path: ` + path + `}
  rules:
  - {apiGroups: [` + suiteWidgets.Group + `], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [widgets]}
  objectSelector: {matchLabels: {e2e-upstream: "` + session + `"}}
  sideEffects: None
  admissionReviewVersions: [v1]
`
	}
	return "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata: {name: mutate-widgets}\n" +
		hook("mutate-widgets.example.com", "/mutate-widgets") +
		"---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: validate-widgets}\n" +
		hook("validate-widgets.example.com", "/validate-widgets")
}

// widgetCases are the suite: each case names the policy, the webhooks
// and the CRD, and says what each answers.
func widgetCases(ns, session string) string {
	crd := suiteWidgets.GroupResource().String()
	gv := suiteWidgets.GroupVersion().String()
	// after is the object as the policy, and then the webhook, left it.
	after := func(name, spec string, webhook bool) string {
		meta := "{name: " + name + ", labels: {e2e-upstream: " + session + ", protocol: HTTP}}"
		if webhook {
			meta = "{name: " + name + ", labels: {e2e-upstream: " + session + ", protocol: HTTP}, annotations: {crupstream.example.com/saw-protocol: HTTP}}"
			spec += ", colour: blue"
		}
		return "{apiVersion: " + gv + ", kind: Widget, metadata: " + meta + ", spec: {class: gold, protocol: HTTP, minReplicas: 1" + spec + "}}"
	}
	object := func(name string) string {
		b, _ := json.Marshal(widgetObject(name, session).Object)
		return string(b)
	}
	head := func(name string, webhooks ...string) string {
		return "- name: " + name + "\n  webhooks: [widget-floor.example.com, " + strings.Join(webhooks, ", ") + "]\n  operation: CREATE\n  namespace: " + ns +
			"\n  object: " + object(name) + "\n"
	}
	return `apiVersion: hookback.dev/v1alpha1
kind: Suite
cases:
` + head("plain", "mutate-widgets.example.com", crd, "validate-widgets.example.com") + `  expect: {result: allowed}
  expectWebhooks:
    widget-floor.example.com: {result: patched, object: ` + after("plain", "", false) + `}
    mutate-widgets.example.com: {result: patched, object: ` + after("plain", "", true) + `}
    ` + crd + `: {result: allowed, warnings: ['unknown field "spec.shade"']}
` + head("big-one", "mutate-widgets.example.com", crd) + `  expect: {result: denied, code: 422, message: 'spec.maxReplicas: Invalid value: 101: spec.maxReplicas in body should be less than or equal to 100'}
  expectWebhooks:
    widget-floor.example.com: {result: patched, object: ` + after("big-one", "", false) + `}
    mutate-widgets.example.com: {result: patched, object: ` + after("big-one", ", maxReplicas: 101", true) + `}
` + head("deny-one", "validate-widgets.example.com", crd, "mutate-widgets.example.com") + `  expect: {result: denied, message: controller-runtime says no to widget deny-one}
  expectWebhooks:
    widget-floor.example.com: {result: patched, object: ` + after("deny-one", "", false) + `}
    mutate-widgets.example.com: {result: patched, object: ` + after("deny-one", "", true) + `}
    ` + crd + `: {result: allowed, warnings: ['unknown field "spec.shade"']}
` + head("ceiling", crd) + `  expect: {result: denied, code: 422, message: 'spec.maxReplicas: Forbidden: minReplicas must not exceed maxReplicas'}
  expectWebhooks:
    widget-floor.example.com: {result: patched, object: ` + after("ceiling", ", maxReplicas: 0", false) + `}
`
}
