package main

import (
	"os"
	"strings"
	"testing"

	"github.com/hookback/hookback/registration"
	"sigs.k8s.io/yaml"
)

// TestScopedTemplateNarrowsEveryWebhook renders the shipped template scoped
// to one bench namespace: every namespaced webhook selects only it, and
// the opt-in ones still need seed 002's label, which bench namespaces carry.
func TestScopedTemplateNarrowsEveryWebhook(t *testing.T) {
	shipped, err := os.ReadFile("../../../webhook-url.yaml.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := scopedTemplate(string(shipped), "hookback-bench-x")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registration.Render("t", []byte(tmpl), registration.TemplateData{URL: "https://127.0.0.1:1", Session: "s",
		Enabled: []string{"pod-name", "pod-lifespan", "pod-sidecar", "pod-eviction"}},
		registration.RenderOptions{Paths: []string{"/validate-pod-name", "/mutate-pod-lifespan", "/mutate-pod-sidecar", "/validate-pod-eviction"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range reg.Objects {
		hooks, _ := o.Object["webhooks"].([]any)
		for _, h := range hooks {
			hm := h.(map[string]any)
			b, _ := yaml.Marshal(hm["namespaceSelector"])
			sel := string(b)
			if !strings.Contains(sel, "operator: In\nvalues:\n- hookback-bench-x") && !strings.Contains(sel, "operator: In\n  values:\n  - hookback-bench-x") {
				t.Errorf("%v selects %s, want only hookback-bench-x", hm["name"], sel)
			}
			optIn := hm["name"] == "pod-name.hookback.dev" || hm["name"] == "pod-lifespan.hookback.dev"
			if optIn != strings.Contains(sel, "admission-webhook: enabled") {
				t.Errorf("%v: opt-in label in %s: want it exactly on pod-name and pod-lifespan", hm["name"], sel)
			}
		}
	}
}
