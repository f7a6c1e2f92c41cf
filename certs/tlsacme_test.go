package certs

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/certmagic"
)

// The wrapper must keep what certmagic looks for on an ACME issuer.
var (
	_ certmagic.PreChecker        = nonInteractive{}
	_ certmagic.Revoker           = nonInteractive{}
	_ certmagic.RenewalInfoGetter = nonInteractive{}
)

func TestACMEOptionsValidate(t *testing.T) {
	ok := ACMEOptions{CA: "https://127.0.0.1:14000/dir", Profile: "shortlived", HTTPPort: 5002, Host: "127.0.0.1"}
	for _, tc := range []struct {
		name string
		edit func(*ACMEOptions)
		want string // error substring; empty: valid
	}{
		{"private CA, loopback IP, no --acme-ca-root", func(*ACMEOptions) {}, ""},
		{"no profile", func(o *ACMEOptions) { o.Profile = "" }, ""},
		{"email", func(o *ACMEOptions) { o.Email = "ops@example.com" }, ""},
		{"bad email", func(o *ACMEOptions) { o.Email = "Ops <ops@example.com>" }, "certs.ACMEOptions.Email"},
		{"bad profile", func(o *ACMEOptions) { o.Profile = "short lived" }, "certs.ACMEOptions.Profile"},
		{"http CA", func(o *ACMEOptions) { o.CA = "http://127.0.0.1:14000/dir" }, "certs.ACMEOptions.CA"},
		{"CA without scheme", func(o *ACMEOptions) { o.CA = "acme.example.com/dir" }, "certs.ACMEOptions.CA"},
		{"port 0", func(o *ACMEOptions) { o.HTTPPort = 0 }, "certs.ACMEOptions.HTTPPort"},
		{"port too big", func(o *ACMEOptions) { o.HTTPPort = 70000 }, "certs.ACMEOptions.HTTPPort"},
		{"no host", func(o *ACMEOptions) { o.Host = "" }, "no host"},
		{"LE, public IP, shortlived", func(o *ACMEOptions) { o.CA, o.Host = LetsEncryptCA, "203.0.113.7" }, ""},
		{"LE, DNS name, classic profile", func(o *ACMEOptions) { o.CA, o.Host, o.Profile = LetsEncryptCA, "hooks.example.com", "" }, ""},
		{"LE, public IP, classic profile", func(o *ACMEOptions) { o.CA, o.Host, o.Profile = LetsEncryptCA, "203.0.113.7", "classic" }, "shortlived"},
		{"LE, loopback", func(o *ACMEOptions) { o.CA = LetsEncryptCA }, "public IP"},
		{"LE, private IP", func(o *ACMEOptions) { o.CA, o.Host = LetsEncryptCA, "10.1.2.3" }, "public IP"},
		{"LE staging, .local name", func(o *ACMEOptions) {
			o.CA, o.Host = "https://acme-staging-v02.api.letsencrypt.org/directory", "laptop.local"
		}, "public IP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := ok
			tc.edit(&o)
			err := o.validate()
			if tc.want == "" && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestCheckProfile(t *testing.T) {
	offered := map[string]string{"classic": "", "shortlived": ""}
	if err := checkProfile("ca", "shortlived", offered); err != nil {
		t.Errorf("offered profile refused: %v", err)
	}
	if err := checkProfile("ca", "", nil); err != nil {
		t.Errorf("no profile refused: %v", err)
	}
	if err := checkProfile("ca", "tlsserver", offered); err == nil || !strings.Contains(err.Error(), "classic, shortlived") {
		t.Errorf("unknown profile: error = %v, want the offered ones named", err)
	}
	if err := checkProfile("ca", "shortlived", nil); err == nil || !strings.Contains(err.Error(), `pass certs.ACMEOptions.Profile ""`) {
		t.Errorf("CA without profiles: error = %v", err)
	}
}

// fakeDirectory serves an ACME directory over TLS and writes its root to a
// PEM file, as --acme-ca-root would name it.
func fakeDirectory(t *testing.T, body string) (url, rootFile string) {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/dir" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	rootFile = filepath.Join(t.TempDir(), "root.pem")
	root := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(rootFile, root, 0o600); err != nil {
		t.Fatal(err)
	}
	return srv.URL + "/dir", rootFile
}

func TestNewACMECertsFailsEarly(t *testing.T) {
	dir := `{"newOrder": "https://x/new-order", "meta": {"profiles": {"classic": "c", "shortlived": "s"}}}`
	ca, root := fakeDirectory(t, dir)
	base := ACMEOptions{CA: ca, CARootFile: root, HTTPPort: 1, Host: "127.0.0.1", StateDir: t.TempDir()}
	for _, tc := range []struct {
		name string
		edit func(*ACMEOptions)
		want string
	}{
		{"untrusted ACME server", func(o *ACMEOptions) { o.CARootFile = "" }, "does it need certs.ACMEOptions.CARootFile?"},
		{"root file missing", func(o *ACMEOptions) { o.CARootFile = filepath.Join(t.TempDir(), "none.pem") }, "read certs.ACMEOptions.CARootFile: "},
		{"root file not PEM", func(o *ACMEOptions) { o.CARootFile = writeTemp(t, "not a certificate") }, "no PEM certificate"},
		{"ca-file missing", func(o *ACMEOptions) { o.CAFile = filepath.Join(t.TempDir(), "none.pem") }, "read certs.Options.CAFile"},
		{"profile not offered", func(o *ACMEOptions) { o.Profile = "tlsserver" }, `does not offer profile "tlsserver"`},
		{"not a directory", func(o *ACMEOptions) { o.CA = strings.TrimSuffix(o.CA, "/dir") + "/other" }, "404"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := base
			tc.edit(&o)
			a, err := NewACMECerts(context.Background(), o)
			if err == nil {
				a.Stop()
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestFetchProfilesRejectsNonDirectory(t *testing.T) {
	ca, root := fakeDirectory(t, `{"hello": "world"}`)
	roots, err := trustedRoots(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fetchProfiles(context.Background(), ca, roots); err == nil || !strings.Contains(err.Error(), "not an ACME directory") {
		t.Fatalf("error = %v", err)
	}
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
