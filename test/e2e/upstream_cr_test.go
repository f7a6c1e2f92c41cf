package e2e

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
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

// TestYourWebhookControllerRuntime: a kubebuilder user's webhook server
// (controller-runtime's, HTTPS with its own certificate) behind hookback,
// its denial and its patch seen through the real apiserver.
func TestYourWebhookControllerRuntime(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	upstream, _ := startCRUpstream(t)

	session := sessionFor(t)
	p := startEnv(t, append(os.Environ(), "KUBECONFIG="+env.kubeconfig), "--session", session,
		"--webhooks", "none", "--controllers", "none", "--webhook-config", userManifests(t, session),
		"--upstream", upstream, "--upstream-insecure")
	p.ready(t)
	ctx := context.Background()
	_, err := upstreamPod(ctx, ns, "deny-cr", session, nil)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "controller-runtime says no to deny-cr") {
		t.Fatalf("deny-cr: err = %v, want controller-runtime's denial", err)
	}
	pod, err := upstreamPod(ctx, ns, "allow-cr", session, nil)
	if err != nil {
		t.Fatalf("allow-cr: %v", err)
	}
	if pod.Labels["cr-seen"] != "yes" {
		t.Errorf("allow-cr labels %v: controller-runtime's patch was not applied", pod.Labels)
	}
}

// startCRUpstream runs controller-runtime's webhook server on a free
// loopback port with a self-signed certificate (as a developer's local
// webhook certificate usually is: hookback reaches it with
// --upstream-insecure, allowed on loopback) and returns its URL and
// certificate file (its own CA).
func startCRUpstream(t *testing.T, args ...string) (string, string) {
	t.Helper()
	certDir := t.TempDir()
	key := newKey(t)
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: "crupstream"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der := sign(t, tmpl, tmpl, key, key)
	for name, data := range map[string][]byte{"tls.crt": pemBlock("CERTIFICATE", der), "tls.key": keyPEM(t, key)} {
		if err := os.WriteFile(filepath.Join(certDir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	port := freePort(t)
	cr := exec.Command(env.crBinary, append([]string{"--port", strconv.Itoa(port), "--cert-dir", certDir}, args...)...)
	var crLog syncbuf.Buffer
	cr.Stdout, cr.Stderr = &crLog, &crLog
	if err := cr.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cr.Process.Signal(syscall.SIGTERM)
		_ = cr.Wait()
		if t.Failed() {
			t.Logf("controller-runtime server log:\n%s", crLog.String())
		}
	})
	eventually(t, "controller-runtime's webhook server to listen", func(context.Context) (bool, error) {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			return false, nil
		}
		c.Close()
		return true, nil
	})
	return "https://127.0.0.1:" + strconv.Itoa(port), filepath.Join(certDir, "tls.crt")
}
