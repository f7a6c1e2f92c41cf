package registration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

const liveConversion = `{"strategy":"Webhook","webhook":{"clientConfig":{"caBundle":"Cg==","service":{"name":"webhook-service","namespace":"shop-system","path":"/convert","port":443}},"conversionReviewVersions":["v1","v1beta1"]}}`

func crdObject(t *testing.T, name, conversion string) *unstructured.Unstructured {
	t.Helper()
	var conv any
	if err := json.Unmarshal([]byte(conversion), &conv); err != nil {
		t.Fatal(err)
	}
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": name, "resourceVersion": "1"},
		"spec": map[string]any{"conversion": conv, "versions": []any{
			map[string]any{"name": "v1", "served": true, "storage": true, "schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object"}}},
		}}}}
	return o
}

// crdsOf is what the manifests package's CRDsOf gives for these CRDs, whose
// conversion (when Webhook) is a service target, as liveConversion's is.
func crdsOf(t *testing.T, objs ...*unstructured.Unstructured) ([]CRD, error) {
	t.Helper()
	var crds []CRD
	for i, o := range objs {
		c := CRD{Object: o, Source: fmt.Sprintf("crd.yaml document %d", i+1), Name: o.GetName()}
		if strategy, _, _ := unstructured.NestedString(o.Object, "spec", "conversion", "strategy"); strategy == "Webhook" {
			svc, _, err := unstructured.NestedMap(o.Object, "spec", "conversion", "webhook", "clientConfig", "service")
			if err != nil {
				return nil, err
			}
			up, _ := svc["path"].(string)
			ns, _ := svc["namespace"].(string)
			name, _ := svc["name"].(string)
			c.Conversion = &Route{Path: ConversionPath(c.Name, up), UpstreamPath: up, Webhooks: []string{c.Name},
				Service: &ServiceRef{Namespace: ns, Name: name, Port: 443, Path: up}}
		}
		crds = append(crds, c)
	}
	return crds, nil
}

func fakeDynamic(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{CRDResource: "CustomResourceDefinitionList"}, objs...)
}

func liveStanza(t *testing.T, c *CRDs, name string) (string, *unstructured.Unstructured) {
	t.Helper()
	o, err := c.Dynamic.Resource(CRDResource).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	conv, _, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", "conversion")
	b, _ := json.Marshal(conv)
	return string(b), o
}

func TestRedirectAndRestoreExactly(t *testing.T) {
	live := crdObject(t, "widgets.shop.io", liveConversion)
	var logs bytes.Buffer
	c := &CRDs{Dynamic: fakeDynamic(live), Session: "s1", LeaseRef: "default/hookback-s1", Log: slog.New(slog.NewTextHandler(&logs, nil))}
	crds, err := crdsOf(t, crdObject(t, "widgets.shop.io", liveConversion))
	if err != nil {
		t.Fatal(err)
	}
	if crds[0].Conversion == nil || crds[0].Conversion.Path != "/convert/widgets.shop.io/convert" || crds[0].Conversion.UpstreamPath != "/convert" {
		t.Fatalf("conversion route %+v", crds[0].Conversion)
	}
	to := Target{URL: "https://10.0.0.1:8443/", CABundle: "QUJD"}
	installed, redirected, err := c.Ensure(context.Background(), crds, func(string) bool { return true }, to)
	if err != nil || len(installed) != 0 || len(redirected) != 1 {
		t.Fatalf("Ensure: installed %v redirected %v err %v", installed, redirected, err)
	}
	got, o := liveStanza(t, c, "widgets.shop.io")
	want := `{"strategy":"Webhook","webhook":{"clientConfig":{"caBundle":"QUJD","url":"https://10.0.0.1:8443/convert/widgets.shop.io/convert"},"conversionReviewVersions":["v1","v1beta1"]}}`
	if got != want {
		t.Errorf("redirected:\n%s\nwant\n%s", got, want)
	}
	if o.GetAnnotations()[AnnotationConversion] != liveConversion || o.GetLabels()[LabelSession] != "s1" || o.GetLabels()[LabelManagedBy] != ManagedByValue {
		t.Errorf("annotations %v labels %v", o.GetAnnotations(), o.GetLabels())
	}
	// A second Ensure (a re-apply, a restart of the session) keeps the
	// original stanza saved, never hookback's own.
	if _, _, err := c.Ensure(context.Background(), crds, func(string) bool { return true }, to); err != nil {
		t.Fatal(err)
	}
	if _, o := liveStanza(t, c, "widgets.shop.io"); o.GetAnnotations()[AnnotationConversion] != liveConversion {
		t.Errorf("saved after a second Ensure: %s", o.GetAnnotations()[AnnotationConversion])
	}
	restored, err := c.Restore(context.Background())
	if err != nil || len(restored) != 1 {
		t.Fatalf("Restore: %v %v", restored, err)
	}
	got, o = liveStanza(t, c, "widgets.shop.io")
	if got != liveConversion {
		t.Errorf("restored:\n%s\nwant byte for byte\n%s", got, liveConversion)
	}
	if len(o.GetAnnotations()) != 0 || len(o.GetLabels()) != 0 {
		t.Errorf("left annotations %v labels %v", o.GetAnnotations(), o.GetLabels())
	}
}

