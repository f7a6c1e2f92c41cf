package session

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/assembly"
	"github.com/hookback/hookback/builtin/controllers"
	"github.com/hookback/hookback/builtin/webhooks"
	"github.com/hookback/hookback/certs"
	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/server"
)

// journal records what happened, in order, across the fake clients and the
// fake controller.
type journal struct {
	mu    sync.Mutex
	steps []string
}

func (j *journal) add(s string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.steps = append(j.steps, s)
}

func (j *journal) all() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.steps)
}

// index is the position of the first step starting with prefix, or -1.
func (j *journal) index(prefix string) int {
	return slices.IndexFunc(j.all(), func(s string) bool { return strings.HasPrefix(s, prefix) })
}

// fakeController records when it runs and stops.
type fakeController struct{ j *journal }

func (c fakeController) Name() string { return "fake" }
func (c fakeController) Run(ctx context.Context, _ int) error {
	c.j.add("controller started")
	<-ctx.Done()
	c.j.add("controller stopped")
	return nil
}

var _ controllers.Controller = fakeController{}

var (
	mutatingGVR   = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}
	validatingGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
)

const testTemplate = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: test
webhooks:
  - name: test.hookback.dev
    clientConfig:
      url: {{ .URL }}/test
      caBundle: {{ .CABundle }}
    rules:
      - apiGroups: [""]
        apiVersions: ["v1"]
        operations: ["CREATE"]
        resources: ["pods"]
    failurePolicy: Ignore
    sideEffects: None
    admissionReviewVersions: ["v1"]
`

// newTestRun wires a run on fake clients: server-side apply is stored by a
// reactor (the fake dynamic client has none), and every write is journalled.
func newTestRun(t *testing.T, tmpl string, objects ...runtime.Object) (*run, *journal, *fake.Clientset) {
	t.Helper()
	j := &journal{}
	cs, dyn := newFakeClients(t, j, objects...)

	log := slog.New(slog.DiscardHandler)
	crt, err := certs.NewSelfSigned(context.Background(), certs.TLSOptions{StateDir: t.TempDir(), Host: "127.0.0.1", Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(crt.Stop)
	canary := registration.NewCanary()
	hooks := []admission.Webhook{
		{Name: "test", Path: "/test", Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response { return admission.Allowed("") })},
		{Name: "canary", Path: registration.CanaryPath, Handler: canary},
	}
	srv, err := server.NewServer(server.ServerOptions{Address: "127.0.0.1:0", HealthAddress: "127.0.0.1:0",
		TLS: crt.TLSConfig(), Webhooks: hooks, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	cfg := resolved(plan.Options{Session: "unit", LeaseNamespace: "default", LeaseDuration: 30 * time.Second,
		VerifyTimeout: 300 * time.Millisecond, Template: registration.Template{Default: []byte(tmpl)}, Log: log,
		Extra: hooks[:1], WebhookOptions: webhooks.DefaultOptions()})
	p := &assembly.Parts{Webhooks: hooks[:1], Controllers: []controllers.Controller{fakeController{j}}}
	r := newRun(cfg, &kubeconfig.Cluster{Config: localConfig(), Client: cs, Watch: cs, Dynamic: dyn}, srv, canary, crt, p, "https://"+srv.Addr().String())
	return r, j, cs
}

// Without an apiserver nothing calls the canary: verification fails, and a
// run that requires it undoes everything in order.
func TestRunUndoesInOrderWhenVerificationFails(t *testing.T) {
	r, j, cs := newTestRun(t, testTemplate)
	err := r.run(context.Background(), time.Now())
	if !errors.Is(err, registration.ErrVerify) {
		t.Fatalf("run = %v, want ErrVerify", err)
	}
	steps := j.all()
	if j.index("controller started") < j.index("create lease") {
		t.Errorf("a controller started before the Lease was taken: %q", steps)
	}
	order := []string{"create lease", "apply test-unit", "apply hookback-canary-unit",
		"delete hookback-canary-unit", "delete test-unit", "controller stopped", "delete lease"}
	last := -1
	for _, want := range order {
		i := j.index(want)
		if i < 0 || i < last {
			t.Fatalf("step %q missing or out of order in %q", want, steps)
		}
		last = i
	}
	if _, err := cs.CoordinationV1().Leases("default").Get(context.Background(), "hookback-unit", metav1.GetOptions{}); err == nil {
		t.Error("the Lease survived the run")
	}
}

// A session held by another live process is refused before anything is
// written or started, and the holder's Lease stays.
func TestRunRefusesASessionInUse(t *testing.T) {
	held := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "hookback-unit", Namespace: "default"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("another-host/42"), LeaseDurationSeconds: ptr.To[int32](3600),
			RenewTime: &metav1.MicroTime{Time: time.Now()}},
	}
	r, j, cs := newTestRun(t, testTemplate, held)
	err := r.run(context.Background(), time.Now())
	if !errors.Is(err, registration.ErrSessionInUse) || !strings.Contains(err.Error(), "pick another registration.Heartbeat.Session") {
		t.Fatalf("run = %v, want ErrSessionInUse naming the fix", err)
	}
	for _, never := range []string{"apply", "controller started", "delete", "update lease", "create lease"} {
		if j.index(never) >= 0 {
			t.Errorf("a refused run did %q: %q", never, j.all())
		}
	}
	if _, err := cs.CoordinationV1().Leases("default").Get(context.Background(), "hookback-unit", metav1.GetOptions{}); err != nil {
		t.Errorf("the holder's Lease is gone: %v", err)
	}
}

// A template that renders something hookback refuses stops the run after the
// Lease was taken: nothing is applied, and the Lease is released.
func TestRunStopsOnABadTemplate(t *testing.T) {
	r, j, _ := newTestRun(t, strings.Replace(testTemplate, "/test", "/not-served", 1))
	err := r.run(context.Background(), time.Now())
	if !errors.Is(err, registration.ErrTemplate) {
		t.Fatalf("run = %v, want ErrTemplate", err)
	}
	if j.index("apply") >= 0 {
		t.Errorf("applied despite the bad template: %q", j.all())
	}
	if j.index("controller stopped") < 0 || j.index("delete lease") < j.index("controller stopped") {
		t.Errorf("want the controllers stopped, then the Lease released: %q", j.all())
	}
}

// A cancelled context is a clean stop: nil, everything undone.
func TestRunStopsCleanlyOnCancel(t *testing.T) {
	r, j, _ := newTestRun(t, testTemplate)
	r.cfg.NoVerify = true
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.run(ctx, time.Now()) }()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return j.index("delete hookback-canary-unit") >= 0, nil })
	if err != nil {
		t.Fatalf("the run never got past verification: %q", j.all())
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run after cancel = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not stop after cancel")
	}
	if j.index("delete test-unit") < 0 || j.index("delete lease") < j.index("controller stopped") {
		t.Errorf("not undone in order: %q", j.all())
	}
}
