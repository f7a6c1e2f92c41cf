package certs

import (
	"bytes"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestWriteUpstreamPair(t *testing.T) {
	ca, _, err := NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := NewCA("another CA")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	write := func(t *testing.T, dir string, ca *CA, at time.Time) {
		t.Helper()
		if _, err := WriteUpstreamPair(ca, dir, at); err != nil {
			t.Fatal(err)
		}
	}
	foreign := func(t *testing.T, dir string) {
		t.Helper()
		for _, f := range []string{"tls.crt", "tls.key"} {
			if err := os.WriteFile(filepath.Join(dir, f), []byte("someone else's "+f), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		// later checks that many days after now.
		later int
		want  UpstreamAction
	}{
		{name: "empty dir: written", setup: func(*testing.T, string) {}, want: UpstreamWrote},
		{name: "missing dir: created and written", setup: func(t *testing.T, dir string) { os.Remove(dir) }, want: UpstreamWrote},
		{name: "ours and good: kept", setup: func(t *testing.T, dir string) { write(t, dir, ca, now) }, want: UpstreamKept},
		{name: "ours near expiry: renewed", setup: func(t *testing.T, dir string) { write(t, dir, ca, now) }, later: 70, want: UpstreamRenewed},
		{name: "ours from another CA: renewed", setup: func(t *testing.T, dir string) { write(t, dir, other, now) }, want: UpstreamRenewed},
		{name: "someone else's: left", setup: foreign, want: UpstreamForeign},
		{name: "ours replaced by the user: left", setup: func(t *testing.T, dir string) { write(t, dir, ca, now); foreign(t, dir) }, want: UpstreamForeign},
		{name: "a certificate without its key: left", setup: func(t *testing.T, dir string) {
			write(t, dir, ca, now)
			os.Remove(filepath.Join(dir, "tls.key"))
		}, want: UpstreamForeign},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "serving-certs")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			tt.setup(t, dir)
			before, _ := os.ReadFile(filepath.Join(dir, "tls.crt"))
			at := now.Add(time.Duration(tt.later) * 24 * time.Hour)
			got, err := WriteUpstreamPair(ca, dir, at)
			if err != nil {
				t.Fatal(err)
			}
			if got.Action != tt.want {
				t.Fatalf("action %q, want %q (%s)", got.Action, tt.want, got)
			}
			after, _ := os.ReadFile(filepath.Join(dir, "tls.crt"))
			if changed := !bytes.Equal(before, after); changed != (tt.want == UpstreamWrote || tt.want == UpstreamRenewed) {
				t.Fatalf("tls.crt changed %v with action %q", changed, got.Action)
			}
			if !got.Ours() {
				return
			}
			cert, err := parseCertPEM(after)
			if err != nil {
				t.Fatal(err)
			}
			pool := x509.NewCertPool()
			pool.AddCert(ca.Cert)
			for _, name := range []string{"127.0.0.1", "localhost", "::1"} {
				if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: name, CurrentTime: at}); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			}
			if !cert.IPAddresses[0].Equal(net.IPv4(127, 0, 0, 1)) {
				t.Errorf("IPs %v", cert.IPAddresses)
			}
			if st, err := os.Stat(filepath.Join(dir, "tls.key")); err != nil || st.Mode().Perm() != 0o600 {
				t.Errorf("tls.key: %v %v, want mode 0600", st.Mode(), err)
			}
		})
	}
}
