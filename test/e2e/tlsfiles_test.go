package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
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

// TestCertRotationUnderLoad replaces certificate, key and CA on disk (the
// certificate before the CA, the worst order) while 50 dry-run admissions a
// second flow through the apiserver to a failurePolicy Fail webhook: none
// fails, the new caBundle is applied and the old certificate is no longer
// served.
func TestCertRotationUnderLoad(t *testing.T) {
	ns := namespace(t)
	dir := t.TempDir()
	first := writePKI(t, mkdir(t, dir, "a"), "127.0.0.1")
	second := writePKI(t, mkdir(t, dir, "b"), "127.0.0.1")
	certFile, keyFile, caFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "ca.crt")
	install := func(p *pki) {
		for _, f := range [][2]string{{p.servingKey, keyFile}, {p.servingCert, certFile}, {p.caCert, caFile}} {
			b, err := os.ReadFile(f[0])
			if err != nil {
				t.Fatal(err)
			}
			writeAtomic(t, f[1], string(b))
		}
	}
	install(first)
	p := startMark(t, "--tls-mode", "files", "--tls-cert-file", certFile, "--tls-key-file", keyFile, "--ca-file", caFile)
	p.ready(t)

	rc, err := clientcmd.BuildConfigFromFlags("", env.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	rc.QPS, rc.Burst = 200, 200 // the load is 50/s; client-go's default is 5
	load, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	var sent, failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(20 * time.Millisecond) // 50/s
		defer tick.Stop()
		for i := 0; i < 50*60; i++ { // bounded: one minute at most
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				sent.Add(1)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				cm, err := load.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{GenerateName: "load-", Labels: map[string]string{"hookback.dev/e2e": p.session}},
				}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				if err == nil && cm.Labels["hookback.dev/e2e-seen"] != "true" {
					err = fmt.Errorf("admitted without the webhook's label")
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}()
		}
	}()
	waitSent := func(n int64) {
		eventually(t, fmt.Sprintf("%d admissions sent", n), func(context.Context) (bool, error) { return sent.Load() >= n, nil })
	}
	waitSent(50)
	name := "hookback-e2e-" + p.session
	w, err := env.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Watch(context.Background(),
		metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	install(second)
	eventually(t, "the new caBundle alone to be applied", func(ctx context.Context) (bool, error) {
		m, err := env.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return string(m.Webhooks[0].ClientConfig.CABundle) == string(second.caPEM), nil
	})
	n := sent.Load()
	waitSent(n + 100) // two more seconds under the new certificate alone
	close(stop)
	wg.Wait()
	if f := failed.Load(); f > 0 {
		t.Errorf("%d of %d admissions failed during the rotation; first: %v", f, sent.Load(), firstErr.Load())
	}
	t.Logf("%d admissions, %d failed", sent.Load(), failed.Load())

	addr := "127.0.0.1:" + itoa(p.port)
	newPool, oldPool := x509.NewCertPool(), x509.NewCertPool()
	newPool.AppendCertsFromPEM(second.caPEM)
	oldPool.AppendCertsFromPEM(first.caPEM)
	if c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: newPool}); err != nil {
		t.Errorf("the new certificate is not served: %v", err)
	} else {
		c.Close()
	}
	if c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: oldPool}); err == nil {
		c.Close()
		t.Error("the old certificate is still served")
	}
	// Through the apiserver, the configuration went from the old CA to both
	// CAs (while the old certificate served) to the new CA alone.
	both := append(append([]byte{}, first.caPEM...), second.caPEM...)
	sawBoth := false
	for ev := range w.ResultChan() {
		m, ok := ev.Object.(*admissionregistrationv1.MutatingWebhookConfiguration)
		if !ok {
			continue
		}
		got := m.Webhooks[0].ClientConfig.CABundle
		if bytes.Equal(bytes.ReplaceAll(got, []byte("\n"), nil), bytes.ReplaceAll(both, []byte("\n"), nil)) {
			sawBoth = true
		}
		if bytes.Equal(got, second.caPEM) {
			break
		}
	}
	if !sawBoth {
		t.Error("the caBundle never held both CAs before the new one alone")
	}
	if _, ok := whLogLine(p.stderr.String(), "publishing old and new CA"); !ok {
		t.Errorf("no log line says the CA rotation was staged:\n%s", p.stderr.String())
	}
}
