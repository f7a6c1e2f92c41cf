package registration

import (
	"bytes"
	"testing"
)

// FuzzRender: any template text renders or fails with an error, never a
// panic.
func FuzzRender(f *testing.F) {
	f.Add([]byte(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: x}
webhooks:
- name: a.b
  clientConfig: {url: "{{ .URL }}/p"}
`))
	f.Add([]byte(`{{ if enabled "pod-name" }}{{ template "x" }}{{ end }}`))
	f.Add([]byte("kind: List\nitems: [1]"))
	f.Fuzz(func(t *testing.T, tmpl []byte) {
		_, _ = Render("fuzz", tmpl, TemplateData{URL: "https://127.0.0.1:8443", Session: "s", Enabled: []string{"pod-name"}},
			RenderOptions{Paths: []string{"/p"}})
	})
}

// FuzzRewriteManifests: any manifest text loads and rewrites, or fails with
// an error, never a panic.
func FuzzRewriteManifests(f *testing.F) {
	f.Add([]byte(`apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: m}
webhooks:
- name: a.b
  clientConfig: {service: {namespace: ns, name: svc, path: /m, port: 8443}}
---
apiVersion: v1
kind: List
items: [{apiVersion: admissionregistration.k8s.io/v1, kind: ValidatingWebhookConfiguration, metadata: {name: v}, webhooks: [{name: c.d, clientConfig: {url: "https://h:1/x"}}]}]
`))
	f.Add([]byte(`{"webhooks":[{"clientConfig":{"service":{"port":"x"}}}]}`))
	f.Fuzz(func(t *testing.T, manifest []byte) {
		docs, err := LoadManifests([]string{"-"}, bytes.NewReader(manifest))
		if err != nil {
			return
		}
		_, _, _ = RewriteManifests(docs, ManifestOptions{URL: "https://127.0.0.1:8443", Session: "s", TimeoutSeconds: 30})
	})
}
