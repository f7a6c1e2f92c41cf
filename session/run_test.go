package session

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/rest"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/builtin/controllers"
	"github.com/hookback/hookback/builtin/webhooks"
	"github.com/hookback/hookback/certs"
	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/tunnel"
)

// startConfig is a start on a local cluster at 127.0.0.1 with one extra
// webhook the test template registers; its banner goes to out.
func startConfig(t *testing.T, out *syncBuffer) plan.Options {
	t.Helper()
	allow := admission.HandlerFunc(func(context.Context, admission.Request) admission.Response { return admission.Allowed("") })
	return resolved(plan.Options{Session: "unit", AdvertiseAddress: "127.0.0.1", Port: freePort(t), HealthAddress: "127.0.0.1:0",
		LeaseNamespace: "default", VerifyTimeout: 5 * time.Second,
		Template:       registration.Template{Default: []byte(testTemplate)},
		Certs:          certs.Options{Mode: certs.ModeSelfSigned, StateDir: t.TempDir()},
		Extra:          []admission.Webhook{{Name: "test", Path: "/test", Handler: allow}},
		WebhookOptions: webhooks.DefaultOptions(),
		Out:            out,
	})
}

// startUntilReady runs cfg on cl until the banner is out, and returns a stop that
// cancels the run and returns what it returned.
func startUntilReady(t *testing.T, cfg plan.Options, cl *kubeconfig.Cluster, out *syncBuffer) func() error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	c := completed(t, cfg)
	go func() { done <- runOn(ctx, c, cl, time.Now()) }()
	stop := func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(20 * time.Second):
			t.Fatal("the run did not stop within 20s of its cancel")
			return nil
		}
	}
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 20*time.Second, true,
		func(context.Context) (bool, error) {
			select {
			case err := <-done:
				return false, errors.Join(errors.New("the run ended before it was ready"), err)
			default:
				return strings.Contains(out.String(), "Stop with Ctrl-C"), nil
			}
		})
	if err != nil {
		cancel()
		t.Fatalf("no ready banner: %v\nbanner: %q", err, out.String())
	}
	return stop
}

// TestStartWritesInOrder runs start after the connection, from the
// certificate to deregistration, on fake clients whose apiserver calls the
// canary back over HTTPS: the Lease comes before any configuration, the
// canary after the configurations and only once it was called is the
// session ready; on stop the configurations go before the Lease.
func TestStartWritesInOrder(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, cfg *plan.Options)
		banner []string
		// ready acts on the ready run; after checks what the stopped run left.
		ready func(t *testing.T, dyn *dynamicfake.FakeDynamicClient)
		after func(t *testing.T, cfg plan.Options)
	}{{
		name:   "the test webhook alone",
		change: func(*testing.T, *plan.Options) {},
	}, {
		name: "built-ins, the inspector and a record directory",
		change: func(t *testing.T, cfg *plan.Options) {
			cfg.Webhooks = []string{webhooks.NamePodEviction, webhooks.NameNodeStatus}
			cfg.Controllers = []string{controllers.ExecRBACName}
			cfg.Inspector = plan.InspectorConfig{Address: "127.0.0.1:0"}
			cfg.RecordDir = t.TempDir()
		},
		banner: []string{"inspect:  http://127.0.0.1:", "kubectl"},
		ready: func(t *testing.T, dyn *dynamicfake.FakeDynamicClient) {
			cfg, err := dyn.Tracker().Get(validatingGVR, "", "test-unit")
			if err != nil {
				t.Fatal(err)
			}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "reviewed", Namespace: "default"}}
			if err := callWebhook(cfg.(*unstructured.Unstructured), cm); err != nil {
				t.Fatalf("the apiserver's call of the test webhook: %v", err)
			}
		},
		after: func(t *testing.T, cfg plan.Options) {
			files, err := os.ReadDir(cfg.RecordDir)
			if err != nil || len(files) == 0 {
				t.Errorf("the review was not recorded in %s: %v", cfg.RecordDir, err)
			}
		},
	}, {
		name: "your webhook, from its manifest, forwarded to your server",
		change: func(t *testing.T, cfg *plan.Options) {
			up := upstreamServer(t)
			cfg.User = plan.UserWebhooks{Manifests: []string{filepath.Join("testdata", "user", "webhooks.yaml")},
				Upstreams: []plan.Upstream{{URL: up.URL}}, UpstreamInsecure: true}
		},
		ready: func(t *testing.T, dyn *dynamicfake.FakeDynamicClient) {
			list, err := dyn.Resource(validatingGVR).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range list.Items {
				if o := &list.Items[i]; o.GetName() != "test-unit" && !strings.HasPrefix(o.GetName(), "hookback-canary") {
					cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "yours", Namespace: "default"}}
					if err := callWebhook(o, cm); err != nil {
						t.Fatalf("the apiserver's call of your webhook %s: %v", o.GetName(), err)
					}
					return
				}
			}
			t.Fatal("none of your validating webhooks is registered")
		},
		banner: []string{"upstream"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := &journal{}
			cs, dyn := newFakeClients(t, j)
			callsBack(t, j, cs, dyn)
			out := &syncBuffer{}
			cfg := startConfig(t, out)
			tt.change(t, &cfg)
			stop := startUntilReady(t, cfg, &kubeconfig.Cluster{Config: localConfig(), Client: cs, Watch: cs, Dynamic: dyn}, out)
			j.add("ready")
			if tt.ready != nil {
				tt.ready(t, dyn)
			}
			if err := stop(); err != nil {
				t.Fatalf("a cancelled run returned %v, want nil", err)
			}
			order := []string{"create lease", "apply test-unit", "apply hookback-canary-unit", "canary called",
				"delete hookback-canary-unit", "ready", "delete test-unit", "delete lease"}
			last := -1
			for _, want := range order {
				i := j.index(want)
				if i < 0 || i < last {
					t.Fatalf("%q missing or out of order in %q", want, j.all())
				}
				last = i
			}
			if tt.after != nil {
				tt.after(t, cfg)
			}
			banner := out.String()
			for _, want := range append([]string{
				"verified: the apiserver called back", "url:      https://127.0.0.1:", "session:  unit",
				"webhook:  ", "hookback cleanup --session unit",
			}, tt.banner...) {
				if !strings.Contains(banner, want) {
					t.Errorf("the banner does not say %q:\n%s", want, banner)
				}
			}
		})
	}
}

