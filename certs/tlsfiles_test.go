package certs

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
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
