package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// sameNameManifests: a mutating and a validating webhook of one name, each
// in its own configuration, as slackhq/simple-kubernetes-webhook names
// both "simple-kubernetes-webhook.acme.com" (a name is unique only within
// its configuration); served by e2e/crupstream's /mutate-pods and
// /validate.
func sameNameManifests(t *testing.T, session string) string {
	t.Helper()
	hook := func(path string) string {
		return `  - name: simple-kubernetes-webhook.acme.com
    clientConfig:
      service: {namespace: acme, name: simple-kubernetes-webhook, path: ` + path + `}
    rules:
      - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"]}
    objectSelector:
      matchLabels:
        e2e-upstream: "` + session + `"
    sideEffects: None
    admissionReviewVersions: ["v1"]
`
	}
	doc := "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata:\n  name: simple-kubernetes-webhook.acme.com\nwebhooks:\n" +
		hook("/mutate-pods") +
		"---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata:\n  name: simple-kubernetes-webhook.acme.com\nwebhooks:\n" +
		hook("/validate")
	path := filepath.Join(t.TempDir(), "manifests.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSuiteSameNameWebhooks: a session against e2e/crupstream (a real
// controller-runtime webhook server) whose mutating and validating
// webhooks share a name, recorded with start --record-dir; each recording
// names the kind of its configuration, and the suite test init writes
// runs each case against the webhook it was recorded from, so that every
// case passes against the same build: with the manifests, and with
// --upstream alone.
func TestSuiteSameNameWebhooks(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	up, _ := startCRUpstream(t)
	session := sessionFor(t)
	manifests := sameNameManifests(t, session)
	records := t.TempDir()
	p := startEnv(t, append(os.Environ(), "KUBECONFIG="+env.kubeconfig), "--session", session,
		"--webhooks", "none", "--controllers", "none", "--webhook-config", manifests,
		"--upstream", up, "--upstream-insecure", "--record-dir", records)
	p.ready(t)
	ctx := context.Background()
	// The mutating webhook labels ok-b, the validating one denies deny-a:
	// both were called.
	if pod, err := upstreamPod(ctx, ns, "ok-b", session, nil); err != nil || pod.Labels["cr-seen"] != "yes" {
		t.Fatalf("ok-b: %v, labels %v: want it admitted and labelled by the mutating webhook", err, pod.GetLabels())
	}
	if _, err := upstreamPod(ctx, ns, "deny-a", session, nil); err == nil || !strings.Contains(err.Error(), "controller-runtime says no to deny-a") {
		t.Fatalf("deny-a: %v, want the validating webhook's denial", err)
	}
	eventually(t, "four recordings", func(context.Context) (bool, error) {
		files, _ := filepath.Glob(filepath.Join(records, "*.json"))
		return len(files) >= 4, nil
	})
	p.signal(syscall.SIGTERM)
	p.wait(t)
	if got, want := recordedKinds(t, records), []string{
		"MutatingWebhookConfiguration /mutate-pods", "MutatingWebhookConfiguration /mutate-pods",
		"ValidatingWebhookConfiguration /validate", "ValidatingWebhookConfiguration /validate"}; !slices.Equal(got, want) {
		t.Errorf("recorded kinds and paths %q, want %q", got, want)
	}

	suiteDir := filepath.Join(t.TempDir(), "suite")
	out, errOut, code := hookback(t, env.kubeconfig, "test", "init", "--from-records", records, "--out", suiteDir)
	if code != 0 || !strings.Contains(errOut, "4 cases written") {
		t.Fatalf("test init: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, run := range []struct {
		name string
		args []string
	}{
		{"with the manifests", []string{"--webhook-config", manifests}},
		{"with --upstream alone", nil},
	} {
		args := append([]string{"test", "--upstream", up, "--upstream-insecure", suiteDir}, run.args...)
		out, errOut, code := hookback(t, env.kubeconfig, args...)
		if code != 0 || !strings.Contains(errOut, "4 results: 4 passed, 0 failed, 0 errors") {
			t.Errorf("%s: exit %d, want every case passed\n%s\n%s", run.name, code, out, errOut)
		}
	}

	// A plain-manifest case must be matched against the configurations:
	// without them it says which flag is missing, as a flag.
	manifestCase := "apiVersion: hookback.dev/v1alpha1\nkind: Case\nname: to-match\noperation: CREATE\n" +
		"object: {apiVersion: v1, kind: Pod, metadata: {name: p, namespace: a}}\nexpect: {result: allowed}\n"
	if err := os.WriteFile(filepath.Join(suiteDir, "to-match.yaml"), []byte(manifestCase), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = hookback(t, env.kubeconfig, "test", "--upstream", up, "--upstream-insecure", suiteDir)
	if code != 2 || !strings.Contains(out, "pass --webhook-config") || strings.Contains(out+errOut, "session.") {
		t.Errorf("a case to match without the manifests: exit %d, want 2 naming --webhook-config and no library field\n%s\n%s", code, out, errOut)
	}
}

// recordedKinds are the configuration kinds of the recordings in dir, each
// with the path of the upstream its review went to, sorted.
func recordedKinds(t *testing.T, dir string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ ConfigurationKind, Path string }
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, fmt.Sprintf("%s /%s", e.ConfigurationKind, e.Path[strings.LastIndex(e.Path, "/")+1:]))
	}
	slices.Sort(out)
	return out
}
