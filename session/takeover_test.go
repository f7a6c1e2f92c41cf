package session

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/takeover"
)

// TestTakeOverSplit: the session's copy of a taken-over configuration is
// not registered; its webhooks go into the operator's own, and the
// taken-over CRDs' conversions are redirected whatever the scope says.
func TestTakeOverSplit(t *testing.T) {
	cfg := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"kind": registration.KindValidatingHook, "metadata": map[string]any{"name": name},
			"webhooks": []any{map[string]any{"name": "v.io", "clientConfig": map[string]any{"url": "https://h/upstream/svc/shop/webhook-service/443/v"}}}}}
	}
	objs := &plan.Objects{Configurations: &registration.Registration{Objects: []*unstructured.Unstructured{cfg("shop-validating-dev"), cfg("hookback-canary-dev")}},
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
