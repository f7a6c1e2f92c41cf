package registration

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestRenderServiceMatchesRender checks the in-cluster rendering is the
// laptop's with only the clientConfig swapped: same objects and webhooks,
// same rules and policies, no session suffix and none of the labels that
// session cleanup selects.
func TestRenderServiceMatchesRender(t *testing.T) {
	tmpl := readFile(t, "..", "webhook-url.yaml.tmpl")
	enabled := []string{"pod-name", "pod-lifespan", "pod-sidecar", "pod-eviction", "node-status"}
	laptop, err := Render("t", tmpl, TemplateData{URL: "https://127.0.0.1:8443", CABundle: "Q0E=", Session: "dev", Enabled: enabled},
		RenderOptions{Paths: allPaths})
	if err != nil {
		t.Fatal(err)
	}
	svc := ServiceRef{Namespace: "hookback-system", Name: "hookback", Port: 443}
	cluster, err := RenderService("t", tmpl, TemplateData{Enabled: enabled}, allPaths, svc, map[string]string{"app.kubernetes.io/part-of": "hookback"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cluster.Objects) != len(laptop.Objects) {
		t.Fatalf("%d objects, want %d", len(cluster.Objects), len(laptop.Objects))
	}
	for i, o := range cluster.Objects {
		t.Run(o.GetKind(), func(t *testing.T) {
			l := laptop.Objects[i]
			if o.GetName()+"-dev" != l.GetName() {
				t.Errorf("name %q, laptop's %q", o.GetName(), l.GetName())
			}
			if lb := o.GetLabels(); lb[LabelManagedBy] != "" || lb[LabelSession] != "" || lb["app.kubernetes.io/part-of"] != "hookback" {
				t.Errorf("labels = %v", lb)
			}
			got, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
			want, _, _ := unstructured.NestedSlice(l.Object, "webhooks")
			for j := range got {
				g, w := got[j].(map[string]any), want[j].(map[string]any)
				url, _, _ := unstructured.NestedString(w, "clientConfig", "url")
				path, _, _ := unstructured.NestedString(g, "clientConfig", "service", "path")
				if "https://127.0.0.1:8443"+path != url {
					t.Errorf("webhook %v: service path %q, laptop url %q", g["name"], path, url)
				}
				if _, ok := g["clientConfig"].(map[string]any)["caBundle"]; ok {
					t.Errorf("webhook %v has a caBundle", g["name"])
				}
				delete(g, "clientConfig")
				delete(w, "clientConfig")
				if !reflect.DeepEqual(g, w) {
					t.Errorf("webhook differs beyond clientConfig:\n got %v\nwant %v", g, w)
				}
			}
		})
	}
}

// TestPointAtService checks what start --tunnel registers: the session's
// rendering with each url swapped for the relay's Service, the url's path
// and the caBundle kept.
func TestPointAtService(t *testing.T) {
	tmpl := readFile(t, "..", "webhook-url.yaml.tmpl")
	reg, err := Render("t", tmpl, TemplateData{URL: "https://relay.ns.svc", CABundle: "Q0E=", Session: "dev", Enabled: []string{"pod-name", "pod-sidecar"}},
		RenderOptions{Paths: allPaths})
	if err != nil {
		t.Fatal(err)
	}
	svc := ServiceRef{Namespace: "ns", Name: "relay", Port: 443}
	if err := PointAtService(reg.Objects, svc); err != nil {
		t.Fatal(err)
	}
	for _, o := range reg.Objects {
		if o.GetLabels()[LabelSession] != "dev" {
			t.Errorf("%s lost the session label: %v", o.GetName(), o.GetLabels())
		}
		hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		for _, h := range hooks {
			cc := h.(map[string]any)["clientConfig"].(map[string]any)
			want := map[string]any{"caBundle": "Q0E=", "service": map[string]any{"namespace": "ns", "name": "relay", "port": int64(443),
				"path": cc["service"].(map[string]any)["path"]}}
			if !reflect.DeepEqual(cc, want) || cc["service"].(map[string]any)["path"] == "" {
				t.Errorf("clientConfig = %v, want %v with the url's path", cc, want)
			}
		}
	}
	// The banner's list says where each webhook now goes.
	for _, line := range reg.Webhooks() {
		if !strings.Contains(line, " -> service ns/relay:443/") {
			t.Errorf("banner line %q: want the Service and path", line)
		}
	}
}
