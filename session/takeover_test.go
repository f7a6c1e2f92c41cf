package session

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/manifests"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/takeover"
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
		{name: "no namespace to take", targets: []string{"deployment/a"}, namespaces: []string{"x", "y"}, err: `TakeOver "deployment/a": its namespace is unknown`},
		{name: "not a deployment", targets: []string{"ops/daemonset/a"}, err: "only a Deployment"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := Options{TakeOver: tt.targets, Scope: registration.Scope{Namespaces: tt.namespaces}}
			got, err := takeOverTargets(o, tt.m)
			if tt.err != "" {
				var fe *field.Error
				if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.As(err, &fe) || fe.Field != "session.Options.TakeOver" {
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

// TestTakeOverSplit: the session's copy of a taken-over configuration is
// not registered; its webhooks go into the operator's own, and the
// taken-over CRDs' conversions are redirected whatever the scope says.
func TestTakeOverSplit(t *testing.T) {
	cfg := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"kind": registration.KindValidatingHook, "metadata": map[string]any{"name": name},
			"webhooks": []any{map[string]any{"name": "v.io", "clientConfig": map[string]any{"url": "https://h/upstream/svc/shop/webhook-service/443/v"}}}}}
	}
	objs := &Objects{Configurations: &registration.Registration{Objects: []*unstructured.Unstructured{cfg("shop-validating-dev"), cfg("hookback-canary-dev")}},
		Redirect: func(string) bool { return false }}
	to := &takeOverRun{ops: []*takeover.Operator{{Configurations: []takeover.Configuration{{Kind: registration.KindValidatingHook, Name: "shop-validating", Webhooks: []string{"v.io"}}},
		CRDs: []string{"widgets.shop.io"}}}}
	to.split(objs, "dev")
	if n := len(objs.Configurations.Objects); n != 1 || objs.Configurations.Objects[0].GetName() != "hookback-canary-dev" {
		t.Errorf("registered %d configurations, want only the one not taken over", n)
	}
	if _, ok := to.redirects[registration.KindValidatingHook+"/shop-validating"]["v.io"]; !ok {
		t.Errorf("redirects %v: want the copy's webhook for the operator's configuration", to.redirects)
	}
	if !objs.Redirect("widgets.shop.io") || objs.Redirect("other.io") {
		t.Errorf("Redirect: want the taken-over CRD redirected and only it")
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
	if err == nil || !errors.As(err, &fe) || fe.Field != "session.Options.TakeOver" || !strings.Contains(err.Error(), "needs session.UserWebhooks.Upstream") {
		t.Errorf("--take-over without an upstream: %v, want a field error asking for one", err)
	}
}
