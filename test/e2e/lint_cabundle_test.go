package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hookback/hookback/lint"
)

// TestLintCABundle: ca-bundle on the apiserver. A Fail webhook at a
// loopback HTTPS server whose caBundle is another CA's: lint --cluster
// finds that the served certificate does not verify, and the apiserver
// rejects every request the webhook matches ("x509"). With the rule's fix
// (the caBundle of the CA that signed the served certificate) lint finds
// nothing, and the request is admitted through the webhook.
func TestLintCABundle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespaceLabelled(t, nil)
	var calls atomic.Int32
	srv := answerReviewsTLS(t, func(http.ResponseWriter, *http.Request, review, map[string]any) bool {
		calls.Add(1)
		return true
	})
	name, hook := "e2e-lint-cabundle-"+ns, "cabundle.e2e.hookback.dev"
	fail, none, timeout := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone, int32(2)
	url := srv.URL + "/validate"
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lintLabels},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: hook, FailurePolicy: &fail, SideEffects: &none,
			TimeoutSeconds: &timeout, AdmissionReviewVersions: []string{"v1"}, NamespaceSelector: onlyNamespace(ns), Rules: rulesFor("", "configmaps"),
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: otherCA(t)}}}}
	if _, err := env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	f := findingOf(lintCluster(t, name), "ca-bundle")
	if f == nil || f.Severity != lint.Error || !strings.Contains(f.Message, "does not present a certificate the caBundle verifies") {
		t.Fatalf("lint --cluster did not find the caBundle that does not verify the served certificate: %+v", f)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-"}}
	eventually(t, "the ConfigMap rejected: the apiserver cannot verify the webhook's server", func(ctx context.Context) (bool, error) {
		_, err := env.client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), `failed calling webhook "`+hook+`"`) && strings.Contains(err.Error(), "x509"), nil
	})
	if n := calls.Load(); n != 0 {
		t.Fatalf("the webhook's server was called %d times through a caBundle that does not verify it", n)
	}
	// The rule's fix (advice, no patch): the CA that signed the served
	// certificate.
	p, err := json.Marshal([]map[string]any{{"op": "replace", "path": "/webhooks/0/clientConfig/caBundle", "value": base64.StdEncoding.EncodeToString(servedCA(srv))}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Patch(ctx, name, types.JSONPatchType, p, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if g := findingOf(lintCluster(t, name), "ca-bundle"); g != nil {
		t.Errorf("after the fix, lint --cluster still finds ca-bundle: %s", g.Message)
	}
	eventually(t, "the ConfigMap admitted through the webhook once the caBundle verifies it", func(ctx context.Context) (bool, error) {
		_, err := env.client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && calls.Load() > 0, nil
	})
}

// otherCA is the PEM of a CA that signed nothing the test serves.
func otherCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "not the webhook's CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// servedCA is the PEM of the CA of srv's certificate (httptest's, its own).
func servedCA(srv *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}
