package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTLSFilesModeReloads serves a user-provided certificate, then rotates
// certificate, key and CA on disk: hookback reloads the pair and re-applies
// its configurations with the new caBundle, and admission keeps working.
func TestTLSFilesModeReloads(t *testing.T) {
	ns := namespace(t)
	dir := t.TempDir()
	first := writePKI(t, mkdir(t, dir, "a"), "127.0.0.1")
	certFile, keyFile, caFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "ca.crt")
	install := func(p *pki) {
		for src, dst := range map[string]string{p.servingKey: keyFile, p.servingCert: certFile, p.caCert: caFile} {
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			writeAtomic(t, dst, string(b))
		}
	}
	install(first)
	p := startMark(t, "--tls-mode", "files", "--tls-cert-file", certFile, "--tls-key-file", keyFile, "--ca-file", caFile)
	p.ready(t)
	if !admitMarked(t, ns, p.session) {
		t.Fatal("webhook not called with the user-provided certificate")
	}

	second := writePKI(t, mkdir(t, dir, "b"), "127.0.0.1")
	install(second)
	name := "hookback-e2e-" + p.session
	eventually(t, "the new caBundle to be applied", func(ctx context.Context) (bool, error) {
		m, err := env.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return string(m.Webhooks[0].ClientConfig.CABundle) == string(second.caPEM), nil
	})
	eventually(t, "admission through the rotated certificate", func(ctx context.Context) (bool, error) {
		cm, err := env.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "mark-", Labels: map[string]string{"hookback.dev/e2e": p.session}},
		}, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		return cm.Labels["hookback.dev/e2e-seen"] == "true", nil
	})
}

func mkdir(t *testing.T, parent, name string) string {
	t.Helper()
	d := filepath.Join(parent, name)
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}
