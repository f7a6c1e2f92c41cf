package lint

import (
	"path/filepath"
	"testing"
)

// TestReinvocationUnsafe: what lint --probe saw becomes a finding on the
// webhook's reinvocationPolicy: an error where the apiserver reinvokes
// (IfNeeded), a warning where it does not; a probe of a webhook not in
// the input is left out, and without a probe the rule finds nothing.
func TestReinvocationUnsafe(t *testing.T) {
	docs := load(t, filepath.Join("..", "..", "testdata", "probe", "mutating-webhooks.yaml"))
	const conf = "MutatingWebhookConfiguration/pod-defaults"
	tests := []struct {
		name   string
		never  bool
		probed []Reinvocation
		want   []string
	}{
		{name: "not probed", want: nil},
		{name: "IfNeeded", probed: []Reinvocation{{Object: conf, Webhook: "calls.pods.example.com", Sample: "pods CREATE", Paths: []string{"/metadata/annotations/a"}}},
			want: []string{"error webhooks[1].reinvocationPolicy: not idempotent: sent its own output for pods CREATE, second call patched /metadata/annotations/a; its reinvocationPolicy is IfNeeded: the apiserver calls it again with its own output whenever a later webhook changes the object"}},
		{name: "Never", never: true, probed: []Reinvocation{{Object: conf, Webhook: "calls.pods.example.com", Sample: "pods CREATE", Message: "second call, with its own output, denied it: no"}},
			want: []string{"warning webhooks[1].reinvocationPolicy: not idempotent: sent its own output for pods CREATE, second call, with its own output, denied it: no; under reinvocationPolicy IfNeeded the apiserver would do the same after any later webhook's change"}},
		{name: "another configuration's", probed: []Reinvocation{{Object: "MutatingWebhookConfiguration/other", Webhook: "calls.pods.example.com", Sample: "pods CREATE"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := Read(docs)
			if err != nil {
				t.Fatal(err)
			}
			if tt.never {
				in.Hooks[1].Reinvocation = "Never"
			}
			in.Reinvocations = tt.probed
			var got []string
			for _, f := range Run(in, Options{FailOn: string(Error)}).Findings {
				if f.Rule == "reinvocation-unsafe" {
					got = append(got, string(f.Severity)+" "+f.Path+": "+f.Message)
					if f.Advice == "" || f.Webhook != "calls.pods.example.com" {
						t.Errorf("finding without advice or webhook: %+v", f)
					}
				}
			}
			if len(got) != len(tt.want) || len(got) > 0 && got[0] != tt.want[0] {
				t.Errorf("findings\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestServerPath(t *testing.T) {
	for _, tt := range []struct{ url, want string }{
		{"https://h.example.com/mutate?x=1", "/mutate?x=1"},
		{"https://h.example.com:8443", "/"},
		{"https://h.example.com?x=1", "/?x=1"},
		{"https://10.0.0.1/a/b", "/a/b"},
	} {
		t.Run(tt.url, func(t *testing.T) {
			if got := urlPath(tt.url); got != tt.want {
				t.Errorf("urlPath(%q) = %q, want %q", tt.url, got, tt.want)
			}
		})
	}
}
