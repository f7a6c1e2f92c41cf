package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ControllerRuntimeCertDir is where a controller-runtime webhook server
// looks for tls.crt and tls.key unless told otherwise (its CertDir default).
func ControllerRuntimeCertDir() string {
	return filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs")
}

// Upstream serving pair: names, lifetime, and the marker that says hookback
// wrote it (the SHA-256 of the tls.crt it wrote), so that it never touches a
// pair it did not write.
const (
	upstreamCertFile  = "tls.crt"
	upstreamKeyFile   = "tls.key"
	upstreamMarker    = ".hookback-wrote-tls.crt"
	upstreamLifetime  = 90 * 24 * time.Hour
	upstreamRenewLeft = 30 * 24 * time.Hour
)

// UpstreamAction is what WriteUpstreamPair did.
type UpstreamAction string

// What WriteUpstreamPair can do.
const (
	UpstreamWrote   UpstreamAction = "wrote"   // the directory held no pair
	UpstreamRenewed UpstreamAction = "renewed" // hookback's pair neared expiry or came from another CA
	UpstreamKept    UpstreamAction = "kept"    // hookback's pair, still good
	UpstreamForeign UpstreamAction = "left"    // someone else's pair: never overwritten
)

// UpstreamPair says what WriteUpstreamPair did in Dir.
type UpstreamPair struct {
	Dir    string
	Action UpstreamAction
	// NotAfter is the expiry of the pair hookback wrote or kept.
	NotAfter time.Time
}

// Ours reports whether the pair in Dir is hookback's, so that the upstream
// can be verified against hookback's CA.
func (p UpstreamPair) Ours() bool { return p.Action != UpstreamForeign }

// String says what was done, for the log and the banner.
func (p UpstreamPair) String() string {
	switch p.Action {
	case UpstreamForeign:
		return fmt.Sprintf("left the certificate in %s alone: hookback did not write it", p.Dir)
	case UpstreamKept:
		return fmt.Sprintf("serving certificate in %s is hookback's, valid until %s", p.Dir, p.NotAfter.Format(time.DateOnly))
	default:
		return fmt.Sprintf("%s tls.crt and tls.key in %s for 127.0.0.1 and localhost, signed by hookback's CA, valid until %s",
			p.Action, p.Dir, p.NotAfter.Format(time.DateOnly))
	}
}

// WriteUpstreamPair gives the developer's webhook server (controller-runtime's,
// by default) a serving certificate for 127.0.0.1 and localhost signed by ca,
// in dir: written when dir holds no tls.crt and tls.key, rewritten when the
// pair there is one hookback wrote that nears expiry or that another CA
// signed, and left alone when hookback did not write it.
func WriteUpstreamPair(ca *CA, dir string, now time.Time) (UpstreamPair, error) {
	certPath, keyPath := filepath.Join(dir, upstreamCertFile), filepath.Join(dir, upstreamKeyFile)
	cur, err := os.ReadFile(certPath)
	_, keyErr := os.Stat(keyPath)
	switch {
	case errors.Is(err, fs.ErrNotExist) && errors.Is(keyErr, fs.ErrNotExist):
		return writeUpstreamPair(ca, dir, now, UpstreamWrote)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return UpstreamPair{}, fmt.Errorf("read upstream certificate: %w", err)
	case err != nil || keyErr != nil || !markedOurs(dir, cur):
		return UpstreamPair{Dir: dir, Action: UpstreamForeign}, nil
	}
	cert, err := parseCertPEM(cur)
	if err != nil || cert.NotAfter.Sub(now) < upstreamRenewLeft || cert.CheckSignatureFrom(ca.Cert) != nil {
		return writeUpstreamPair(ca, dir, now, UpstreamRenewed)
	}
	return UpstreamPair{Dir: dir, Action: UpstreamKept, NotAfter: cert.NotAfter}, nil
}

func markedOurs(dir string, cur []byte) bool {
	mark, err := os.ReadFile(filepath.Join(dir, upstreamMarker))
	return err == nil && strings.TrimSpace(string(mark)) == digest(cur)
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func parseCertPEM(b []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

// writeUpstreamPair writes key, certificate, then the marker: a crash in
// between leaves a pair without a marker, which a later run leaves alone
// rather than guess.
func writeUpstreamPair(ca *CA, dir string, now time.Time, action UpstreamAction) (UpstreamPair, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return UpstreamPair{}, fmt.Errorf("create upstream certificate dir: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return UpstreamPair{}, fmt.Errorf("generate upstream key: %w", err)
	}
	csrDER, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}, key)
	if err != nil {
		return UpstreamPair{}, fmt.Errorf("upstream certificate request: %w", err)
	}
	csr, err := x509.ParseCertificateRequest(csrDER)
	if err != nil {
		return UpstreamPair{}, fmt.Errorf("upstream certificate request: %w", err)
	}
	certPEM, err := ca.Sign(csr, upstreamLifetime)
	if err != nil {
		return UpstreamPair{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return UpstreamPair{}, fmt.Errorf("marshal upstream key: %w", err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	for _, f := range []struct {
		name string
		data []byte
		mode os.FileMode
	}{{upstreamKeyFile, keyPEM, 0o600}, {upstreamCertFile, certPEM, 0o644}, {upstreamMarker, []byte(digest(certPEM) + "\n"), 0o644}} {
		if err := writeFileAtomic(filepath.Join(dir, f.name), f.data, f.mode); err != nil {
			return UpstreamPair{}, err
		}
	}
	cert, err := parseCertPEM(certPEM)
	if err != nil {
		return UpstreamPair{}, fmt.Errorf("parse upstream certificate: %w", err)
	}
	return UpstreamPair{Dir: dir, Action: action, NotAfter: cert.NotAfter}, nil
}

// LocalCA is the self-signed mode's CA in stateDir (created when absent),
// and the path of its certificate, for verifying what it signed.
func LocalCA(stateDir string) (*CA, string, error) {
	ca, err := LoadOrCreateCA(stateDir, localCAName)
	return ca, filepath.Join(stateDir, caCertFile), err
}
