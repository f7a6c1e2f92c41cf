package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookback/hookback/internal/syncbuf"
)

// pebbleValidity is the lifetime of the leaves the test pebble issues under
// the shortlived profile: short enough that certmagic renews one (when a
// third is left) within the test.
const pebbleValidity = 30 * time.Second

// pebble is a running ACME test server on loopback.
type pebble struct {
	directory string // ACME directory URL
	minica    string // PEM root of pebble's own HTTPS
	rootFile  string // PEM of the root pebble issues under (the caBundle)
	roots     *x509.CertPool
	httpPort  int // where pebble's VA dials HTTP-01 challenges
	log       syncbuf.Buffer
}

// startPebble builds (hack/pebble, cached) and starts pebble on free loopback
// ports; it is killed at the end of the test.
func startPebble(t *testing.T) *pebble {
	t.Helper()
	out, err := script(env.repo, "hack/pebble")
	if err != nil {
		t.Fatalf("hack/pebble: %v", err)
	}
	bin := strings.TrimSpace(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:])
	certs := filepath.Join(filepath.Dir(bin), "certs")
	dir := t.TempDir()
	listen, mgmt := freePort(t), freePort(t)
	p := &pebble{
		directory: fmt.Sprintf("https://127.0.0.1:%d/dir", listen),
		minica:    filepath.Join(certs, "pebble.minica.pem"),
		rootFile:  filepath.Join(dir, "pebble-root.pem"),
		httpPort:  freePort(t),
	}
	config := filepath.Join(dir, "pebble.json")
	writeJSON(t, config, map[string]any{"pebble": map[string]any{
		"listenAddress":                  fmt.Sprintf("127.0.0.1:%d", listen),
		"managementListenAddress":        fmt.Sprintf("127.0.0.1:%d", mgmt),
		"certificate":                    filepath.Join(certs, "cert.pem"),
		"privateKey":                     filepath.Join(certs, "key.pem"),
		"httpPort":                       p.httpPort,
		"tlsPort":                        freePort(t),
		"ocspResponderURL":               "",
		"externalAccountBindingRequired": false,
		"keyAlgorithm":                   "ecdsa",
		"profiles": map[string]any{
			"default":    map[string]any{"description": "default", "validityPeriod": 7776000},
			"shortlived": map[string]any{"description": "short", "validityPeriod": int(pebbleValidity / time.Second)},
		},
	}})
	cmd := exec.Command(bin, "-config", config)
	// No sleeps, no bad nonces, and no authorization reuse: every order,
	// renewals included, is validated through the HTTP-01 challenge.
	cmd.Env = append(os.Environ(), "PEBBLE_VA_NOSLEEP=1", "PEBBLE_WFE_NONCEREJECT=0", "PEBBLE_AUTHZREUSE=0")
	cmd.Stdout, cmd.Stderr = &p.log, &p.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("pebble log:\n%s", p.log.String())
		}
	})
	p.fetchRoot(t, mgmt)
	return p
}

// fetchRoot waits for pebble's management endpoint and saves the root it
// issues under: it changes on every start.
func (p *pebble) fetchRoot(t *testing.T, mgmt int) {
	t.Helper()
	minica, err := os.ReadFile(p.minica)
	if err != nil {
		t.Fatal(err)
	}
	trust := x509.NewCertPool()
	trust.AppendCertsFromPEM(minica)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: trust}}}
	var root []byte
	eventually(t, "pebble's issuing root", func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/roots/0", mgmt), nil)
		resp, err := client.Do(req)
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		root, err = io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK && bytes.Contains(root, []byte("BEGIN CERTIFICATE")), err
	})
	p.roots = x509.NewCertPool()
	p.roots.AppendCertsFromPEM(root)
	if err := os.WriteFile(p.rootFile, root, 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// servedLeaf dials hookback as the apiserver does (an IP, no SNI) and returns
// the leaf, verified against roots for the IP 127.0.0.1.
func servedLeaf(port int, roots *x509.CertPool) (*x509.Certificate, error) {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp",
		net.JoinHostPort("127.0.0.1", itoa(port)), &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

// portClosed reports whether nothing listens on 127.0.0.1:port.
func portClosed(port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", itoa(port)), time.Second)
	if err != nil {
		return true
	}
	c.Close()
	return false
}

// TestACMEModeWithPebble obtains the serving certificate from pebble through
// the HTTP-01 challenge on --acme-http-port, registers with pebble's root as
// the caBundle, and lets certmagic renew the short-lived leaf while running.
func TestACMEModeWithPebble(t *testing.T) {
	ns := namespace(t)
	peb := startPebble(t)
	p := startMark(t, "--tls-mode", "acme", "--acme-ca", peb.directory, "--acme-ca-root", peb.minica,
		"--acme-http-port", itoa(peb.httpPort), "--ca-file", peb.rootFile, "--acme-renew-check-interval", "1s")
	p.ready(t)
	if strings.Contains(p.stdout.String(), "email address") {
		t.Errorf("certmagic prompted for an email address:\n%s", p.stdout.String())
	}
	first, err := servedLeaf(p.port, peb.roots)
	if err != nil {
		t.Fatalf("served certificate does not chain to pebble's root for 127.0.0.1: %v", err)
	}
	if !slices.ContainsFunc(first.IPAddresses, func(ip net.IP) bool { return ip.Equal(net.IPv4(127, 0, 0, 1)) }) {
		t.Errorf("IP SANs = %v, want 127.0.0.1", first.IPAddresses)
	}
	if life := first.NotAfter.Sub(first.NotBefore); life > pebbleValidity {
		t.Errorf("leaf lives %s: not issued under the shortlived profile", life)
	}
	if !admitMarked(t, ns, p.session) {
		t.Fatal("the apiserver did not call the webhook through the ACME certificate")
	}
	eventually(t, "the HTTP-01 challenge port to be released", func(context.Context) (bool, error) {
		return portClosed(peb.httpPort), nil
	})

	eventually(t, "certmagic to renew the leaf", func(context.Context) (bool, error) {
		leaf, err := servedLeaf(p.port, peb.roots)
		if err != nil {
			return false, err
		}
		return leaf.SerialNumber.Cmp(first.SerialNumber) != 0, nil
	})
	if !admitMarked(t, ns, p.session) {
		t.Fatal("the apiserver did not call the webhook through the renewed certificate")
	}
	if !portClosed(peb.httpPort) {
		t.Error("the HTTP-01 challenge port stayed open after the renewal")
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d", code)
	}
}
