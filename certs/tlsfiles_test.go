package certs

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writePair signs a serving certificate for 127.0.0.1 with ca and writes it
// and its key; it returns the certificate's serial.
func writePair(t *testing.T, ca *CA, certFile, keyFile string) *big.Int {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	csrDER, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}, key)
	if err != nil {
		t.Fatal(err)
	}
	csr, err := x509.ParseCertificateRequest(csrDER)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err := ca.Sign(csr, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	// Key first, then certificate: a reader in between sees a mismatched
	// pair, which must be refused, not served.
	if err := writeFileAtomic(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeFileAtomic(certFile, certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert.SerialNumber
}

func servedSerial(t *testing.T, addr string, pool *x509.CertPool) *big.Int {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber
}

func TestFileCertsReload(t *testing.T) {
	dir := t.TempDir()
	ca, err := LoadOrCreateCA(filepath.Join(dir, "ca"), "test CA")
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca", caCertFile)
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	first := writePair(t, ca, certFile, keyFile)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fc, err := NewFileCerts(ctx, FileTLSOptions{CertFile: certFile, KeyFile: keyFile, CAFile: caFile,
		Host: "127.0.0.1", Interval: time.Hour, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Stop()
	if fc.CABundle() != ca.Bundle() {
		t.Error("caBundle is not the --ca-file")
	}
	addr := serveHandshakes(t, fc.TLSConfig())
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM)
	if got := servedSerial(t, addr, pool); got.Cmp(first) != 0 {
		t.Fatalf("serving serial %v, want %v", got, first)
	}

	changed := make(chan struct{}, 1)
	wait, err := fc.Watch(ctx, changed)
	if err != nil {
		t.Fatal(err)
	}
	second := writePair(t, ca, certFile, keyFile)
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no reload reported within 10s")
	}
	if got := servedSerial(t, addr, pool); got.Cmp(second) != 0 {
		t.Fatalf("after reload serving %v, want %v", got, second)
	}

	// A broken certificate file is refused; the last good pair keeps serving.
	if err := os.WriteFile(certFile, []byte("not PEM"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := fc.reload(ctx); err == nil {
		t.Fatal("reload accepted a broken certificate")
	}
	if got := servedSerial(t, addr, pool); got.Cmp(second) != 0 {
		t.Fatalf("after a broken write serving %v, want %v", got, second)
	}
	cancel()
	wait()
}

// TestFileCertsCARotationIsStaged replaces CA and certificate: the old
// certificate keeps serving under a caBundle of both CAs until the session
// reports that bundle applied; then the new one serves under the new CA.
func TestFileCertsCARotationIsStaged(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := newRotation(t, ctx, 10*time.Millisecond)
	fc, ca1, ca2, caFile, certFile, keyFile, first := r.fc, r.ca1, r.ca2, r.caFile, r.certFile, r.keyFile, r.first
	defer fc.Stop()
	fc.Applied(fc.CABundle())
	addr := serveHandshakes(t, fc.TLSConfig())
	pool1, pool2 := x509.NewCertPool(), x509.NewCertPool()
	pool1.AppendCertsFromPEM(ca1.CertPEM)
	pool2.AppendCertsFromPEM(ca2.CertPEM)

	// The files change in the worst order: the certificate of the new CA
	// before the CA file. That read is refused.
	second := writePair(t, ca2, certFile, keyFile)
	if err := fc.reload(ctx); err == nil || !strings.Contains(err.Error(), "not signed by certs.Options.CAFile") {
		t.Fatalf("reload of a certificate the CA file does not sign: %v", err)
	}
	if err := writeFileAtomic(caFile, ca2.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 1)
	wait, err := fc.Watch(ctx, changed)
	if err != nil {
		t.Fatal(err)
	}
	if err := fc.reload(ctx); err != nil {
		t.Fatal(err)
	}
	union, _ := base64.StdEncoding.DecodeString(fc.CABundle())
	if !bytes.Contains(union, bytes.TrimSpace(ca1.CertPEM)) || !bytes.Contains(union, bytes.TrimSpace(ca2.CertPEM)) {
		t.Fatalf("staged caBundle does not hold both CAs:\n%s", union)
	}
	if got := servedSerial(t, addr, pool1); got.Cmp(first) != 0 {
		t.Fatalf("serving %v before the union was applied, want the old %v", got, first)
	}
	fc.Applied(fc.CABundle())
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("the switch to the new certificate was not reported")
	}
	if fc.CABundle() != ca2.Bundle() {
		t.Error("caBundle after the switch is not the new CA alone")
	}
	if got := servedSerial(t, addr, pool2); got.Cmp(second) != 0 {
		t.Fatalf("serving %v after the switch, want %v", got, second)
	}
	cancel()
	wait()
}

// TestFileCertsStopEndsAStagedSwap: a pair staged for a CA rotation is not
// swapped in once the FileCerts is stopped, whether Stop came before the
// session reported the union applied or while its timer ran.
func TestFileCertsStopEndsAStagedSwap(t *testing.T) {
	for _, stopFirst := range []bool{true, false} {
		t.Run(map[bool]string{true: "stop, then applied", false: "applied, then stop"}[stopFirst], func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r := newRotation(t, ctx, 50*time.Millisecond)
			fc, ca2, caFile, certFile, keyFile := r.fc, r.ca2, r.caFile, r.certFile, r.keyFile
			fc.Applied(fc.CABundle())
			writePair(t, ca2, certFile, keyFile)
			if err := writeFileAtomic(caFile, ca2.CertPEM, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := fc.reload(ctx); err != nil {
				t.Fatal(err)
			}
			union := fc.CABundle()
			if stopFirst {
				fc.Stop()
				fc.Applied(union)
			} else {
				fc.Applied(union)
				fc.Stop()
			}
			// Past the trust delay, a swap would have replaced the bundle.
			deadline := time.Now().Add(500 * time.Millisecond)
			for time.Now().Before(deadline) {
				if fc.CABundle() != union {
					t.Fatal("a staged pair was swapped in after Stop")
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// rotation is a FileCerts serving a pair of ca1 from files, and ca2 ready
// to rotate to.
type rotation struct {
	fc                        *FileCerts
	ca1, ca2                  *CA
	caFile, certFile, keyFile string
	first                     *big.Int // the serial of the pair served
}

func newRotation(t *testing.T, ctx context.Context, trustDelay time.Duration) *rotation {
	t.Helper()
	dir := t.TempDir()
	r := &rotation{caFile: filepath.Join(dir, "ca.crt"), certFile: filepath.Join(dir, "tls.crt"), keyFile: filepath.Join(dir, "tls.key")}
	var err error
	if r.ca1, err = LoadOrCreateCA(filepath.Join(dir, "ca1"), "old CA"); err != nil {
		t.Fatal(err)
	}
	if r.ca2, err = LoadOrCreateCA(filepath.Join(dir, "ca2"), "new CA"); err != nil {
		t.Fatal(err)
	}
	if err := writeFileAtomic(r.caFile, r.ca1.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	r.first = writePair(t, r.ca1, r.certFile, r.keyFile)
	r.fc, err = NewFileCerts(ctx, FileTLSOptions{CertFile: r.certFile, KeyFile: r.keyFile, CAFile: r.caFile,
		Host: "127.0.0.1", Interval: time.Hour, TrustDelay: trustDelay, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}
