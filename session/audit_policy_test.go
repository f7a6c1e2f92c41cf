package session

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/policy"
)

func TestPolicyWebhooks(t *testing.T) {
	set, err := policy.Load([]string{"../policy/testdata/basic/policy.yaml", "../policy/testdata/mutating/policy.yaml"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := policy.New(context.Background(), set, policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hooks := PolicyWebhooks(e)
	var names []string
	for _, h := range hooks {
		names = append(names, h.Name)
		if !h.Policy || len(h.Rules) == 0 {
			t.Errorf("%s: policy %v rules %v", h.Name, h.Policy, h.Rules)
		}
	}
	if got, want := strings.Join(names, " "), "MutatingAdmissionPolicy/sidecar-policy.example.com MutatingAdmissionPolicy/team-label ValidatingAdmissionPolicy/demo-policy.example.com"; got != want {
		t.Fatalf("webhooks %q, want %q", got, want)
	}
	tests := []struct {
		name, hook, review string
		allowed            bool
		message, patch     string
	}{
		{"the docs' policy denies with its validation's message", "ValidatingAdmissionPolicy/demo-policy.example.com",
			`{"uid":"1","kind":{"group":"apps","version":"v1","kind":"Deployment"},"resource":{"group":"apps","version":"v1","resource":"deployments"},"namespace":"test","name":"web","operation":"CREATE","object":{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"test"},"spec":{"replicas":7}}}`,
			false, "failed expression: object.spec.replicas <= 5", ""},
		{"a mutating policy alone patches", "MutatingAdmissionPolicy/team-label",
			`{"uid":"2","kind":{"version":"v1","kind":"Pod"},"resource":{"version":"v1","resource":"pods"},"namespace":"shop-dev","name":"p","operation":"CREATE","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"shop-dev"},"spec":{"containers":[{"name":"a","image":"x"}]}}}`,
			true, "", `[{"op":"add","path":"/metadata/labels","value":{"team":"shop"}}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h admission.Handler
			for _, w := range hooks {
				if w.Name == tt.hook {
					h = w.Handler
				}
			}
			req, err := admission.NewRequest([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":` + tt.review + `}`))
			if err != nil {
				t.Fatal(err)
			}
			resp := h.Handle(context.Background(), req)
			if resp.Allowed != tt.allowed || resp.Result.Message != tt.message {
				t.Errorf("allowed %v message %q, want %v %q", resp.Allowed, resp.Result.Message, tt.allowed, tt.message)
			}
			var got, want any
			_ = json.Unmarshal(resp.Patch, &got)
			_ = json.Unmarshal([]byte(tt.patch), &want)
			if tt.patch != "" && !jsonEqual(got, want) {
				t.Errorf("patch %s, want %s", resp.Patch, tt.patch)
			}
		})
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
