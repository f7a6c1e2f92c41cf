package incluster

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/hookback/hookback/certs"
)

func TestSharedCA(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	existing, key, err := certs.NewCA("existing")
	if err != nil {
		t.Fatal(err)
	}
	secret := func(crt, key []byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: CASecretName, Namespace: "ns"},
			Data: map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key}}
	}
	t.Run("first replica creates it, labelled", func(t *testing.T) {
		cs := fake.NewClientset()
		ca, err := sharedCA(ctx, cs, "ns", log)
		if err != nil {
			t.Fatal(err)
		}
		s, err := cs.CoreV1().Secrets("ns").Get(ctx, CASecretName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if string(s.Data[corev1.TLSCertKey]) != string(ca.CertPEM) || s.Labels["app.kubernetes.io/part-of"] != "hookback" {
			t.Errorf("secret %+v does not hold the CA returned, labelled", s.ObjectMeta)
		}
		again, err := sharedCA(ctx, cs, "ns", log)
		if err != nil || again.Fingerprint() != ca.Fingerprint() {
			t.Errorf("second replica got another CA (%v)", err)
		}
	})
	t.Run("an existing CA is kept", func(t *testing.T) {
		cs := fake.NewClientset(secret(existing.CertPEM, key))
		ca, err := sharedCA(ctx, cs, "ns", log)
		if err != nil || ca.Fingerprint() != existing.Fingerprint() {
			t.Fatalf("got %v, %v; want the existing CA", ca, err)
		}
	})
	t.Run("losing the creation race reads the winner's", func(t *testing.T) {
		cs := fake.NewClientset()
		cs.PrependReactor("create", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
			// Another replica created it between our get and create.
			_ = cs.Tracker().Add(secret(existing.CertPEM, key))
			return false, nil, nil
		})
		ca, err := sharedCA(ctx, cs, "ns", log)
		if err != nil || ca.Fingerprint() != existing.Fingerprint() {
			t.Fatalf("got %v, %v; want the winner's CA", ca, err)
		}
	})
	t.Run("a damaged Secret says how to recover", func(t *testing.T) {
		cs := fake.NewClientset(secret([]byte("not pem"), key))
		_, err := sharedCA(ctx, cs, "ns", log)
		if err == nil || !strings.Contains(err.Error(), "delete the Secret") {
			t.Fatalf("err = %v, want the fix named", err)
		}
	})
}
