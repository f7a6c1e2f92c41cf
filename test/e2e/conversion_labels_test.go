package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/hookback/hookback/registration"
)

// labelsCRDs are this test's own CRDs: gadgets, installed by kustomize
// (its own managed-by) with a conversion webhook, in the manifests given to
// hookback; sprockets, a Helm chart's, not in them.
const (
	gadgetsCRD   = "gadgets.labels.e2e.hookback.dev"
	sprocketsCRD = "sprockets.labels.e2e.hookback.dev"
)

// TestConversionKeepsCRDLabels: a CRD that carries its own
// app.kubernetes.io/managed-by (kustomize) has its conversion redirected by
// hookback, and hookback's labels while it is; once hookback stops (Ctrl-C;
// kill -9 and the next run of the session; kill -9 and `hookback
// cleanup`) its labels, annotations and conversion are those it had
// before, on the apiserver. A CRD hookback does not redirect is never
// written (its resourceVersion does not move).
func TestConversionKeepsCRDLabels(t *testing.T) {
	requireLocal(t, "it creates and deletes cluster-scoped CRDs of its own")
	t.Parallel()
	dyn := dynamicClient(t)
	manifest := labelsCRD(t, gadgetsCRD, "Gadget", map[string]string{registration.LabelManagedBy: "kustomize", "app.kubernetes.io/name": "gadgets"},
		map[string]string{"controller-gen.kubebuilder.io/version": "v0.19.0"})
	helm := labelsCRD(t, sprocketsCRD, "Sprocket", map[string]string{registration.LabelManagedBy: "Helm"},
		map[string]string{"meta.helm.sh/release-name": "sprockets", "meta.helm.sh/release-namespace": "sprockets-system"})
	createCRD(t, dyn, manifest)
	untouched := createCRD(t, dyn, helm)
	b, err := yaml.Marshal(manifest.Object)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "crd.yaml")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--webhooks", "none", "--controllers", "none", "--inspector-address", "", "--webhook-config", file,
		"--upstream", "http://127.0.0.1:" + itoa(freePort(t))}
	before := crdMeta(t, dyn, gadgetsCRD)

	redirected := func(t *testing.T, session string) {
		t.Helper()
		during := crdMeta(t, dyn, gadgetsCRD)
		if !strings.Contains(during.conversion, `"url":"https://`) || !strings.Contains(during.conversion, registration.ConvertPathPrefix+gadgetsCRD+"/convert") {
			t.Fatalf("conversion %s during the session: want it pointed at hookback", during.conversion)
		}
		if during.labels[registration.LabelManagedBy] != "hookback" || during.labels[registration.LabelSession] != session {
			t.Errorf("labels during the session %v: want hookback's", during.labels)
		}
		if got, want := during.annotations[registration.AnnotationLabels], `{"app.kubernetes.io/managed-by":"kustomize"}`; got != want {
			t.Errorf("annotation %s = %q, want %s", registration.AnnotationLabels, got, want)
		}
	}
	givenBack := func(t *testing.T) {
		t.Helper()
		if after := crdMeta(t, dyn, gadgetsCRD); !reflect.DeepEqual(after, before) {
			t.Errorf("after hookback stopped:\n%+v\nwant as before:\n%+v", after, before)
		}
		if o, err := dyn.Resource(crdGVR).Get(context.Background(), sprocketsCRD, metav1.GetOptions{}); err != nil || o.GetResourceVersion() != untouched.GetResourceVersion() {
			t.Errorf("CRD %s, not in the manifests, was written (resourceVersion %s, was %s; %v)", sprocketsCRD, o.GetResourceVersion(), untouched.GetResourceVersion(), err)
		}
	}

	t.Run("at Ctrl-C", func(t *testing.T) {
		p := start(t, args...)
		p.ready(t)
		redirected(t, p.session)
		p.signal(syscall.SIGINT)
		if code := p.wait(t); code != 0 {
			t.Fatalf("exit code %d", code)
		}
		givenBack(t)
	})
	t.Run("by the next run of the session after kill -9", func(t *testing.T) {
		p := start(t, args...)
		p.ready(t)
		p.signal(syscall.SIGKILL)
		p.wait(t)
		next := start(t, append(args, "--session", p.session)...)
		next.ready(t)
		redirected(t, p.session)
		next.signal(syscall.SIGINT)
		if code := next.wait(t); code != 0 {
			t.Fatalf("exit code %d", code)
		}
		givenBack(t)
	})
	t.Run("by hookback cleanup after kill -9", func(t *testing.T) {
		p := start(t, args...)
		p.ready(t)
		p.signal(syscall.SIGKILL)
		p.wait(t)
		out, errOut, code := hookback(t, env.kubeconfig, "cleanup", "--session", p.session)
		if code != 0 || !strings.Contains(out, p.session) {
			t.Fatalf("cleanup: exit %d\n%s\n%s", code, out, errOut)
		}
		givenBack(t)
	})
}

// crdMetadata is what a restore must give back of a CRD.
type crdMetadata struct {
	labels, annotations map[string]string
	conversion          string
}

func crdMeta(t *testing.T, dyn dynamic.Interface, name string) crdMetadata {
	t.Helper()
	o, err := dyn.Resource(crdGVR).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	conv, _, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", "conversion")
	b, err := json.Marshal(conv)
	if err != nil {
		t.Fatal(err)
	}
	return crdMetadata{labels: o.GetLabels(), annotations: o.GetAnnotations(), conversion: string(b)}
}

// labelsCRD is a CRD in two versions whose conversion webhook is a
// Service's, as kubebuilder's config/crd patch makes it.
func labelsCRD(t *testing.T, name, kind string, labels, anns map[string]string) *unstructured.Unstructured {
	t.Helper()
	plural, group, _ := strings.Cut(name, ".")
	schema := map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"group": group, "scope": "Namespaced",
			"names": map[string]any{"plural": plural, "singular": strings.ToLower(kind), "kind": kind, "listKind": kind + "List"},
			"versions": []any{
				map[string]any{"name": "v1", "served": true, "storage": true, "schema": schema},
				map[string]any{"name": "v2", "served": true, "storage": false, "schema": schema},
			},
			"conversion": map[string]any{"strategy": "Webhook", "webhook": map[string]any{
				"clientConfig":             map[string]any{"service": map[string]any{"namespace": plural + "-system", "name": plural + "-webhook-service", "path": "/convert"}},
				"conversionReviewVersions": []any{"v1"}}}}}}
	o.SetLabels(labels)
	o.SetAnnotations(anns)
	return o
}

// createCRD creates crd anew (an earlier run's is deleted first), deleted
// at the end of the test; it returns it once established.
func createCRD(t *testing.T, dyn dynamic.Interface, crd *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	res := dyn.Resource(crdGVR)
	gone := func(ctx context.Context) (bool, error) {
		_, err := res.Get(ctx, crd.GetName(), metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}
	if err := res.Delete(context.Background(), crd.GetName(), metav1.DeleteOptions{}); err == nil {
		eventually(t, "an earlier run's CRD "+crd.GetName()+" gone", gone)
	}
	if _, err := res.Create(context.Background(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = res.Delete(context.Background(), crd.GetName(), metav1.DeleteOptions{}) })
	// The apiserver writes the status until the CRD is established.
	var established *unstructured.Unstructured
	eventually(t, "CRD "+crd.GetName()+" established", func(ctx context.Context) (bool, error) {
		o, err := res.Get(ctx, crd.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
		for _, c := range conds {
			if m, _ := c.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
				established = o
				return true, nil
			}
		}
		return false, nil
	})
	return established
}
