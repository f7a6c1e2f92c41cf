package e2e

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hookback/hookback/internal/syncbuf"
)

const widgetCRD = "widgets.e2e.hookback.dev"

var (
	crdGVR      = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	widgetsV1   = schema.GroupVersionResource{Group: "e2e.hookback.dev", Version: "v1", Resource: "widgets"}
	widgetsV2   = schema.GroupVersionResource{Group: "e2e.hookback.dev", Version: "v2", Resource: "widgets"}
	crConfigDir = filepath.Join("crmanager", "config", "default")
)

// dynamicClient is a dynamic client for the test cluster.
func dynamicClient(t testing.TB) dynamic.Interface {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", env.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	rc.QPS, rc.Burst = 500, 1000
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return dyn
}

// crManager is the e2e/crmanager process: a controller-runtime manager
// serving its webhooks on 127.0.0.1 with a certificate from files.
type crManager struct {
	cmd     *exec.Cmd
	log     syncbuf.Buffer
	URL     string
	Cert    string // the serving certificate's file, self-signed: trust it as a CA
	Port    int
	done    chan struct{}
	stopped bool
	args    []string // extra flags, such as --drop-v2-color
}

// startCRManager writes a self-signed certificate for 127.0.0.1 and starts
// the manager with it and args; it stops at the end of the test.
func startCRManager(t *testing.T, args ...string) *crManager {
	t.Helper()
	certDir := crManagerCert(t)
	m := &crManager{Port: freePort(t), Cert: filepath.Join(certDir, "tls.crt"), args: args}
	m.URL = "https://127.0.0.1:" + strconv.Itoa(m.Port)
	m.start(t, certDir)
	t.Cleanup(func() {
		m.stop(t)
		if t.Failed() {
			t.Logf("crmanager log:\n%s", m.log.String())
		}
	})
	return m
}

func (m *crManager) start(t *testing.T, certDir string) {
	m.cmd = exec.Command(env.crManager, append([]string{"--port", strconv.Itoa(m.Port), "--cert-dir", certDir}, m.args...)...)
	m.cmd.Env = append(os.Environ(), "KUBECONFIG="+env.kubeconfig)
	m.cmd.Stdout, m.cmd.Stderr = &m.log, &m.log
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m.done = make(chan struct{})
	go func() { _ = m.cmd.Wait(); close(m.done) }()
	eventually(t, "crmanager's webhook server to listen", func(context.Context) (bool, error) {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(m.Port))
		if err != nil {
			return false, nil
		}
		c.Close()
		return true, nil
	})
}

// stop ends the manager (SIGTERM) and waits for it.
func (m *crManager) stop(t *testing.T) {
	if m.stopped {
		return
	}
	m.stopped = true
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	<-m.done
}

// crManagerCert writes a self-signed tls.crt/tls.key for 127.0.0.1, as a
// developer's manager has, into a new directory it returns.
func crManagerCert(t *testing.T) string {
	t.Helper()
	certDir := t.TempDir()
	key := newKey(t)
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: "crmanager"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true}
	der := sign(t, tmpl, tmpl, key, key)
	for name, data := range map[string][]byte{"tls.crt": pemBlock("CERTIFICATE", der), "tls.key": keyPEM(t, key)} {
		if err := os.WriteFile(filepath.Join(certDir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return certDir
}

// crManifests is the manager's config/default, a kustomize directory shaped
// like kubebuilder's (namespace, namePrefix, the CRD's conversion patch).
func crManifests(*testing.T) string { return crConfigDir }

// conversionJSON is the live CRD's spec.conversion, as the apiserver
// serves it, and the CRD.
func conversionJSON(t *testing.T, dyn dynamic.Interface) (string, *unstructured.Unstructured) {
	t.Helper()
	crd, err := dyn.Resource(crdGVR).Get(context.Background(), widgetCRD, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	conv, _, _ := unstructured.NestedFieldNoCopy(crd.Object, "spec", "conversion")
	b, err := json.Marshal(conv)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), crd
}

func widget(version, ns, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "e2e.hookback.dev/" + version, "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec}}
}
