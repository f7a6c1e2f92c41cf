// Package loopcert makes the throwaway self-signed certificates the
// benchmarks serve on 127.0.0.1: one place, so every server under
// comparison pays for the same key type and chain.
package loopcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Cert is a self-signed P-256 serving certificate for 127.0.0.1, valid for
// an hour, and a pool that trusts it.
type Cert struct {
	DER  []byte
	Key  *ecdsa.PrivateKey
	Pool *x509.CertPool
}

// New makes a Cert whose subject is name.
func New(name string) (*Cert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("loopcert: %w", err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("loopcert: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("loopcert: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &Cert{DER: der, Key: key, Pool: pool}, nil
}

// TLS is the certificate for a tls.Config.
func (c *Cert) TLS() tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{c.DER}, PrivateKey: c.Key}
}

// PEM is the certificate and its key, PEM-encoded (tls.crt, tls.key).
func (c *Cert) PEM() (cert, key []byte, err error) {
	kder, err := x509.MarshalECPrivateKey(c.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("loopcert: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.DER}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), nil
}
