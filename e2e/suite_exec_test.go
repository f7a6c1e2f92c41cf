package e2e

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSuiteExecProjectMode: `hookback test` in a kubebuilder project's root
// with no flag: the project's config/default (e2e/crmanager's, a real
// controller-runtime manager with a defaulter, a validator and a
// conversion webhook), the suite in test/hookback, and the manager started
// with the project's run target, with a serving certificate hookback's CA
// signed in controller-runtime's default cert dir, verified TLS, stopped at
// the end. A failing case shows what the manager wrote meanwhile. Not
// parallel: project mode's upstream is controller-runtime's default port,
// 9443, and no other test of this package may hold it meanwhile.
func TestSuiteExecProjectMode(t *testing.T) {
	if c, err := net.Dial("tcp", "127.0.0.1:9443"); err == nil {
		c.Close()
		t.Fatal("127.0.0.1:9443 is taken: project mode's manager needs it")
	}
	dir, tmp := t.TempDir(), t.TempDir()
	files := map[string]string{
		"PROJECT":  "domain: hookback.dev\nlayout:\n- go.kubebuilder.io/v4\nprojectName: crmanager\nrepo: example.com/crmanager\nversion: \"3\"\n",
		"Makefile": "run:\n\t" + env.crManager + "\n",
		"test/hookback/widgets.yaml": `apiVersion: hookback.dev/v1alpha1
kind: Suite
cases:
- name: too-big
  webhooks: [vwidget-v1.kb.io]
  operation: CREATE
  object: {apiVersion: e2e.hookback.dev/v1, kind: Widget, metadata: {name: big, namespace: default}, spec: {size: 20, color: red}}
  expect: {result: denied, messageRegexp: "must be at most 10"}
- name: defaulted-blue
  webhooks: [mwidget-v1.kb.io]
  operation: CREATE
  object: {apiVersion: e2e.hookback.dev/v1, kind: Widget, metadata: {name: plain, namespace: default}, spec: {size: 3}}
  expect:
    result: patched
    object: {apiVersion: e2e.hookback.dev/v1, kind: Widget, metadata: {name: plain, namespace: default}, spec: {size: 3, color: blue}}
- name: v1-to-v2
  conversion:
    desiredAPIVersion: e2e.hookback.dev/v2
    object: {apiVersion: e2e.hookback.dev/v1, kind: Widget, metadata: {name: w, namespace: default, uid: 5c1e6a9e-0000-4000-8000-000000000001}, spec: {size: 3, color: red}}
  expect:
    result: converted
    object: {apiVersion: e2e.hookback.dev/v2, kind: Widget, metadata: {name: w, namespace: default, uid: 5c1e6a9e-0000-4000-8000-000000000001}, spec: {count: 3, color: red}}
`,
	}
	for name, body := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.CopyFS(filepath.Join(dir, "config"), os.DirFS(repoPath("e2e", "crmanager", "config"))); err != nil {
		t.Fatal(err)
	}
	environ := append(os.Environ(), "KUBECONFIG="+env.kubeconfig, "TMPDIR="+tmp, "HOOKBACK_STATE_DIR="+t.TempDir())
	run := func(args ...string) (string, string, int) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, env.binary, append([]string{"test"}, args...)...)
		cmd.Dir, cmd.Env = dir, environ
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return o.String(), e.String(), code
	}
	out, errOut, code := run()
	if code != 0 || !strings.Contains(errOut, "3 results: 3 passed, 0 failed, 0 errors") {
		t.Fatalf("hookback test in the project: exit %d\n%s\n%s", code, out, errOut)
	}
	certDir := filepath.Join(tmp, "k8s-webhook-server", "serving-certs")
	if !strings.Contains(errOut, "tls.crt and tls.key in "+certDir) {
		t.Errorf("no serving certificate written into controller-runtime's cert dir:\n%s", errOut)
	}
	if c, err := net.Dial("tcp", "127.0.0.1:9443"); err == nil {
		c.Close()
		t.Error("the manager still listens after hookback test: it was not stopped")
	}

	failing := filepath.Join(t.TempDir(), "failing.yaml")
	if err := os.WriteFile(failing, []byte(`apiVersion: hookback.dev/v1alpha1
kind: Case
webhooks: [vwidget-v1.kb.io]
operation: CREATE
object: {apiVersion: e2e.hookback.dev/v1, kind: Widget, metadata: {name: small, namespace: default}, spec: {size: 1, color: red}}
expect: {result: denied}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = run("--concurrency", "1", failing)
	if code != 1 || !strings.Contains(out, "result: want denied, got allowed") || !strings.Contains(out, "server output:") {
		t.Fatalf("a failing case: exit %d, want 1 with the manager's output\n%s\n%s", code, out, errOut)
	}
}
