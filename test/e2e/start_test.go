package e2e

import (
	"context"
	"encoding/base64"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// markArgs run hookback with only the e2e handler, registered by the e2e
// template, so these tests exercise serving and registration alone.
func markArgs(extra ...string) []string {
	return append([]string{"--webhooks", "none", "--controllers", "none", "--template", repoPath("testdata", "e2e", "mark.yaml.tmpl")}, extra...)
}

// admitMarked creates a ConfigMap the e2e webhook selects and reports
// whether the webhook labelled it.
func admitMarked(t *testing.T, ns, session string) bool {
	t.Helper()
	cm, err := env.client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "mark-", Labels: map[string]string{"hookback.dev/e2e": session}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create ConfigMap: %v", err)
	}
	return cm.Labels["hookback.dev/e2e-seen"] == "true"
}

func TestStartRegistersServesAndCleansUp(t *testing.T) {
	ns := namespace(t)
	p := startMark(t)
	p.ready(t)
	ctx := context.Background()

	name := "hookback-e2e-" + p.session
	mwc, err := env.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("configuration %s not registered: %v", name, err)
	}
	if mwc.Labels["app.kubernetes.io/managed-by"] != "hookback" || mwc.Labels["hookback.dev/session"] != p.session {
		t.Errorf("labels = %v", mwc.Labels)
	}
	cc := mwc.Webhooks[0].ClientConfig
	if want := "https://" + net.JoinHostPort(advertisedHost(t, p), itoa(p.port)) + "/e2e-mark"; cc.URL == nil || *cc.URL != want {
		t.Errorf("url = %v, want %s", cc.URL, want)
	}
	if !strings.Contains(string(cc.CABundle), "BEGIN CERTIFICATE") {
		t.Errorf("caBundle is not a PEM CA: %q", base64.StdEncoding.EncodeToString(cc.CABundle)[:20])
	}
	if !strings.Contains(p.stdout.String(), "hookback is ready") || !strings.Contains(p.stdout.String(), "verified") {
		t.Errorf("no ready banner:\n%s", p.stdout.String())
	}
	if !admitMarked(t, ns, p.session) {
		t.Fatal("the apiserver did not call the e2e webhook: ConfigMap not labelled")
	}
	// The log line and the metrics follow the answer (admissionhttp.Afterwards).
	p.whWaitLogLine(t, "webhook=e2e-mark resource=configmaps operation=CREATE")
	var metrics string
	eventually(t, "the admission in /metrics", func(context.Context) (bool, error) {
		metrics = get(t, "http://"+p.health+"/metrics")
		return strings.Contains(metrics, `hookback_admission_duration_seconds_count{webhook="e2e-mark"} 1`), nil
	})
	for _, want := range []string{`hookback_admission_requests_total{decision="allowed",webhook="e2e-mark"} 1`, `hookback_admission_duration_seconds_count{webhook="e2e-mark"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	p.signal(syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d\n%s", code, p.stderr.String())
	}
	if n, err := sessionObjects(ctx, p.session); err != nil || n != 0 {
		t.Fatalf("after SIGTERM %d objects of the session remain (err %v)", n, err)
	}
	if admitMarked(t, ns, p.session) {
		t.Error("webhook still called after deregistration")
	}
}

func TestCrashedSessionIsCleanedUp(t *testing.T) {
	ctx := context.Background()
	crashed := startMark(t, "--lease-duration", "2s")
	crashed.ready(t)
	crashed.signal(syscall.SIGKILL)
	crashed.wait(t)
	if n, _ := sessionObjects(ctx, crashed.session); n == 0 {
		t.Fatal("kill -9 left nothing behind; the test proves nothing")
	}
	eventually(t, "the crashed session's Lease to expire", func(ctx context.Context) (bool, error) {
		l, err := env.client.CoordinationV1().Leases("default").Get(ctx, "hookback-"+crashed.session, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return l.Spec.RenewTime.Add(2 * time.Second).Before(time.Now()), nil
	})

	next := startMark(t)
	next.ready(t)
	if n, err := sessionObjects(ctx, crashed.session); err != nil || n != 0 {
		t.Fatalf("next start left %d objects of the crashed session (err %v)", n, err)
	}
	// The removal is logged by whichever run found the dead session first:
	// normally next, but any concurrent start or cleanup may beat it.
	if !strings.Contains(next.stderr.String(), "session="+crashed.session) {
		t.Logf("another run removed the crashed session before this one did")
	}
}

func TestCleanupRemovesKilledSession(t *testing.T) {
	ctx := context.Background()
	p := startMark(t)
	p.ready(t)
	p.signal(syscall.SIGKILL)
	p.wait(t)
	out, errOut, code := hookback(t, env.kubeconfig, "cleanup", "--session", p.session)
	if code != 0 || !strings.Contains(out, p.session) {
		t.Fatalf("cleanup exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if n, err := sessionObjects(ctx, p.session); err != nil || n != 0 {
		t.Fatalf("%d objects remain (err %v)", n, err)
	}
}

func TestWrongAdvertiseAddressIsDiagnosed(t *testing.T) {
	// 127.0.0.2 is loopback, so the apiserver can dial it, but hookback only
	// listens on 127.0.0.1: the apiserver's connection is refused.
	p := startMark(t, "--advertise-address", "127.0.0.2", "--bind-address", "127.0.0.1", "--verify-timeout", "20s")
	if code := p.wait(t); code == 0 {
		t.Fatal("start succeeded with an unreachable advertise address")
	}
	stderr := p.stderr.String()
	if !strings.Contains(stderr, "connection refused") || !strings.Contains(stderr, "--advertise-address") {
		t.Errorf("no connection-refused diagnosis:\n%s", stderr)
	}
	if n, err := sessionObjects(context.Background(), p.session); err != nil || n != 0 {
		t.Fatalf("%d objects left registered (err %v)", n, err)
	}
}

// TestStartDefaultsRegisterEveryBuiltin runs start as a new user would, with
// no selection flags: every built-in webhook is registered and verified.
func TestStartDefaultsRegisterEveryBuiltin(t *testing.T) {
	p := start(t)
	p.ready(t)
	ctx := context.Background()
	a := env.client.AdmissionregistrationV1()
	m, err := a.MutatingWebhookConfigurations().Get(ctx, "hookback-mutating-"+p.session, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := a.ValidatingWebhookConfigurations().Get(ctx, "hookback-validating-"+p.session, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, w := range m.Webhooks {
		names = append(names, w.Name)
	}
	for _, w := range v.Webhooks {
		names = append(names, w.Name)
	}
	want := "pod-lifespan.hookback.dev pod-sidecar.hookback.dev node-status.hookback.dev pod-name.hookback.dev pod-eviction.hookback.dev"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("registered webhooks = %s, want %s", got, want)
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if n, err := sessionObjects(ctx, p.session); err != nil || n != 0 {
		t.Fatalf("%d objects of the session remain (err %v)", n, err)
	}
}

func TestNoVerifyKeepsRunningAndSaysWhy(t *testing.T) {
	p := startMark(t, "--advertise-address", "127.0.0.2", "--bind-address", "127.0.0.1", "--no-verify")
	p.ready(t)
	if !strings.Contains(p.stdout.String(), "NOT verified") {
		t.Errorf("banner does not say the run is unverified:\n%s", p.stdout.String())
	}
	if !strings.Contains(p.stderr.String(), "connection refused") {
		t.Errorf("no diagnosis logged:\n%s", p.stderr.String())
	}
	// The library's diagnosis names fields; the CLI's log shows its flags.
	if log := p.stderr.String(); !strings.Contains(log, "set --advertise-address to an address") || strings.Contains(log, "plan.Options.") {
		t.Errorf("the diagnosis does not name the flag to set:\n%s", log)
	}
}

// TestSessionHeldByAnotherProcess: a second start with the same session is
// refused while the first runs; after kill -9 the same session restarts at
// once (the dead holder is recognised on this host), without waiting for the
// Lease to expire.
func TestSessionHeldByAnotherProcess(t *testing.T) {
	first := startMark(t)
	first.ready(t)
	second := startMark(t, "--session", first.session)
	if code := second.wait(t); code == 0 {
		t.Fatal("a second start with the same session succeeded")
	}
	if !strings.Contains(second.stderr.String(), "session in use") {
		t.Errorf("no session-in-use error:\n%s", second.stderr.String())
	}
	if n, err := sessionObjects(context.Background(), first.session); err != nil || n == 0 {
		t.Fatalf("the refused start removed the first one's objects (%d, %v)", n, err)
	}

	first.signal(syscall.SIGKILL)
	first.wait(t)
	again := startMark(t, "--session", first.session)
	again.ready(t)
}

// TestLeaseOnlySessionIsCleanedUp: a session that registered no
// configurations (nothing but controllers) still leaves a Lease; once it is
// dead, cleanup removes it.
func TestLeaseOnlySessionIsCleanedUp(t *testing.T) {
	ctx := context.Background()
	p := start(t, "--webhooks", "none", "--controllers", "none", "--lease-duration", "2s")
	p.ready(t)
	p.signal(syscall.SIGKILL)
	p.wait(t)
	lease := "hookback-" + p.session
	eventually(t, "the killed session's Lease to expire", func(ctx context.Context) (bool, error) {
		l, err := env.client.CoordinationV1().Leases("default").Get(ctx, lease, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return l.Spec.RenewTime.Add(2 * time.Second).Before(time.Now()), nil
	})
	out, errOut, code := hookback(t, env.kubeconfig, "cleanup", "--session", sessionFor(t))
	if code != 0 {
		t.Fatalf("cleanup exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := env.client.CoordinationV1().Leases("default").Get(ctx, lease, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Lease %s after cleanup: err = %v, want NotFound\n%s", lease, err, errOut)
	}
	if !strings.Contains(out, p.session) {
		t.Errorf("cleanup did not report the session:\n%s", out)
	}
}

// advertisedHost is the address hookback must have registered: loopback on
// the local control plane, whose apiserver shares this machine's; elsewhere
// (kind: the kind network's gateway) what its strategy chose, as logged.
func advertisedHost(t *testing.T, p *proc) string {
	t.Helper()
	if env.local {
		return "127.0.0.1"
	}
	line := logLine(p.stderr.String(), "advertise address chosen")
	_, rest, ok := strings.Cut(line, " address=")
	if !ok {
		t.Fatalf("no advertise address logged:\n%s", p.stderr.String())
	}
	host, _, _ := strings.Cut(rest, " ")
	return host
}
