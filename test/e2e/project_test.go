package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/hookback/hookback/internal/syncbuf"
)

// kubebuilderProject writes, in dir, what project mode reads of a
// kubebuilder project: PROJECT, a Makefile whose run target starts the
// manager (here e2e/crupstream, controller-runtime's webhook server, on
// port), and config/ as kustomize directories, with kubebuilder's
// namespace and name prefix, a Service and cert-manager objects that
// hookback skips.
func kubebuilderProject(t *testing.T, dir, session string, port int) {
	t.Helper()
	files := map[string]string{
		"PROJECT":                           "domain: example.com\nlayout:\n- go.kubebuilder.io/v4\nprojectName: e2eproj\nrepo: example.com/e2eproj\nversion: \"3\"\n",
		"Makefile":                          fmt.Sprintf("run:\n\t%s --port %d\n", env.crBinary, port),
		"config/default/kustomization.yaml": "namespace: e2eproj-system\nnamePrefix: e2eproj-\nresources:\n- ../webhook\n- ../certmanager\n",
		"config/webhook/kustomization.yaml": "resources:\n- manifests.yaml\n- service.yaml\n",
		"config/webhook/service.yaml":       "apiVersion: v1\nkind: Service\nmetadata: {name: webhook-service, namespace: system}\nspec:\n  ports: [{port: 443, targetPort: 9443}]\n",
		"config/webhook/manifests.yaml": `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: validating-webhook-configuration
webhooks:
- name: vpod.e2eproj.example.com
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /validate}
  rules:
  - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"]}
  objectSelector:
    matchLabels: {e2e-upstream: "` + session + `"}
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: ["v1"]
`,
		"config/certmanager/kustomization.yaml": "resources:\n- certificate.yaml\n",
		"config/certmanager/certificate.yaml":   "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: serving-cert, namespace: system}\nspec: {secretName: webhook-server-cert}\n",
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
}

// TestProjectMode: `hookback start` in a kubebuilder project's root, then
// `make run`: hookback renders config/default, writes controller-runtime's
// serving certificate (signed by its CA) into the default cert dir, the
// manager starts with it, and a denial arrives through the apiserver,
// verified TLS all the way (no --upstream-insecure).
func TestProjectMode(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	dir, tmp := t.TempDir(), t.TempDir()
	// Both processes see this TMPDIR, so os.TempDir()/k8s-webhook-server is
	// the test's own; the manager's port is free, not 9443, so parallel
	// runs never meet.
	environ := append(os.Environ(), "KUBECONFIG="+env.kubeconfig, "TMPDIR="+tmp)
	port := freePort(t)
	session := sessionFor(t)
	kubebuilderProject(t, dir, session, port)

	p := startIn(t, dir, env.binary, environ, "--session", session, "--upstream", "https://127.0.0.1:"+strconv.Itoa(port))
	p.ready(t)
	certDir := filepath.Join(tmp, "k8s-webhook-server", "serving-certs")
	for _, want := range []string{
		"project:  e2eproj (example.com), from config/default",
		"cert:     wrote tls.crt and tls.key in " + certDir,
		"Start the manager in another terminal, in " + dir + ":\n  make run\n",
	} {
		if !strings.Contains(p.stdout.String(), want) {
			t.Errorf("banner lacks %q:\n%s", want, p.stdout.String())
		}
	}
	for _, want := range []string{"objects skipped", "cert-manager.io/v1 Certificate (1), v1 Service (1)"} {
		if !strings.Contains(p.stderr.String(), want) {
			t.Errorf("log lacks %q", want)
		}
	}

	mgr := exec.Command("make", "run")
	mgr.Dir, mgr.Env = dir, environ
	var mgrLog syncbuf.Buffer
	mgr.Stdout, mgr.Stderr = &mgrLog, &mgrLog
	mgr.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // make's child too
	if err := mgr.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-mgr.Process.Pid, syscall.SIGTERM)
		_ = mgr.Wait()
		if t.Failed() {
			t.Logf("make run:\n%s", mgrLog.String())
		}
	})
	eventually(t, "the manager's webhook server to listen", func(context.Context) (bool, error) {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			return false, nil
		}
		c.Close()
		return true, nil
	})
	_, err := upstreamPod(context.Background(), ns, "deny-project", session, nil)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "controller-runtime says no to deny-project") {
		t.Fatalf("deny-project: err = %v, want controller-runtime's denial", err)
	}
	if _, err := upstreamPod(context.Background(), ns, "allow-project", session, nil); err != nil {
		t.Fatalf("allow-project: %v", err)
	}
	// Allowed, and not by failurePolicy: the review went through hookback.
	eventually(t, "hookback's admission line for allow-project", func(context.Context) (bool, error) {
		return strings.Contains(p.stderr.String(), "name=allow-project decision=allowed"), nil
	})
}

// TestCheckProject: check asks for what project mode runs: the webhook
// configurations and the CRDs, not the built-ins' permissions.
func TestCheckProject(t *testing.T) {
	out, errOut, code := hookback(t, env.kubeconfig, "check", "--project", repoPath("testdata", "project"))
	if code != 0 {
		t.Fatalf("hookback check exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"Checking:  built-in webhooks: none; controllers: none; project project (tutorial.kubebuilder.io)",
		"create mutatingwebhookconfigurations.admissionregistration.k8s.io", "patch customresourcedefinitions.apiextensions.k8s.io",
		// Whether a manager listens on 9443 here or not, check says and
		// does not fail.
		"Upstream:  https://127.0.0.1:9443"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "nodes") {
		t.Errorf("output asks for the built-ins' permissions (nodes):\n%s", out)
	}
}

// TestPortTakenNamesTheHolder: a port in use fails start with the port and
// the process holding it (this test's), before anything is registered.
func TestPortTakenNamesTheHolder(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	out, errOut, code := hookback(t, env.kubeconfig, "start", "--session", sessionFor(t), "--state-dir", t.TempDir(),
		"--port", strconv.Itoa(freePort(t)), "--health-address", ln.Addr().String(), "--inspector-address", "")
	want := fmt.Sprintf("port %d is held by pid %d (", port, os.Getpid())
	if code == 0 || !strings.Contains(errOut, want) || !strings.Contains(errOut, "address already in use") {
		t.Fatalf("exit %d, want an error naming %q\nstdout:\n%s\nstderr:\n%s", code, want, out, errOut)
	}
}
