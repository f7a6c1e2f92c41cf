package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

const widgetCRD = "widgets.e2e.hookback.dev"

var (
	crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	widgetsV1   = schema.GroupVersionResource{Group: "e2e.hookback.dev", Version: "v1", Resource: "widgets"}
	widgetsV2   = schema.GroupVersionResource{Group: "e2e.hookback.dev", Version: "v2", Resource: "widgets"}
)

// conversion lists -objects widgets in their non-storage version (v2),
// converted by the e2e/crmanager manager's /convert: directly (the CRD's
// clientConfig.url is the manager) and through hookback (which redirects the
// CRD to itself and forwards), alternating in rounds, same run.
func (e *env) conversion(ctx context.Context) error {
	if e.cfg.crManager == "" {
		return errors.New("-crmanager is required: the e2e/crmanager binary (hack/bench-cluster builds it)")
	}
	dyn, err := dynamic.NewForConfig(e.rest)
	if err != nil {
		return err
	}
	dir := filepath.Join(e.cfg.workdir, "conversion")
	certPEM, err := writeServingCert(dir)
	if err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	mgr, err := e.startProc("crmanager", "", e.cfg.crManager, []string{"--port", strconv.Itoa(port), "--cert-dir", dir}, nil)
	if err != nil {
		return err
	}
	defer func() { _, _ = mgr.stop(30 * time.Second) }()
	if err := waitListening(ctx, port); err != nil {
		return err
	}
	mgrURL := "https://127.0.0.1:" + strconv.Itoa(port)
	crd, err := e.installWidgetCRD(ctx, dyn, mgrURL+"/convert", certPEM)
	if err != nil {
		return err
	}
	defer e.removeWidgetCRD(dyn)
	manifest := filepath.Join(dir, "manifests")
	if err := writeManifest(manifest, crd); err != nil {
		return err
	}
	ns, err := e.nss.create(ctx, "conversion")
	if err != nil {
		return err
	}
	if err := createWidgets(ctx, dyn, ns.Name, e.cfg.objects); err != nil {
		return err
	}
	// The watch cache keeps each object's conversion: a list it serves
	// converts nothing after the first. A list at an exact resourceVersion
	// is read from etcd and converts every object, every time, as a cold
	// kubectl get does.
	stored, err := dyn.Resource(widgetsV1).Namespace(ns.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	exact := metav1.ListOptions{ResourceVersion: stored.GetResourceVersion(), ResourceVersionMatch: metav1.ResourceVersionMatchExact}
	proxy, err := startConvProxy(mgrURL, filepath.Join(dir, "tls.crt"))
	if err != nil {
		return err
	}
	defer proxy.stop()
	c := &convRun{e: e, dyn: dyn, list: dyn.Resource(widgetsV2).Namespace(ns.Name), opts: exact, proxy: proxy,
		mgrURL: mgrURL, mgrCA: certPEM, manifest: manifest, stateDir: filepath.Join(e.stateDir, "conversion")}
	for r := 0; r < e.cfg.rounds; r++ {
		if err := c.round(ctx); err != nil {
			return fmt.Errorf("round %d: %w", r+1, err)
		}
		log.Printf("conversion: round %d of %d done", r+1, e.cfg.rounds)
	}
	e.reportConversion(c)
	return nil
}

// timedLists lists until three lists in a row are served by the path
// under test (served says so), then times n lists, each checked to hold
// want objects in v2.
func timedLists(ctx context.Context, list dynamic.ResourceInterface, opts metav1.ListOptions, want, n int, served func() bool) ([]time.Duration, error) {
	deadline := time.Now().Add(60 * time.Second)
	for warm := 0; warm < 3; {
		_, err := list.List(ctx, opts)
		if err == nil && served() {
			warm++
		} else if warm = 0; time.Now().After(deadline) {
			return nil, fmt.Errorf("lists not served by the path under test within 60s (last error: %v)", err)
		}
	}
	out := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		start := time.Now()
		l, err := list.List(ctx, opts)
		took := time.Since(start)
		if err != nil {
			return nil, err
		}
		if len(l.Items) != want || l.Items[0].GetAPIVersion() != widgetsV2.GroupVersion().String() {
			return nil, fmt.Errorf("listed %d objects of %s, want %d of %s", len(l.Items), l.Items[0].GetAPIVersion(), want, widgetsV2.GroupVersion())
		}
		out = append(out, took)
	}
	return out, nil
}

