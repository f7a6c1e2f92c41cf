package registration

import "testing"

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
