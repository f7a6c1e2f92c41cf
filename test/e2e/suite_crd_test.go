package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// suiteWidgets are the Widgets of the CRD TestSuiteWebhooksAndCRD
// installs: testdata/crdvalidate's, in a group of its own so that the
// tests that install that CRD run beside it.
var suiteWidgets = schema.GroupVersionResource{Group: "suitecrd.hookback.dev", Version: "v1", Resource: "widgets"}

// TestSuiteWebhooksAndCRD: cases that name controller-runtime webhooks
// (e2e/crupstream's /mutate-widgets and /validate-widgets) and a CRD run
// them in the apiserver's order, and `hookback test` gives each the
// verdict, message and warnings the apiserver gives when the same
// configurations (registered by hookback start) and the same CRD are in
// the cluster. The mutating webhook sees the object defaulted and without
// the body's unknown field; the field it adds is pruned; the validating
// webhook sees the object as the registry would store it; a patch over
// the schema's maximum is refused with the apiserver's message.
func TestSuiteWebhooksAndCRD(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	up, _ := startCRUpstream(t)
	session := sessionFor(t)
	dir := t.TempDir()
	crd := filepath.Join(dir, "crd.yaml")
	src, err := os.ReadFile(repoPath("testdata", "crdvalidate", "widgets-crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, crd, strings.ReplaceAll(string(src), "crdvalidate.hookback.dev", suiteWidgets.Group))
	dyn, warnings := warningClient(t)
	installCRD(t, dyn, crd, suiteWidgets)
	manifests := filepath.Join(dir, "manifests.yaml")
	writeAtomic(t, manifests, widgetWebhooks(session))
	cases := filepath.Join(dir, "suite.yaml")
	writeAtomic(t, cases, widgetCases(ns, session))

	out, errOut, code := hookback(t, env.kubeconfig, "test", "--crd", crd, "--webhook-config", manifests,
		"--upstream", up, "--upstream-insecure", "-o", "json", cases)
	if code != 0 {
		t.Fatalf("hookback test: exit %d, want every case passed\n%s\n%s", code, out, errOut)
	}
	offline := suiteVerdicts(t, out)

	p := startEnv(t, append(os.Environ(), "KUBECONFIG="+env.kubeconfig), "--session", session,
		"--webhooks", "none", "--controllers", "none", "--webhook-config", manifests, "--upstream", up, "--upstream-insecure")
	p.ready(t)
	for _, name := range []string{"plain", "big-one", "deny-one"} {
		t.Run(name, func(t *testing.T) {
			want, ok := offline[name]
			if !ok {
				t.Fatalf("hookback test gave no rows for %s:\n%s", name, out)
			}
			obj := widgetObject(name, session)
			created, err := dyn.Resource(suiteWidgets).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			got := verdict{Allowed: err == nil, Warnings: warnings.take()}
			if err != nil {
				got.Message = err.Error()
			}
			if got.Allowed != want.Allowed || !strings.Contains(got.Message, want.Message) || !reflect.DeepEqual(got.Warnings, want.Warnings) {
				t.Errorf("the apiserver: %+v\nhookback test: %+v", got, want)
			}
			if err == nil {
				// The apiserver defaulted the object before the mutating
				// webhook, and pruned the field the webhook added.
				spec, _, _ := unstructured.NestedMap(created.Object, "spec")
				if saw := created.GetAnnotations()["crupstream.example.com/saw-protocol"]; saw != "HTTP" || spec["colour"] != nil {
					t.Errorf("the apiserver's object: saw-protocol %q, spec %v: want HTTP and no colour", saw, spec)
				}
			}
		})
	}
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
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": suiteWidgets.GroupVersion().String(), "kind": "Widget",
		"metadata": map[string]any{"name": name, "labels": map[string]any{"e2e-upstream": session}},
		"spec":     map[string]any{"class": "gold", "shade": "dark"},
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

// widgetCases are the suite: each case names the webhooks and the CRD,
// and says what each answers.
func widgetCases(ns, session string) string {
	crd := suiteWidgets.GroupResource().String()
	mutated := func(name, more string) string {
		return "{apiVersion: " + suiteWidgets.GroupVersion().String() + ", kind: Widget, metadata: {name: " + name +
			", labels: {e2e-upstream: " + session + "}, annotations: {crupstream.example.com/saw-protocol: HTTP}}, spec: {class: gold, protocol: HTTP, colour: blue" + more + "}}"
	}
	object := func(name string) string {
		b, _ := json.Marshal(widgetObject(name, session).Object)
		return string(b)
	}
	return `apiVersion: hookback.dev/v1alpha1
kind: Suite
cases:
- name: plain
  webhooks: [mutate-widgets.example.com, ` + crd + `, validate-widgets.example.com]
  operation: CREATE
  namespace: ` + ns + `
  object: ` + object("plain") + `
  expect: {result: allowed}
  expectWebhooks:
    mutate-widgets.example.com: {result: patched, object: ` + mutated("plain", "") + `}
    ` + crd + `: {result: allowed, warnings: ['unknown field "spec.shade"']}
- name: big-one
  webhooks: [mutate-widgets.example.com, ` + crd + `]
  operation: CREATE
  namespace: ` + ns + `
  object: ` + object("big-one") + `
  expect: {result: denied, code: 422, message: 'spec.maxReplicas: Invalid value: 101: spec.maxReplicas in body should be less than or equal to 100'}
  expectWebhooks:
    mutate-widgets.example.com: {result: patched, object: ` + mutated("big-one", ", maxReplicas: 101") + `}
- name: deny-one
  webhooks: [validate-widgets.example.com, ` + crd + `, mutate-widgets.example.com]
  operation: CREATE
  namespace: ` + ns + `
  object: ` + object("deny-one") + `
  expect: {result: denied, message: controller-runtime says no to widget deny-one}
  expectWebhooks:
    mutate-widgets.example.com: {result: patched, object: ` + mutated("deny-one", "") + `}
    ` + crd + `: {result: allowed, warnings: ['unknown field "spec.shade"']}
`
}
