package session

import (
	"errors"
	"strings"
	"testing"

	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/takeover"
)

// TestConfirmTakeOver: off a local cluster a take-over needs
// TakeOverConfirm, and the refusal names the Deployment, its webhook
// configurations with the namespaces they serve, and its CRDs.
func TestConfirmTakeOver(t *testing.T) {
	ops := []*takeover.Operator{{Target: takeover.Target{Namespace: "shop-system", Name: "shop-controller-manager"}, Replicas: 2,
		Configurations: []takeover.Configuration{{Kind: registration.KindValidatingHook, Name: "shop-validating-webhook-configuration",
			Webhooks: []string{"vwidget.shop.io"}, Namespaces: []string{"every namespace"}}},
		CRDs: []string{"widgets.shop.io"}}}
	for _, tt := range []struct {
		name             string
		ops              []*takeover.Operator
		local, confirmed bool
		want             []string // "" for none: no error
	}{
		{name: "local cluster", ops: ops, local: true},
		{name: "confirmed", ops: ops, confirmed: true},
		{name: "nothing taken over", ops: nil},
		{name: "shared cluster, not confirmed", ops: ops, want: []string{
			"refusing to take over on a cluster that is not local (server https://k8s.example.com:6443 is not on this machine)",
			"Deployment shop-system/deployment/shop-controller-manager paused (2 replicas to 0)",
			"ValidatingWebhookConfiguration shop-validating-webhook-configuration (vwidget.shop.io) served by this machine for objects in every namespace",
			"CustomResourceDefinition widgets.shop.io: its conversion served by this machine for every reader",
			"add plan.Options.TakeOverConfirm"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := confirmTakeOver(tt.ops, tt.local, "server https://k8s.example.com:6443 is not on this machine", tt.confirmed)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("confirmTakeOver = %v, want nil", err)
				}
				return
			}
			var fe *field.Error
			if !errors.As(err, &fe) || fe.Field != "plan.Options.TakeOverConfirm" {
				t.Fatalf("confirmTakeOver = %v, want a field error advising plan.Options.TakeOverConfirm", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}