// TestStartTunnelNeverAttaches: with --tunnel, start deploys the relay
// once the Lease is the session's and registers nothing until the tunnel
// attaches; a relay that never comes up fails start within the attach
// timeout, saying how to look at it, and the relay goes again before the
// Lease.
func TestStartTunnelNeverAttaches(t *testing.T) {
	j := &journal{}
	cs, dyn := newFakeClients(t, j)
	cfg := startConfig(t, &syncBuffer{})
	cfg.AdvertiseAddress = ""
	cfg.Tunnel = tunnel.Config{Enabled: true, Namespace: "tun", Image: "relay:test", AttachTimeout: 300 * time.Millisecond}
	// Nothing listens at port 1: the port-forward to the relay is refused.
	kc := localConfig()
	kc.Rest = &rest.Config{Host: "https://127.0.0.1:1"}
	err := runOn(context.Background(), completed(t, cfg), &kubeconfig.Cluster{Config: kc, Client: cs, Watch: cs, Dynamic: dyn}, time.Now())
	if err == nil || !strings.Contains(err.Error(), "did not attach within 300ms") || !strings.Contains(err.Error(), "kubectl -n tun describe pod") {
		t.Fatalf("runOn = %v, want the attach timeout and how to look at the relay", err)
	}
	relay := tunnel.RelayName("unit")
	order := []string{"create lease", "apply " + relay, "delete " + relay, "delete lease"}
	last := -1
	for _, want := range order {
		i := j.index(want)
		if i < 0 || i < last {
			t.Fatalf("%q missing or out of order in %q", want, j.all())
		}
		last = i
	}
	if j.index("apply test-unit") >= 0 {
		t.Errorf("registered before the tunnel attached: %q", j.all())
	}
}

// upstreamServer is your webhook server: it allows every review, and the
// test fails unless hookback forwarded at least one to it.
func upstreamServer(t *testing.T) *httptest.Server {
	t.Helper()
	var calls atomic.Int32
	srv := reviewServer(t, true, &calls)
	t.Cleanup(func() {
		if calls.Load() == 0 {
			t.Error("your webhook server was never called")
		}
	})
	return srv
}