// TestRedirectToService: under `start --tunnel` the conversion points at
// the relay's Service, with the conversion's path, and is restored exactly.
func TestRedirectToService(t *testing.T) {
	live := crdObject(t, "widgets.shop.io", liveConversion)
	c := &CRDs{Dynamic: fakeDynamic(live), Session: "s1", LeaseRef: "default/hookback-s1", Log: slog.New(slog.DiscardHandler)}
	crds, err := crdsOf(t, crdObject(t, "widgets.shop.io", liveConversion))
	if err != nil {
		t.Fatal(err)
	}
	to := Target{URL: "https://ignored", CABundle: "QUJD", Service: &ServiceRef{Namespace: "hookback-system", Name: "hookback-relay-s1", Port: 443}}
	if _, _, err := c.Ensure(context.Background(), crds, func(string) bool { return true }, to); err != nil {
		t.Fatal(err)
	}
	got, _ := liveStanza(t, c, "widgets.shop.io")
	want := `{"strategy":"Webhook","webhook":{"clientConfig":{"caBundle":"QUJD","service":{"name":"hookback-relay-s1","namespace":"hookback-system","path":"/convert/widgets.shop.io/convert","port":443}},"conversionReviewVersions":["v1","v1beta1"]}}`
	if got != want {
		t.Errorf("redirected:\n%s\nwant\n%s", got, want)
	}
	if _, err := c.Restore(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, _ := liveStanza(t, c, "widgets.shop.io"); got != liveConversion {
		t.Errorf("restored:\n%s\nwant byte for byte\n%s", got, liveConversion)
	}
}

func TestEnsureReportsDifferencesAndFilters(t *testing.T) {
	live := crdObject(t, "widgets.shop.io", `{"strategy":"None"}`)
	want := crdObject(t, "widgets.shop.io", liveConversion)
	unstructured.SetNestedSlice(want.Object, []any{
		map[string]any{"name": "v1", "served": true, "storage": false, "schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object"}}},
		map[string]any{"name": "v2", "served": true, "storage": true},
	}, "spec", "versions")
	var logs bytes.Buffer
	c := &CRDs{Dynamic: fakeDynamic(live), Session: "s1", Log: slog.New(slog.NewTextHandler(&logs, nil))}
	crds, err := crdsOf(t, want)
	if err != nil {
		t.Fatal(err)
	}
	_, redirected, err := c.Ensure(context.Background(), crds, func(string) bool { return false }, Target{URL: "https://h"})
	if err != nil || len(redirected) != 0 {
		t.Fatalf("redirected %v err %v: the filter selects none", redirected, err)
	}
	line := logs.String()
	if strings.Count(line, "\n") != 1 || !strings.Contains(line, "make install") || !strings.Contains(line, "version v1 served/storage; version v2 missing from the cluster") {
		t.Errorf("log %q: want one line naming the differences and `make install`", line)
	}
	if got, _ := liveStanza(t, c, "widgets.shop.io"); got != `{"strategy":"None"}` {
		t.Errorf("conversion %s changed though not selected", got)
	}
	// A re-apply (hot reload, a regained Lease) does not say it again.
	if _, _, err := c.Ensure(context.Background(), crds, func(string) bool { return false }, Target{URL: "https://h"}); err != nil {
		t.Fatal(err)
	}
	if logs.String() != line {
		t.Errorf("the difference was logged again on the second Ensure:\n%s", logs.String())
	}
}

func TestCleanupRestoresDeadSessionsCRDs(t *testing.T) {
	live := crdObject(t, "widgets.shop.io", liveConversion)
	dyn := fakeDynamic(live)
	dead := &CRDs{Dynamic: dyn, Session: "dead", LeaseRef: "default/hookback-dead", Log: slog.New(slog.DiscardHandler)}
	crds, _ := crdsOf(t, live.DeepCopy())
	if _, _, err := dead.Ensure(context.Background(), crds, func(string) bool { return true }, Target{URL: "https://h"}); err != nil {
		t.Fatal(err)
	}
	expired := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "hookback-dead", Namespace: "default"},
		Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: time.Now().Add(-time.Hour)}, LeaseDurationSeconds: ptr.To(int32(30))}}
	r := &Registrar{Client: fake.NewClientset(expired), Dynamic: dyn, Log: slog.New(slog.DiscardHandler)}
	sessions, err := r.RestoreCRDs(context.Background(), CleanupOptions{Stale: true, Except: "me", DefaultLeaseNamespace: "default"})
	if err != nil || len(sessions) != 1 || sessions[0] != "dead" {
		t.Fatalf("RestoreCRDs: %v %v", sessions, err)
	}
	if got, _ := liveStanza(t, dead, "widgets.shop.io"); got != liveConversion {
		t.Errorf("after cleanup %s, want %s", got, liveConversion)
	}
}
