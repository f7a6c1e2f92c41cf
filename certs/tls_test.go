package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
)

func TestSelfSignedServesIPWithoutSNI(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	certs, err := NewSelfSigned(ctx, TLSOptions{StateDir: dir, Host: "127.0.0.1", Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer certs.Stop()

	if fi, err := os.Stat(filepath.Join(dir, caKeyFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("CA key mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	addr := serveHandshakes(t, certs.TLSConfig())
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certs.CA().CertPEM)
	// Dialing an IP sends no SNI, as the apiserver does; the IP SAN must verify.
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool})
	if err != nil {
		t.Fatalf("TLS dial without SNI: %v", err)
	}
	leaf := conn.ConnectionState().PeerCertificates[0]
	conn.Close()
	if len(leaf.IPAddresses) != 1 || !leaf.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) {
		t.Errorf("leaf IP SANs = %v", leaf.IPAddresses)
	}
	if leaf.IsCA {
		t.Error("served the CA, want a leaf")
	}

	// A restart reuses the CA, so the caBundle in the cluster stays valid.
	again, err := NewSelfSigned(ctx, TLSOptions{StateDir: dir, Host: "127.0.0.1", Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Stop()
	if again.CABundle() != certs.CABundle() {
		t.Error("CA changed across restarts")
	}
}

// serveHandshakes accepts TLS connections on loopback until the test ends,
// completing each handshake, and returns the address.
func serveHandshakes(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	return ln.Addr().String()
}
