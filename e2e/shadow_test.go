package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
)

// deployWebhook registers, as a team would have deployed it, a validating
// webhook at url (a server on loopback) for this session's pods.
func deployWebhook(t *testing.T, session, url, caFile string) {
	t.Helper()
	ca, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	deployWebhookAt(t, session, admissionregistrationv1.WebhookClientConfig{URL: ptr.To(url + "/validate"), CABundle: ca})
}

// TestShadowControllerRuntime: the deployed webhook is one build of
// controller-runtime's server (denies deny-*), your upstream another that
// differs in one rule (denies bad-*). With --shadow the apiserver's
// decisions follow the deployed build only, hookback's copies change
// nothing (no patch either), and every difference is logged, counted and
// summed up at exit.
func TestShadowControllerRuntime(t *testing.T) {
	requireLocal(t, "the deployed webhook is registered at a loopback URL, which only an apiserver on this machine reaches")
	t.Parallel()
	ns := namespace(t)
	session := sessionFor(t)
	deployed, deployedCA := startCRUpstream(t)
	mine, _ := startCRUpstream(t, "--deny-prefix", "bad-")
	deployWebhook(t, session, deployed, deployedCA)
	dir := t.TempDir()
	inspector := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p := startEnv(t, append(os.Environ(), "KUBECONFIG="+env.kubeconfig), "--session", session,
		"--webhooks", "none", "--controllers", "none", "--webhook-config", userManifests(t, session),
		"--upstream", mine, "--upstream-insecure", "--shadow", deployed, "--shadow-ca", deployedCA,
		"--record-dir", dir, "--inspector-address", inspector)
	p.ready(t)
	ctx := context.Background()

	if _, err := upstreamPod(ctx, ns, "deny-x", session, nil); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "controller-runtime says no to deny-x") {
		t.Fatalf("deny-x: err = %v, want the deployed webhook's denial", err)
	}
	for _, name := range []string{"bad-y", "fine-z"} {
		pod, err := upstreamPod(ctx, ns, name, session, nil)
		if err != nil {
			t.Fatalf("%s: %v: only the deployed webhook decides, and it allows", name, err)
		}
		if pod.Labels["cr-seen"] != "" {
			t.Errorf("%s carries cr-seen: hookback's shadow copy patched it", name)
		}
	}
	metrics := func() string { return get(t, "http://"+p.health+"/metrics") }
	eventually(t, "the shadow metrics", func(context.Context) (bool, error) {
		m := metrics()
		return strings.Contains(m, `hookback_shadow_reviews_total{result="different",webhook="vpod.example.com"} 2`) &&
			strings.Contains(m, `hookback_shadow_reviews_total{result="identical",webhook="vpod.example.com"} 1`) &&
			strings.Contains(m, `hookback_shadow_reviews_total{result="identical",webhook="mpod.example.com"} 3`), nil
	})
	log := p.stderr.String()
	for _, want := range []string{"name=deny-x differences=\"decision: yours allowed, deployed denied", "name=bad-y differences=\"decision: yours denied, deployed allowed"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if page := get(t, "http://"+inspector+"/"); strings.Count(page, `<span class="why shadow">differs from deployed</span>`) != 2 {
		t.Errorf("the inspector does not list the two differences:\n%s", page)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*_shadow.json"))
	if len(files) != 2 {
		t.Fatalf("%d shadow records, want 2 (deny-x, bad-y)", len(files))
	}
	// Your webhook's answers, recorded: replayed to it, they are the same.
	if out, errOut, code := hookback(t, env.kubeconfig, append([]string{"replay", "--upstream", mine, "--upstream-insecure"}, files...)...); code != 0 {
		t.Errorf("replay of the shadow records: exit %d\n%s\n%s", code, out, errOut)
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Fatalf("hookback exited %d", code)
	}
	if !strings.Contains(p.stderr.String(), `msg="shadow summary" webhook=all reviews=6 identical=4 different=2`) {
		t.Errorf("no exit summary:\n%s", p.stderr.String())
	}
}
