package registration

import (
	"context"
	"log/slog"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDeregisterKeepsTakenOver: a configuration the session took over
// (start --take-over) carries the session's labels but is someone else's:
// deregistration and cleanup never delete it, even when giving it back
// failed.
func TestDeregisterKeepsTakenOver(t *testing.T) {
	labels := map[string]string{LabelManagedBy: ManagedByValue, LabelSession: "s1"}
	lent := foreign(KindValidatingHook, "shop-validating-webhook-configuration", labels)
	lent.SetAnnotations(map[string]string{AnnotationTakeOver: `{"webhooks":[]}`})
	mine := foreign(KindValidatingHook, "hookback-s1", labels)
	cs, dyn := policyClients(lent, mine)
	r := &Registrar{Client: cs, Dynamic: dyn, Session: "s1", Log: slog.New(slog.DiscardHandler)}
	if err := r.Deregister(context.Background()); err != nil {
		t.Fatal(err)
	}
	list, err := dyn.Resource(configResources[KindValidatingHook]).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].GetName() != lent.GetName() {
		t.Fatalf("left %v, want only the taken-over configuration", list.Items)
	}
}
