package chain

import (
	"context"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

// TestInformerCatalog: the catalog follows the cluster's configurations,
// sorted as the apiserver sorts them, and is rebuilt after a change.
func TestInformerCatalog(t *testing.T) {
	cs := fake.NewClientset(&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "b"}},
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "a"}})
	f := informers.NewSharedInformerFactory(cs, 0)
	c := NewInformerCatalog(f)
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); f.Shutdown() }()
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	names := func() string {
		s := ""
		for _, m := range c.Catalog().Mutating {
			s += m.Name
		}
		return s
	}
	if got := names(); got != "ab" {
		t.Fatalf("configurations %q, want ab", got)
	}
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx,
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "0"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for names() != "0ab" {
		if time.Now().After(deadline) {
			t.Fatalf("configurations %q after a create, want 0ab", names())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
