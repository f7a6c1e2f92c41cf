package admitmatch

import (
	"context"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestResourceMatches(t *testing.T) {
	tests := []struct {
		name          string
		patterns      []string
		resource, sub string
		want          bool
	}{
		{"exact", []string{"pods"}, "pods", "", true},
		{"not the subresource", []string{"pods"}, "pods", "status", false},
		{"star: resources only", []string{"*"}, "pods", "status", false},
		{"star star", []string{"*/*"}, "pods", "status", true},
		{"star slash status", []string{"*/status"}, "nodes", "status", true},
		{"pods slash star", []string{"pods/*"}, "pods", "eviction", true},
		{"pods slash star: not pods", []string{"pods/*"}, "pods", "", false},
		{"other resource", []string{"deployments"}, "pods", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ResourceMatches(tt.patterns, tt.resource, tt.sub); got != tt.want {
				t.Errorf("ResourceMatches(%v, %q, %q) = %v, want %v", tt.patterns, tt.resource, tt.sub, got, tt.want)
			}
		})
	}
}

// TestMatch: conditions evaluated with the apiserver's code on a request's
// attributes; an expression that errors is an error under Fail and
// "not called" under Ignore, as the apiserver has it.
func TestMatch(t *testing.T) {
	req := &admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: "demo",
		UserInfo: authenticationv1.UserInfo{Username: "alice", Groups: []string{"devs"}},
		Object:   runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","labels":{"app":"web"}}}`)}}
	req.Kind.Version, req.Kind.Kind, req.Resource.Version, req.Resource.Resource = "v1", "Pod", "v1", "pods"
	attr, err := Attributes(req)
	if err != nil {
		t.Fatal(err)
	}
	fail, ignore := admissionregistrationv1.Fail, admissionregistrationv1.Ignore
	tests := []struct {
		name    string
		expr    string
		policy  *admissionregistrationv1.FailurePolicyType
		want    bool
		wantErr bool
	}{
		{"true", "object.metadata.labels['app'] == 'web' && 'devs' in request.userInfo.groups", &fail, true, false},
		{"false", "request.userInfo.username == 'bob'", &fail, false, false},
		{"errors under Fail", "object.metadata.annotations['x'] == 'y'", &fail, false, true},
		{"errors under Ignore: not called", "object.metadata.annotations['x'] == 'y'", &ignore, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Conditions("t", []admissionregistrationv1.MatchCondition{{Name: "c", Expression: tt.expr}}, false, tt.policy)
			got, err := Match(context.Background(), m, attr)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("Match(%s) = %v, %v; want %v, error %v", tt.expr, got, err, tt.want, tt.wantErr)
			}
		})
	}
}
