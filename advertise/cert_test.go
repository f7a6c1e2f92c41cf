package advertise_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"slices"
	"testing"

	"github.com/hookback/hookback/advertise"
	"github.com/hookback/hookback/certs"
)

// The docker-desktop strategy advertises a DNS name. The apiserver then
// dials https://host.docker.internal:PORT with that name in SNI and checks
// it against a DNS SAN: certs.NewSelfSigned must issue and serve one.
func TestSelfSignedCoversDNSName(t *testing.T) {
	certs, err := certs.NewSelfSigned(context.Background(), certs.TLSOptions{
		StateDir: t.TempDir(), Host: advertise.HostDockerInternal, Log: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatalf("certificate for %s: %v", advertise.HostDockerInternal, err)
	}
	defer certs.Stop()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", certs.TLSConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
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
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certs.CA().CertPEM)
	for _, sni := range []string{advertise.HostDockerInternal, ""} {
		// Without SNI certmagic falls back to DefaultServerName; verify the
		// name ourselves since the dial target is an IP.
		conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{
			RootCAs: pool, ServerName: sni, InsecureSkipVerify: sni == "", //nolint:gosec // verified below by name
		})
		if err != nil {
			t.Fatalf("dial with SNI %q: %v", sni, err)
		}
		leaf := conn.ConnectionState().PeerCertificates[0]
		conn.Close()
		if !slices.Contains(leaf.DNSNames, advertise.HostDockerInternal) || len(leaf.IPAddresses) != 0 {
			t.Errorf("SNI %q: DNS SANs %v, IP SANs %v; want only %s", sni, leaf.DNSNames, leaf.IPAddresses, advertise.HostDockerInternal)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: advertise.HostDockerInternal}); err != nil {
			t.Errorf("SNI %q: leaf does not verify for %s: %v", sni, advertise.HostDockerInternal, err)
		}
	}
}
