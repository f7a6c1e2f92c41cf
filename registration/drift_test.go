package registration

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/hookback/hookback/internal/syncbuf"
)

// driftRig is a Drift over a fake clientset whose Reapply writes the
// desired configuration back under hookback's field manager.
type driftRig struct {
	cs      *fake.Clientset
	d       *Drift
	log     *syncbuf.Buffer
	mu      sync.Mutex
	applied int
}

func newDriftRig(t *testing.T) *driftRig {
	t.Helper()
	r := &driftRig{log: &syncbuf.Buffer{}}
	policy := admissionv1.Ignore
	vwc := &admissionv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "hookback-validating-dev", Labels: map[string]string{LabelManagedBy: ManagedByValue, LabelSession: "dev"}},
		Webhooks:   []admissionv1.ValidatingWebhook{{Name: "pod-name.hookback.dev", FailurePolicy: &policy}},
	}
	r.cs = fake.NewClientset(vwc)
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(vwc)
	if err != nil {
		t.Fatal(err)
	}
	want := &unstructured.Unstructured{Object: m}
	want.SetKind(KindValidatingHook)
	r.d = &Drift{Client: r.cs, Session: "dev", RestoreDir: t.TempDir(), Kubectl: "kubectl",
		Log: slog.New(slog.NewTextHandler(r.log, nil)),
		Reapply: func(ctx context.Context, o *unstructured.Unstructured) error {
			r.mu.Lock()
			r.applied++
			r.mu.Unlock()
			c := vwc.DeepCopy()
			c.ManagedFields = nil
			_, err := r.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, c, metav1.CreateOptions{FieldManager: FieldManager})
			if err != nil {
				_, err = r.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(ctx, c, metav1.UpdateOptions{FieldManager: FieldManager})
			}
			return err
		}}
	r.d.Set([]*unstructured.Unstructured{want})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.d.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

func (r *driftRig) waitLog(t *testing.T, want ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if s := r.log.String(); containsAll(s, want...) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("log lacks %q:\n%s", want, r.log.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func containsAll(s string, want ...string) bool {
	for _, w := range want {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

// edit flips failurePolicy as kubectl edit would, under field manager who.
func (r *driftRig) edit(t *testing.T, who string) {
	t.Helper()
	ctx := context.Background()
	api := r.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := api.Get(ctx, "hookback-validating-dev", metav1.GetOptions{})
		if err == nil {
			p := admissionv1.Fail
			if *c.Webhooks[0].FailurePolicy == p {
				p = admissionv1.Ignore
			}
			c.Webhooks[0].FailurePolicy = &p
			if _, err = api.Update(ctx, c, metav1.UpdateOptions{FieldManager: who}); err == nil {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestDriftReappliesOnceThenLeavesIt(t *testing.T) {
	r := newDriftRig(t)
	// Let the informer list first: an edit before it is not an update.
	r.waitSynced(t)
	r.edit(t, "kubectl-edit")
	r.waitLog(t, "changed by someone else; re-applied", "fields=webhooks[pod-name.hookback.dev].failurePolicy", "manager=kubectl-edit")
	// Our own re-apply is not taken for someone else's.
	if err := r.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), "hookback-validating-dev", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.waitLog(t, "deleted (or its hookback labels removed) by someone else a second time", "restore=\"kubectl apply --server-side --force-conflicts --field-manager=hookback -f ")
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.applied != 1 {
		t.Errorf("re-applied %d times, want once", r.applied)
	}
	if n := strings.Count(r.log.String(), "re-applied"); n != 1 {
		t.Errorf("%d re-applied lines, want 1:\n%s", n, r.log.String())
	}
}

func TestDriftIgnoresOwnChanges(t *testing.T) {
	r := newDriftRig(t)
	r.waitSynced(t)
	r.edit(t, FieldManager) // hookback's own manager: a template re-apply
	r.edit(t, "argocd-controller")
	// Events arrive in order: once the second is handled, the first was.
	r.waitLog(t, "manager=argocd-controller")
	if n := strings.Count(r.log.String(), "level="); n != 1 {
		t.Errorf("%d log lines, want only the one about argocd-controller:\n%s", n, r.log.String())
	}
}

// waitSynced waits until the informer has listed: an edit it then sees is
// an update.
func (r *driftRig) waitSynced(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var watching bool
		for _, a := range r.cs.Actions() {
			if a.GetVerb() == "watch" && a.GetResource().Resource == "validatingwebhookconfigurations" {
				watching = true
			}
		}
		if watching {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the informer never watched")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
