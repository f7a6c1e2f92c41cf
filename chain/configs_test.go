package chain

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func TestObservers(t *testing.T) {
	mine := func(sel string) *unstructured.Unstructured {
		var o unstructured.Unstructured
		doc := `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: mine-s}
webhooks:
- name: a.example.com
  clientConfig: {url: "https://127.0.0.1:8643/mutate-a"}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  objectSelector: {matchLabels: {team: a}}
- name: b.example.com
  clientConfig: {url: "https://127.0.0.1:8643/mutate-b"}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}, {apiGroups: [apps], apiVersions: [v1], operations: [UPDATE], resources: [deployments]}]
  objectSelector: {matchLabels: {team: ` + sel + `}}
`
		if err := yaml.Unmarshal([]byte(doc), &o.Object); err != nil {
			t.Fatal(err)
		}
		return &o
	}
	opts := ObserverOptions{Session: "s", URL: "https://127.0.0.1:8643", Labels: map[string]string{"hookback.dev/session": "s"}}
	for _, tc := range []struct {
		name         string
		objs         []*unstructured.Unstructured
		wantSelector bool
		err          error
	}{
		{name: "shared selectors are copied", objs: []*unstructured.Unstructured{mine("a")}, wantSelector: true},
		{name: "differing selectors are not", objs: []*unstructured.Unstructured{mine("b")}},
		{name: "no mutating webhook, no chain", err: ErrNoMutatingWebhook},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs, yours, err := Observers(tc.objs, opts)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			if !yours["/mutate-a"] || !yours["/mutate-b"] || len(yours) != 2 {
				t.Errorf("your paths %v", yours)
			}
			var names []string
			for _, o := range obs {
				names = append(names, o.GetName())
				hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
				h := hooks[0].(map[string]any)
				rules, _, _ := unstructured.NestedSlice(h, "rules")
				if len(rules) != 2 || h["failurePolicy"] != "Ignore" || h["sideEffects"] != "None" {
					t.Errorf("%s: rules %v, failurePolicy %v, sideEffects %v: want the union of 2 rules, Ignore, None", o.GetName(), rules, h["failurePolicy"], h["sideEffects"])
				}
				if _, has := h["objectSelector"]; has != tc.wantSelector {
					t.Errorf("%s: objectSelector %v", o.GetName(), h["objectSelector"])
				}
				if o.GetLabels()["hookback.dev/session"] != "s" || o.GetLabels()[LabelObserver] == "" {
					t.Errorf("%s: labels %v", o.GetName(), o.GetLabels())
				}
			}
			// The first sorts before, the last after, any plausible name.
			all := append([]string{"0-a", "00-first", "0000-x", "a", "istio-sidecar-injector", "zzz-gardener", "zzzzzzz"}, names[0], names[1])
			slices.Sort(all)
			if all[0] != names[0] || all[len(all)-1] != names[1] {
				t.Errorf("sorted: %s", strings.Join(all, " "))
			}
		})
	}
}
