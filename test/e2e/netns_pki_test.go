package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// pki is the test cluster's certificates and keys, as files.
type pki struct {
	caCert, servingCert, servingKey, saPub, saKey string
	caPEM, clientCertPEM, clientKeyPEM            []byte
}

// writePKI makes a CA, a serving certificate for the apiserver's namespace
// address, an admin client certificate (group system:masters) and the
// service-account signing key the apiserver requires.
func writePKI(t *testing.T, dir, apiserverIP string) *pki {
	t.Helper()
	p := &pki{
		caCert: filepath.Join(dir, "ca.crt"), servingCert: filepath.Join(dir, "apiserver.crt"),
		servingKey: filepath.Join(dir, "apiserver.key"), saPub: filepath.Join(dir, "sa.pub"), saKey: filepath.Join(dir, "sa.key"),
	}
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		Subject: pkix.Name{CommonName: "hookback-e2e-netns-ca"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER := sign(t, caTmpl, caTmpl, caKey, caKey)
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	p.caPEM = pemBlock("CERTIFICATE", caDER)

	servingKey := newKey(t)
	servingDER := sign(t, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		IPAddresses: []net.IP{net.ParseIP(apiserverIP), net.ParseIP("127.0.0.1")},
		DNSNames:    []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "localhost"},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca, servingKey, caKey)

	clientKey := newKey(t)
	clientDER := sign(t, &x509.Certificate{
		Subject:  pkix.Name{CommonName: "hookback-e2e-admin", Organization: []string{"system:masters"}},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca, clientKey, caKey)
	p.clientCertPEM, p.clientKeyPEM = pemBlock("CERTIFICATE", clientDER), keyPEM(t, clientKey)

	saKey := newKey(t)
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	for path, data := range map[string][]byte{
		p.caCert: p.caPEM, p.servingCert: pemBlock("CERTIFICATE", servingDER), p.servingKey: keyPEM(t, servingKey),
		p.saPub: pemBlock("PUBLIC KEY", saPub), p.saKey: keyPEM(t, saKey),
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// kubeconfig writes an admin kubeconfig for server, certificates embedded.
func (p *pki) kubeconfig(t *testing.T, server string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["netns"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: p.caPEM}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: p.clientCertPEM, ClientKeyData: p.clientKeyPEM}
	cfg.Contexts["netns"] = &clientcmdapi.Context{Cluster: "netns", AuthInfo: "admin"}
	cfg.CurrentContext = "netns"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// sign issues tmpl, valid for an hour around now, signed by parent's key.
func sign(t *testing.T, tmpl, parent *x509.Certificate, key, parentKey *ecdsa.PrivateKey) []byte {
	t.Helper()
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Minute), time.Now().Add(time.Hour)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func keyPEM(t *testing.T, k *ecdsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pemBlock("PRIVATE KEY", der)
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
