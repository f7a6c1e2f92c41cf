package manifests

import (
	"bytes"
	"testing"
)

// FuzzRewrite: any manifest text loads and rewrites, or fails with
// an error, never a panic.
func FuzzRewrite(f *testing.F) {
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
		docs, err := Load([]string{"-"}, bytes.NewReader(manifest))
		if err != nil {
			return
		}
		_, _, _ = Rewrite(docs, RewriteOptions{URL: "https://127.0.0.1:8443", Session: "s", TimeoutSeconds: 30})
	})
}
