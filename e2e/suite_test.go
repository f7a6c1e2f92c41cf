package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	junit "github.com/joshdk/go-junit"
)

// TestSuiteFromRecordings: a session against e2e/crupstream (a real
// controller-runtime webhook server) recorded with start --record-dir,
// turned into a suite by test init; the suite passes against the same
// build, and against a build that differs in one rule (-deny-prefix bad-)
// fails exactly the cases that rule decides. Plain-manifest cases (a
// CREATE, an UPDATE with its old object) run against the same server, and
// the JUnit report is read back by a JUnit parser CI tools use.
func TestSuiteFromRecordings(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	up, _ := startCRUpstream(t)
	session := sessionFor(t)
	manifests := userManifests(t, session)
	records := t.TempDir()
	p := startEnv(t, append(os.Environ(), "KUBECONFIG="+env.kubeconfig), "--session", session,
		"--webhooks", "none", "--controllers", "none", "--webhook-config", manifests,
		"--upstream", up, "--upstream-insecure", "--record-dir", records)
	p.ready(t)
	ctx := context.Background()
	if _, err := upstreamPod(ctx, ns, "deny-a", session, nil); err == nil {
		t.Fatal("deny-a was admitted: the recorded session needs controller-runtime's denial")
	}
	for _, name := range []string{"ok-b", "bad-c"} {
		if _, err := upstreamPod(ctx, ns, name, session, nil); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	// mpod for all three pods, vpod for all three (deny-a after mpod).
	eventually(t, "six recordings", func(context.Context) (bool, error) {
		files, _ := filepath.Glob(filepath.Join(records, "*.json"))
		return len(files) >= 6, nil
	})
	p.signal(syscall.SIGTERM)
	p.wait(t)

	suiteDir := filepath.Join(t.TempDir(), "suite")
	out, errOut, code := hookback(t, env.kubeconfig, "test", "init", "--from-records", records, "--out", suiteDir)
	if code != 0 || !strings.Contains(errOut, "6 cases written") {
		t.Fatalf("test init: exit %d\n%s\n%s", code, out, errOut)
	}
	writeManifestCases(t, suiteDir, session)
	args := []string{"test", "--webhook-config", manifests, "--upstream-insecure", suiteDir}

	out, errOut, code = hookback(t, env.kubeconfig, append(args, "--upstream", up)...)
	if code != 0 || !strings.Contains(errOut, "9 results: 9 passed, 0 failed, 0 errors") {
		t.Fatalf("the same build: exit %d\n%s\n%s", code, out, errOut)
	}

	other, _ := startCRUpstream(t, "--deny-prefix", "bad-")
	out, errOut, code = hookback(t, env.kubeconfig, append(args, "--upstream", other)...)
	if code != 1 {
		t.Fatalf("the build that denies bad-*: exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	failed := regexp.MustCompile(`(?m)^\S+:(\S+)\s+(\S+)\s+FAIL\s`).FindAllStringSubmatch(out, -1)
	var got []string
	for _, m := range failed {
		got = append(got, m[1]+" "+m[2])
	}
	slices.Sort(got)
	// deny-a is no longer denied, bad-c now is, by vpod; the manifest case
	// for deny-x and the UPDATE of deny-y change the same way.
	want := []string{"create-deny-x vpod.example.com", "update-deny-y vpod.example.com",
		"vpod.example.com_pods_bad-c_create vpod.example.com", "vpod.example.com_pods_deny-a_create vpod.example.com"}
	if !slices.Equal(got, want) {
		t.Errorf("failed cases = %q, want %q\n%s", got, want, out)
	}
	if !strings.Contains(out, "result: want denied, got allowed") || !strings.Contains(out, "result: want allowed, got denied") {
		t.Errorf("the failures do not show the decisions:\n%s", out)
	}

	report := filepath.Join(t.TempDir(), "report.xml")
	out, _, code = hookback(t, env.kubeconfig, append(args, "--upstream", other, "-o", "junit")...)
	if code != 1 {
		t.Fatalf("-o junit: exit %d", code)
	}
	if err := os.WriteFile(report, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	suites, err := junit.IngestFile(report)
	if err != nil {
		t.Fatalf("JUnit parser: %v\n%s", err, out)
	}
	failures, tests := 0, 0
	for _, s := range suites {
		tests += s.Totals.Tests
		failures += s.Totals.Failed
	}
	if len(suites) != 7 || tests != 9 || failures != 4 {
		t.Errorf("JUnit: %d testsuites, %d tests, %d failures; want 7 (one per suite file), 9, 4\n%s", len(suites), tests, failures, out)
	}
}

// writeManifestCases adds a Suite file of plain manifests: a CREATE that
// the webhooks pick by their rules and objectSelector, and an UPDATE with
// its old object sent to the validating webhook by name.
func writeManifestCases(t *testing.T, dir, session string) {
	t.Helper()
	pod := func(name string) string {
		return `{apiVersion: v1, kind: Pod, metadata: {name: ` + name + `, namespace: team-a, labels: {e2e-upstream: "` + session + `"}}, spec: {containers: [{name: app, image: nginx}]}}`
	}
	doc := `apiVersion: hookback.dev/v1alpha1
kind: Suite
cases:
- name: create-deny-x
  webhooks: [vpod.example.com]
  operation: CREATE
  object: ` + pod("deny-x") + `
  expect: {result: denied, message: controller-runtime says no to deny-x}
- name: create-bad-z-patched
  operation: CREATE
  webhooks: [mpod.example.com]
  object: ` + pod("bad-z") + `
  expect:
    result: patched
    object: {apiVersion: v1, kind: Pod, metadata: {name: bad-z, namespace: team-a, labels: {e2e-upstream: "` + session + `", cr-seen: "yes"}}, spec: {containers: [{name: app, image: nginx}]}}
- name: update-deny-y
  webhooks: [vpod.example.com]
  operation: UPDATE
  object: ` + pod("deny-y") + `
  oldObject: ` + pod("deny-y") + `
  expect: {result: denied, code: 403}
`
	if err := os.WriteFile(filepath.Join(dir, "manifests.yaml"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
}
