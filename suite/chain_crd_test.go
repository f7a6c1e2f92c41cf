package suite

import (
	"context"
	"fmt"
	"slices"
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
	return &Webhook{Configuration: CustomResourceDefinition, Schema: c, Path: "/crd/" + c.Name,
		Validating: &admissionregistrationv1.ValidatingWebhook{Name: c.Name, Rules: c.Rules(), AdmissionReviewVersions: []string{"v1"}}}
}

func widget(name string, minReplicas, maxReplicas int, more string) string {
	return `{apiVersion: crdvalidate.hookback.dev/v1, kind: Widget, metadata: {name: ` + name + `}, spec: {class: gold, minReplicas: ` +
		strconv.Itoa(minReplicas) + `, maxReplicas: ` + strconv.Itoa(maxReplicas) + more + `}}`
}

// TestChainCRDInTheApiserversOrder: a CRD's schema and CEL rules judge the
// object as the mutating webhooks left it, and before the validating
// webhooks, as the apiserver does (mutating admission, then the
// registry's validation, then validating admission), whatever order the
// webhooks are given in: a patch that raises an inverted maxReplicas makes
// the object valid, one that takes it over the schema's maximum makes a
// valid object invalid, with the apiserver's message. As in the apiserver,
// the mutating webhook sees the object pruned and defaulted (the body's
// unknown field gone, with its warning on the CRD's row), and the
// validating webhook sees the object as the registry prepared it, with the
// field the mutating webhook added that the schema does not know (pruned
// only on the way to storage, unwarned).
func TestChainCRDInTheApiserversOrder(t *testing.T) {
	widgetRules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"crdvalidate.hookback.dev"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}}}}
	s := newReviewServer(t, map[string]answer{
		"/replicas": func(obj map[string]any) (string, []map[string]any) {
			set := map[string]int{"fixed": 10, "broken": 101}[obj["metadata"].(map[string]any)["name"].(string)]
			return "", []map[string]any{{"op": "replace", "path": "/spec/maxReplicas", "value": set},
				{"op": "add", "path": "/spec/colour", "value": "blue"}}
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
  object: `+widget("fixed", 5, 2, ", shade: dark")+`
  expect: {result: allowed}
  expectWebhooks:
    replicas.example.com: {result: patched, object: `+widget("fixed", 5, 10, ", protocol: HTTP, colour: blue")+`}
    `+crd+`: {result: allowed, warnings: ['unknown field "spec.shade"']}
- name: mutation-makes-it-invalid
  operation: CREATE
  namespace: default
  object: `+widget("broken", 1, 3, "")+`
  expect: {result: allowed}
  expectWebhooks:
    replicas.example.com: {result: patched, object: `+widget("broken", 1, 101, ", protocol: HTTP, colour: blue")+`}
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
	t.Run("what-each-saw", func(t *testing.T) {
		// The registry prepared fixed for storage (generation 1); it
		// refused broken, which the apiserver would not send on. The
		// suite calls a mutating webhook twice (its idempotence), the
		// second time with its own patch, colour there.
		for path, want := range map[string][]string{
			"/replicas": {"fixed: protocol HTTP, no shade, no colour, generation 0", "broken: protocol HTTP, no shade, no colour, generation 0",
				"fixed: protocol HTTP, no shade, with colour, generation 0", "broken: protocol HTTP, no shade, with colour, generation 0"},
			"/check": {"fixed: protocol HTTP, no shade, with colour, generation 1", "broken: protocol HTTP, no shade, with colour, generation 0"},
		} {
			var saw []string
			for _, obj := range s.seen[path] {
				saw = append(saw, sawOf(obj))
			}
			if !slices.Equal(slices.Sorted(slices.Values(saw)), slices.Sorted(slices.Values(want))) {
				t.Errorf("%s saw %q, want %q", path, saw, want)
			}
		}
	})
}

// sawOf says what of the apiserver's decoding an object shows: the
// schema's default, the unknown fields of the body and of the mutating
// webhook's patch, and the generation the registry sets on create.
func sawOf(obj map[string]any) string {
	spec, _ := obj["spec"].(map[string]any)
	meta, _ := obj["metadata"].(map[string]any)
	says := []string{fmt.Sprint(meta["name"]) + ": protocol " + fmt.Sprint(spec["protocol"])}
	for _, f := range []string{"shade", "colour"} {
		if _, ok := spec[f]; ok {
			says = append(says, "with "+f)
		} else {
			says = append(says, "no "+f)
		}
	}
	generation, _ := meta["generation"].(float64)
	return strings.Join(append(says, fmt.Sprintf("generation %d", int(generation))), ", ")
}