// TestStartReportsALateAnswer: your webhook answering after the apiserver
// stopped waiting (timeoutSeconds) is still read and kept in --record-dir,
// marked late.
func TestStartReportsALateAnswer(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		<-release // until the apiserver stopped waiting
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(review)
	}))
	t.Cleanup(up.Close)
	t.Cleanup(free)
	j := &journal{}
	cs, dyn := newFakeClients(t, j)
	callsBack(t, j, cs, dyn)
	out := &syncBuffer{}
	cfg := startConfig(t, out)
	cfg.RecordDir = t.TempDir()
	cfg.User = plan.UserWebhooks{Manifests: []string{filepath.Join("testdata", "user", "webhooks.yaml")},
		Upstreams: []plan.Upstream{{URL: up.URL}}, UpstreamInsecure: true, Timeout: time.Second, LateAnswerTimeout: 10 * time.Second}
	stop := startUntilReady(t, cfg, &kubeconfig.Cluster{Config: localConfig(), Client: cs, Watch: cs, Dynamic: dyn}, out)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("run = %v, want a clean stop", err)
		}
	}()
	o, err := dyn.Tracker().Get(validatingGVR, "", "yours-unit")
	if err != nil {
		t.Fatalf("your configuration is not registered: %v", err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "slow", Namespace: "default"}}
	// What the apiserver gets back does not matter here; the late answer does.
	_ = callWebhook(o.(*unstructured.Unstructured), cm)
	free()
	waitFor(t, "the late answer recorded", func() bool {
		var late bool
		_ = filepath.WalkDir(cfg.RecordDir, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				b, _ := os.ReadFile(path)
				late = late || strings.Contains(string(b), "stopped waiting")
			}
			return nil
		})
		return late
	})
}

// reviewServer answers every AdmissionReview with allowed and counts them.
func reviewServer(t *testing.T, allowed bool, calls *atomic.Int32) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		calls.Add(1)
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: allowed}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(review)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestStartShadow: with --shadow, each review goes to your webhook and to
// the deployed one, and where they differ the difference is recorded.
func TestStartShadow(t *testing.T) {
	var yours, deployed atomic.Int32
	up := reviewServer(t, true, &yours)
	dep := reviewServer(t, false, &deployed)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	pemCA := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: dep.Certificate().Raw})
	if err := os.WriteFile(ca, pemCA, 0o600); err != nil {
		t.Fatal(err)
	}
	j := &journal{}
	cs, dyn := newFakeClients(t, j)
	callsBack(t, j, cs, dyn)
	out := &syncBuffer{}
	cfg := startConfig(t, out)
	cfg.RecordDir = t.TempDir()
	cfg.Inspector = plan.InspectorConfig{Address: "127.0.0.1:0"}
	cfg.User = plan.UserWebhooks{Manifests: []string{filepath.Join("testdata", "user", "webhooks.yaml")},
		Upstreams: []plan.Upstream{{URL: up.URL}}, UpstreamInsecure: true, Shadow: plan.ShadowConfig{Target: dep.URL, CAFile: ca}}
	stop := startUntilReady(t, cfg, &kubeconfig.Cluster{Config: localConfig(), Client: cs, Watch: cs, Dynamic: dyn}, out)
	o, err := dyn.Tracker().Get(validatingGVR, "", "yours-unit")
	if err != nil {
		t.Fatalf("your configuration is not registered: %v", err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "compared", Namespace: "default"}}
	if err := callWebhook(o.(*unstructured.Unstructured), cm); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the difference recorded", func() bool {
		files, _ := filepath.Glob(filepath.Join(cfg.RecordDir, "*_shadow.json"))
		return len(files) > 0
	})
	// The inspector shows the comparison on the review's own row, with
	// your webhook's decision: one entry, not one more per difference.
	var page string
	waitFor(t, "the review in the inspector", func() bool {
		page = inspectorPage(t, out.String())
		return strings.Contains(page, `<tr class="review`)
	})
	if n := strings.Count(page, `<tr class="review`); n != 1 {
		t.Errorf("%d rows, want the one review", n)
	}
	if want := `<td data-label="Shadow" class="shadow s-differs">differs: decision: yours allowed, deployed denied`; !strings.Contains(page, want) ||
		!strings.Contains(page, `class="review d-allowed"`) {
		t.Errorf("the inspector's row lacks your decision and %q:\n%s", want, page)
	}
	if err := stop(); err != nil {
		t.Errorf("run = %v, want a clean stop", err)
	}
	if yours.Load() == 0 || deployed.Load() == 0 {
		t.Errorf("calls: yours %d, deployed %d; want both called", yours.Load(), deployed.Load())
	}
}
