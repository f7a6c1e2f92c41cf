package plan

import (
	"errors"
	"strings"
	"testing"

	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/manifests"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/takeover"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestTakeOverTargets(t *testing.T) {
	svc := func(ns string) map[string]any {
		return map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
			"metadata": map[string]any{"name": "v"}, "webhooks": []any{map[string]any{"name": "v.io",
				"clientConfig": map[string]any{"service": map[string]any{"namespace": ns, "name": "webhook-service"}}}}}
	}
	project := manifests.Sort([]manifests.Document{{Source: "config/default", Index: 1, Object: &unstructured.Unstructured{Object: svc("shop-system")}}})
	for _, tt := range []struct {
		name       string
		targets    []string
		namespaces []string
		m          *manifests.Set
		want       []takeover.Target
		err        string
	}{
		{name: "namespace written", targets: []string{"ops/deployment/a"}, want: []takeover.Target{{Namespace: "ops", Name: "a"}}},
		{name: "the one -n", targets: []string{"deployment/a"}, namespaces: []string{"ops"}, m: project, want: []takeover.Target{{Namespace: "ops", Name: "a"}}},
		{name: "the manifests' namespace", targets: []string{"deploy/a"}, m: project, want: []takeover.Target{{Namespace: "shop-system", Name: "a"}}},
		{name: "no namespace to take", targets: []string{"deployment/a"}, namespaces: []string{"x", "y"}, err: `plan.Options.TakeOver "deployment/a": its namespace is unknown`},
		{name: "not a deployment", targets: []string{"ops/daemonset/a"}, err: "only a Deployment"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := Options{TakeOver: tt.targets, Scope: registration.Scope{Namespaces: tt.namespaces}}
			got, err := TakeOverTargets(o, tt.m)
			if tt.err != "" {
				var fe *field.Error
				if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.As(err, &fe) || fe.Field != "plan.Options.TakeOver" {
					t.Fatalf("takeOverTargets = %v, %v; want a field error %q", got, err, tt.err)
				}
				return
			}
			if err != nil || len(got) != len(tt.want) || got[0] != tt.want[0] {
				t.Fatalf("takeOverTargets = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestTakeOverValidate(t *testing.T) {
	base := Options{TakeOver: []string{"ops/deployment/a"}}
	withUp := base
	withUp.User = UserWebhooks{Upstream: []string{"https://127.0.0.1:9443"}}
	if err := errors.Join(takeOverUser(withUp).Validate(), validateTakeOver(withUp)); err != nil {
		t.Errorf("--take-over with --upstream and no manifests: %v, want valid (the operator's configurations are read from the cluster)", err)
	}
	err := validateTakeOver(base)
	var fe *field.Error
	if err == nil || !errors.As(err, &fe) || fe.Field != "plan.Options.TakeOver" || !strings.Contains(err.Error(), "needs plan.UserWebhooks.Upstream") {
		t.Errorf("--take-over without an upstream: %v, want a field error asking for one", err)
	}
}
