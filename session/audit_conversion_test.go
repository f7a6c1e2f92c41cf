package session

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/hookback/hookback/registration"
)

// TestScopeSelectors: the scope flags become the selectors the conversion
// round trips narrow their objects with, ANDed as start ANDs them.
func TestScopeSelectors(t *testing.T) {
	tests := []struct {
		name             string
		scope            registration.Scope
		nsLabels, labels map[string]string
		wantNS, wantObj  bool // whether each selects the given labels; nil selectors select all
		wantErr          string
	}{
		{name: "no scope", nsLabels: map[string]string{"kubernetes.io/metadata.name": "x"}, wantNS: true, wantObj: true},
		{name: "namespace named", scope: registration.Scope{Namespaces: []string{"team-a"}},
			nsLabels: map[string]string{"kubernetes.io/metadata.name": "team-a"}, wantNS: true, wantObj: true},
		{name: "another namespace", scope: registration.Scope{Namespaces: []string{"team-a"}},
			nsLabels: map[string]string{"kubernetes.io/metadata.name": "team-b"}, wantNS: false, wantObj: true},
		{name: "namespace and selector ANDed", scope: registration.Scope{Namespaces: []string{"team-a"}, NamespaceSelector: "env=dev"},
			nsLabels: map[string]string{"kubernetes.io/metadata.name": "team-a"}, wantNS: false, wantObj: true},
		{name: "object selector", scope: registration.Scope{ObjectSelector: "app=web"},
			labels: map[string]string{"app": "db"}, wantNS: true, wantObj: false},
		{name: "bad object selector", scope: registration.Scope{ObjectSelector: "app in (("}, wantErr: `registration.Scope.ObjectSelector "app in ((": `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns, obj, err := scopeSelectors(tt.scope)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := selects(t, ns, tt.nsLabels); got != tt.wantNS {
				t.Errorf("namespace selector %+v selects %v: %v, want %v", ns, tt.nsLabels, got, tt.wantNS)
			}
			if got := selects(t, obj, tt.labels); got != tt.wantObj {
				t.Errorf("object selector %+v selects %v: %v, want %v", obj, tt.labels, got, tt.wantObj)
			}
		})
	}
}

func selects(t *testing.T, sel *metav1.LabelSelector, set map[string]string) bool {
	t.Helper()
	if sel == nil {
		return true
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatal(err)
	}
	return s.Matches(labels.Set(set))
}
