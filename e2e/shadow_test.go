package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
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
	shadowPods(t, p, ns, session)
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
	shadowSummary(t, p)
}
