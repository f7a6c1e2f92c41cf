package suite

import (
	"context"
	"strconv"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/hookback/hookback/crdvalidate"
	"github.com/hookback/hookback/manifests"
)

// schemaWebhook is testdata/crdvalidate's Widget CRD as `hookback test
// --crd` makes it a webhook of the suite: its rules judged with the
// apiserver's code.
func schemaWebhook(t *testing.T) *Webhook {
	t.Helper()
	docs, err := manifests.Load([]string{"../testdata/crdvalidate/widgets-crd.yaml"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := crdvalidate.Compile(docs[0].Object, docs[0].Location())
	if err != nil {
		t.Fatal(err)
	}
	return &Webhook{Configuration: CustomResourceDefinition, Schema: true, Path: "/crd/" + c.Name, Handler: c.Handler(),
		Validating: &admissionregistrationv1.ValidatingWebhook{Name: c.Name, Rules: c.Rules(), AdmissionReviewVersions: []string{"v1"}}}
}

func widget(name string, minReplicas, maxReplicas int) string {
	return `{apiVersion: crdvalidate.hookback.dev/v1, kind: Widget, metadata: {name: ` + name + `}, spec: {class: gold, minReplicas: ` +
		strconv.Itoa(minReplicas) + `, maxReplicas: ` + strconv.Itoa(maxReplicas) + `}}`
}

// TestChainCRDInTheApiserversOrder: a CRD's schema and CEL rules judge the
// object as the mutating webhooks left it, and before the validating
// webhooks, as the apiserver does (mutating admission, then the
// registry's validation, then validating admission), whatever order the
// webhooks are given in: a patch that raises an inverted maxReplicas makes
// the object valid, one that takes it over the schema's maximum makes a
// valid object invalid, with the apiserver's message.
func TestChainCRDInTheApiserversOrder(t *testing.T) {
	widgetRules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"crdvalidate.hookback.dev"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}}}}
	s := newReviewServer(t, map[string]answer{
		"/replicas": func(obj map[string]any) (string, []map[string]any) {
			set := map[string]int{"fixed": 10, "broken": 101}[obj["metadata"].(map[string]any)["name"].(string)]
			return "", []map[string]any{{"op": "replace", "path": "/spec/maxReplicas", "value": set}}
		},
		"/check": func(map[string]any) (string, []map[string]any) { return "", nil },
	})
	// Given in the reverse of the apiserver's order.
	hooks := []*Webhook{
		{Configuration: "v", Path: "/check", Handler: s.forwarder(t, "/check"), Validating: &admissionregistrationv1.ValidatingWebhook{
			Name: "check.example.com", Rules: widgetRules, AdmissionReviewVersions: []string{"v1"}}},
		schemaWebhook(t),
		{Configuration: "m", Path: "/replicas", Handler: s.forwarder(t, "/replicas"), Mutating: &admissionregistrationv1.MutatingWebhook{
			Name: "replicas.example.com", Rules: widgetRules, AdmissionReviewVersions: []string{"v1"}}},
	}
	const crd = "widgets.crdvalidate.hookback.dev"
	path := writeSuite(t, header+`
- name: mutation-makes-it-valid
  operation: CREATE
  namespace: default
  object: `+widget("fixed", 5, 2)+`
  expect: {result: allowed}
  expectWebhooks:
    replicas.example.com: {result: patched, object: `+widget("fixed", 5, 10)+`}
- name: mutation-makes-it-invalid
  operation: CREATE
  namespace: default
  object: `+widget("broken", 1, 3)+`
  expect: {result: allowed}
  expectWebhooks:
    replicas.example.com: {result: patched, object: `+widget("broken", 1, 101)+`}
    `+crd+`:
      result: denied
      code: 422
      message: 'Widget.crdvalidate.hookback.dev "broken" is invalid: spec.maxReplicas: Invalid value: 101: spec.maxReplicas in body should be less than or equal to 100'
`)
	files, err := Load([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	rows := Run(context.Background(), files, Options{Webhooks: hooks})
	got := map[string][]string{}
	for _, r := range rows {
		got[r.Case] = append(got[r.Case], r.Webhook+" "+r.Status)
		if r.Status != Pass {
			t.Errorf("%s %s: %s\n%s", r.Case, r.Webhook, r.Detail, r.Diff)
		}
	}
	want := "replicas.example.com PASS," + crd + " PASS,check.example.com PASS"
	for _, name := range []string{"mutation-makes-it-valid", "mutation-makes-it-invalid"} {
		t.Run(name, func(t *testing.T) {
			if g := strings.Join(got[name], ","); g != want {
				t.Errorf("rows %s, want %s", g, want)
			}
		})
	}
}
