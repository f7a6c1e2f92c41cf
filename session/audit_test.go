package session

import (
	"os"
	"slices"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hookback/hookback/audit"
	"github.com/hookback/hookback/builtin/webhooks"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/registration"
)

// TestAuditWebhooks: audit sees the webhooks as start would register them,
// the scope ANDed in, each tied to the handler of its path.
func TestAuditWebhooks(t *testing.T) {
	tmpl, err := os.ReadFile("../webhook-url.yaml.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		scope     registration.Scope
		wantNSSel bool
	}{
		{name: "unscoped", wantNSSel: false},
		{name: "namespace scope", scope: registration.Scope{Namespaces: []string{"team-a"}}, wantNSSel: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := plan.Options{Session: "s", Webhooks: []string{"pod-name", "node-status"}, Template: registration.Template{Default: tmpl}, Scope: tt.scope, WebhookOptions: webhooks.DefaultOptions()}
			hooks, err := auditWebhooks(completed(t, cfg))
			if err != nil {
				t.Fatal(err)
			}
			names := map[string]audit.Webhook{}
			for _, h := range hooks {
				if h.Handler == nil {
					t.Errorf("webhook %s has no handler", h.Name)
				}
				names[h.Name] = h
			}
			pod, ok := names["pod-name.hookback.dev"]
			if !ok || !slices.Contains(pod.Rules[0].Operations, admissionregistrationv1.Create) || pod.Mutating {
				t.Fatalf("pod-name: %+v", pod)
			}
			if node, ok := names["node-status.hookback.dev"]; tt.wantNSSel == ok || (ok && !node.Mutating) {
				t.Errorf("node-status present %v (a namespace scope drops cluster-scoped webhooks): %+v", ok, node)
			}
			sel := pod.NamespaceSelector
			named := sel != nil && slices.ContainsFunc(sel.MatchExpressions, func(r metav1.LabelSelectorRequirement) bool {
				return slices.Contains(r.Values, "team-a")
			})
			if named != tt.wantNSSel {
				t.Errorf("pod-name namespaceSelector %+v: names team-a %v, want %v", sel, named, tt.wantNSSel)
			}
		})
	}
}