// installWidgetCRD creates the e2e CRD (labelled as the bench's) with its
// conversion pointed at the manager, after removing one an earlier bench
// run left; one of anybody else is refused.
func (e *env) installWidgetCRD(ctx context.Context, dyn dynamic.Interface, url string, caPEM []byte) (*unstructured.Unstructured, error) {
	crds := dyn.Resource(crdResource)
	if old, err := crds.Get(ctx, widgetCRD, metav1.GetOptions{}); err == nil {
		if old.GetLabels()[benchLabel] != "true" {
			return nil, fmt.Errorf("CustomResourceDefinition %s exists and is not the bench's: delete it first", widgetCRD)
		}
		e.removeWidgetCRD(dyn)
	}
	b, err := os.ReadFile(e.cfg.crdFile)
	if err != nil {
		return nil, err
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &crd.Object); err != nil {
		return nil, fmt.Errorf("%s: %w", e.cfg.crdFile, err)
	}
	crd.SetLabels(map[string]string{benchLabel: "true"})
	conv := map[string]any{"strategy": "Webhook", "webhook": map[string]any{"conversionReviewVersions": []any{"v1"},
		"clientConfig": map[string]any{"url": url, "caBundle": base64.StdEncoding.EncodeToString(caPEM)}}}
	if err := unstructured.SetNestedField(crd.Object, conv, "spec", "conversion"); err != nil {
		return nil, err
	}
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create CustomResourceDefinition %s: %w", widgetCRD, err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, err := dyn.Resource(widgetsV1).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil {
			return crd, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("widgets not served within 60s: %w", err)
		}
	}
}

// removeWidgetCRD deletes the bench's own CRD (with its widgets) and waits.
func (e *env) removeWidgetCRD(dyn dynamic.Interface) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := dyn.Resource(crdResource).Delete(ctx, widgetCRD, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		log.Printf("delete CustomResourceDefinition %s: %v", widgetCRD, err)
		return
	}
	for ctx.Err() == nil {
		if _, err := dyn.Resource(crdResource).Get(ctx, widgetCRD, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// createWidgets creates n v1 widgets, ten at a time.
func createWidgets(ctx context.Context, dyn dynamic.Interface, ns string, n int) error {
	res := dyn.Resource(widgetsV1).Namespace(ns)
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	next := make(chan int)
	for w := 0; w < 10; w++ {
		wg.Go(func() {
			for i := range next {
				o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "e2e.hookback.dev/v1", "kind": "Widget",
					"metadata": map[string]any{"name": "w-" + strconv.Itoa(i)}, "spec": map[string]any{"size": int64(i % 10), "color": "blue"}}}
				if _, err := res.Create(ctx, o, metav1.CreateOptions{}); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return fmt.Errorf("create widgets: %w", err)
	default:
		return nil
	}
}

// writeManifest writes the CRD, as installed, for --webhook-config.
func writeManifest(dir string, crd *unstructured.Unstructured) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.Marshal(crd.Object)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "crd.json"), b, 0o644)
}

// writeServingCert writes a self-signed tls.crt/tls.key for 127.0.0.1 into
// dir, as a developer's manager would have, and returns the certificate.
func writeServingCert(dir string) ([]byte, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "crmanager"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	crt := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), crt, 0o600); err != nil {
		return nil, err
	}
	return crt, os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
}

func waitListening(ctx context.Context, port int) error {
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("crmanager not listening on %d within 60s: %w", port, err)
		}
	}
}

// pointWidgetCRD sets the CRD's conversion webhook to url, trusting caPEM.
func pointWidgetCRD(ctx context.Context, dyn dynamic.Interface, url string, caPEM []byte) error {
	crds := dyn.Resource(crdResource)
	for attempt := 0; ; attempt++ {
		crd, err := crds.Get(ctx, widgetCRD, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cc := map[string]any{"url": url, "caBundle": base64.StdEncoding.EncodeToString(caPEM)}
		if err := unstructured.SetNestedField(crd.Object, cc, "spec", "conversion", "webhook", "clientConfig"); err != nil {
			return err
		}
		_, err = crds.Update(ctx, crd, metav1.UpdateOptions{})
		if err == nil || !apierrors.IsConflict(err) || attempt == 5 {
			return err
		}
	}
}
