package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// floorWebhook is the cheapest validating webhook there can be, to tell the
// apiserver's share of a webhook call from hookback's: an HTTPS server in
// the bench process that reads the review, echoes its UID and allows,
// registered for pod CREATEs in one namespace.
type floorWebhook struct {
	name  string
	calls atomic.Int64
	srv   *http.Server
}

func (e *env) startFloor(ctx context.Context, namespace string) (*floorWebhook, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "hookback-bench-floor"},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &floorWebhook{name: "hookback-bench-floor-" + strconv.FormatInt(time.Now().UnixNano()%1e6, 36)}
	mux := http.NewServeMux()
	mux.HandleFunc("/validate", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var review struct {
			APIVersion string `json:"apiVersion"`
			Request    struct {
				UID types.UID `json:"uid"`
			} `json:"request"`
		}
		if err := json.Unmarshal(body, &review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"apiVersion":%q,"kind":"AdmissionReview","response":{"uid":%q,"allowed":true}}`, review.APIVersion, review.Request.UID)
	})
	f.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, TLSConfig: &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		NextProtos:   []string{"h2", "http/1.1"},
	}}
	go func() { _ = f.srv.ServeTLS(ln, "", "") }()

	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	none, fail, timeout := admissionv1.SideEffectClassNone, admissionv1.Fail, int32(5)
	url := "https://" + ln.Addr().String() + "/validate"
	scope := admissionv1.NamespacedScope
	_, err = e.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: f.name, Labels: map[string]string{benchLabel: "true"}},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name:         "floor.bench.hookback.dev",
			ClientConfig: admissionv1.WebhookClientConfig{URL: &url, CABundle: ca},
			Rules: []admissionv1.RuleWithOperations{{
				Operations: []admissionv1.OperationType{admissionv1.Create},
				Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Scope: &scope},
			}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": namespace}},
			// Fail, not Ignore: a call that does not reach it must show.
			FailurePolicy:           &fail,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		_ = f.srv.Close()
		return nil, err
	}
	return f, nil
}

// stop deletes the configuration first, then stops serving.
func (f *floorWebhook) stop(ctx context.Context, e *env) error {
	err := e.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, f.name, metav1.DeleteOptions{})
	_ = f.srv.Close()
	return err
}
