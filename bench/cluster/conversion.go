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
	list := dyn.Resource(widgetsV2).Namespace(ns.Name)
	var direct, through []time.Duration
	var converted float64
	for r := 0; r < e.cfg.rounds; r++ {
		d, err := timedLists(ctx, list, exact, e.cfg.objects, e.cfg.lists, nil)
		if err != nil {
			return fmt.Errorf("round %d, direct: %w", r+1, err)
		}
		direct = append(direct, d...)
		p, err := e.startHookback(session("conversion"), filepath.Join(e.stateDir, "conversion"), nil,
			"--webhooks", "none", "--controllers", "none", "--webhook-config", manifest,
			"--upstream", mgrURL, "--upstream-ca", filepath.Join(dir, "tls.crt"))
		if err != nil {
			return err
		}
		if _, err := p.waitReady(ctx, 60*time.Second); err != nil {
			return err
		}
		t, err := timedLists(ctx, list, exact, e.cfg.objects, e.cfg.lists, p)
		if err != nil {
			_, _ = p.stop(30 * time.Second)
			return fmt.Errorf("round %d, through hookback: %w", r+1, err)
		}
		through = append(through, t...)
		m, err := p.metrics()
		if err != nil {
			return err
		}
		n := m[`hookback_conversion_objects_total{crd="`+widgetCRD+`"}`]
		if n < float64(e.cfg.lists*e.cfg.objects) {
			_, _ = p.stop(30 * time.Second)
			return fmt.Errorf("round %d: hookback converted %.0f objects in %d lists of %d: the lists did not all go through it", r+1, n, e.cfg.lists, e.cfg.objects)
		}
		converted += n
		if _, err := p.stop(30 * time.Second); err != nil {
			return err
		}
		log.Printf("conversion: round %d of %d done", r+1, e.cfg.rounds)
	}
	e.reportConversion(direct, through, converted)
	return nil
}

// timedLists lists until a list is served by the path under test (hookback's
// conversion metric moves, or any list succeeds for the direct path), then
// times n lists, each checked to hold want objects in v2.
func timedLists(ctx context.Context, list dynamic.ResourceInterface, opts metav1.ListOptions, want, n int, p *proc) ([]time.Duration, error) {
	deadline := time.Now().Add(60 * time.Second)
	for warm := 0; warm < 3; {
		_, err := list.List(ctx, opts)
		ready := err == nil
		if ready && p != nil {
			m, merr := p.metrics()
			ready = merr == nil && m[`hookback_conversion_reviews_total{crd="`+widgetCRD+`",result="success"}`] > 0
		}
		if ready {
			warm++
		} else if time.Now().After(deadline) {
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

func (e *env) reportConversion(direct, through []time.Duration, converted float64) {
	fmt.Fprintf(e.out, "### Conversion: list %d objects in the non-storage version\n\n", e.cfg.objects)
	fmt.Fprintf(e.out, "`hack/bench-cluster -sections conversion -objects %d -lists %d -rounds %d`: each round times %d lists of widgets.e2e.hookback.dev/v2 (stored as v1) with the CRD's conversion calling the e2e/crmanager manager directly by url, then %d through hookback (which redirects the CRD at start and restores it at exit). hookback converted %.0f objects.\n\n",
		e.cfg.objects, e.cfg.lists, e.cfg.rounds, e.cfg.lists, e.cfg.lists, converted)
	fmt.Fprintf(e.out, "| path | lists | p50 | mean | p90 | max |\n|---|---|---|---|---|---|\n")
	for _, row := range []struct {
		name string
		ds   []time.Duration
	}{{"direct (apiserver → manager)", direct}, {"through hookback", through}} {
		fmt.Fprintf(e.out, "| %s | %d | %s | %s | %s | %s |\n", row.name, len(row.ds), ms(quantile(row.ds, 0.5)), ms(mean(row.ds)), ms(quantile(row.ds, 0.9)), ms(maxOf(row.ds)))
	}
	fmt.Fprintf(e.out, "\nhookback against direct: p50 **%.2f×**, mean **%.2f×** (target: at most 1.1×).\n\n",
		float64(quantile(through, 0.5))/float64(quantile(direct, 0.5)), float64(mean(through))/float64(mean(direct)))
}
