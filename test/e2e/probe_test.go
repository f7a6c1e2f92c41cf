package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// probeSuite sends one pod to each webhook of
// testdata/probe/mutating-webhooks.yaml, expecting its first patch.
const probeSuite = `apiVersion: hookback.dev/v1alpha1
kind: Suite
cases:
  - name: label
    webhooks: [label.pods.example.com]
    operation: CREATE
    object: {apiVersion: v1, kind: Pod, metadata: {name: web, namespace: apps}, spec: {containers: [{name: a, image: b}]}}
    expect: {result: patched, patch: [{op: add, path: /metadata/labels, value: {cr-seen: "yes"}}]}
  - name: calls
    webhooks: [calls.pods.example.com]
    operation: CREATE
    object: {apiVersion: v1, kind: Pod, metadata: {name: web, namespace: apps}, spec: {containers: [{name: a, image: b}]}}
    expect: {result: patched, patch: [{op: add, path: /metadata/annotations, value: {crupstream.example.com/calls: "x"}}]}
`

// TestReinvocationUnsafe: controller-runtime's webhook server
// (e2e/crupstream) serves a webhook that labels a pod (the same label
// again changes nothing) and one that appends to an annotation on every
// call, both reinvocationPolicy IfNeeded. hookback test fails the second
// case as not idempotent and notes that neither ever sees an UPDATE of the
// pod; lint --probe reports reinvocation-unsafe for the second alone, at
// error. controller-runtime's own request counts show each webhook was
// called twice by each: the first answer, then its own output.
func TestReinvocationUnsafe(t *testing.T) {
	t.Parallel()
	metrics := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	up, _ := startCRUpstream(t, "--metrics-bind-address", metrics)
	manifests := repoPath("testdata", "probe", "mutating-webhooks.yaml")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "suite.yaml"), []byte(probeSuite), 0o644); err != nil {
		t.Fatal(err)
	}

	out, errOut, code := hookback(t, env.kubeconfig, "test", "--webhooks", "none", "--webhook-config", manifests, "--upstream", up, "--upstream-insecure", dir)
	if code != 1 || !strings.Contains(errOut, "2 results: 1 passed, 1 failed, 0 errors (2 notes)") {
		t.Fatalf("hookback test: exit %d, want 1 with one failure and two notes\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"--- FAIL " + filepath.Join(dir, "suite.yaml") + ":9 calls (calls.pods.example.com)\nnot idempotent: second call patched /metadata/annotations/crupstream.example.com~1calls (reinvocationPolicy IfNeeded",
		"mutating webhook label.pods.example.com never sees UPDATE or DELETE of this object: an edit can change or remove what it set",
		"mutating webhook calls.pods.example.com never sees UPDATE or DELETE of this object",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("hookback test's report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "label.pods.example.com  FAIL") {
		t.Errorf("the label webhook is safe to call again, yet failed:\n%s", out)
	}

	out, errOut, code = hookback(t, env.kubeconfig, "lint", "--probe", "--upstream", up, "--upstream-insecure", "-o", "json", manifests)
	if code != 1 {
		t.Fatalf("lint --probe: exit %d, want 1 (an error finding)\n%s\n%s", code, out, errOut)
	}
	var rep struct {
		Findings []struct{ Rule, Severity, Webhook, Path, Message string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("lint -o json: %v\n%s", err, out)
	}
	if len(rep.Findings) != 1 {
		t.Fatalf("findings %+v, want reinvocation-unsafe alone", rep.Findings)
	}
	f := rep.Findings[0]
	if f.Rule != "reinvocation-unsafe" || f.Severity != "error" || f.Webhook != "calls.pods.example.com" || f.Path != "webhooks[1].reinvocationPolicy" ||
		!strings.Contains(f.Message, "second call patched /metadata/annotations/crupstream.example.com~1calls") {
		t.Errorf("finding %+v, want reinvocation-unsafe at error on calls.pods.example.com's second patch", f)
	}

	// Each webhook: twice from hookback test, twice from lint --probe.
	eventually(t, "controller-runtime's request counts", func(ctx context.Context) (bool, error) {
		m, status := fetch(ctx, "http://"+metrics+"/metrics")
		if status != 200 {
			return false, fmt.Errorf("crupstream metrics: %d %s", status, m)
		}
		return strings.Contains(m, `controller_runtime_webhook_requests_total{code="200",webhook="/mutate-pods"} 4`) &&
			strings.Contains(m, `controller_runtime_webhook_requests_total{code="200",webhook="/mutate-append"} 4`), nil
	})
}
