package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/hookback/hookback/manifests"
)

const validateCRDName = "widgets.crdvalidate.hookback.dev"

var validateWidgets = schema.GroupVersionResource{Group: "crdvalidate.hookback.dev", Version: "v1", Resource: "widgets"}

// validateResult is the part of `hookback validate -o json`'s rows the
// test compares.
type validateResult struct {
	Name     string   `json:"name"`
	Allowed  bool     `json:"allowed"`
	Message  string   `json:"message"`
	Errors   []string `json:"errors"`
	Warnings []string `json:"warnings"`
	Problem  string   `json:"problem"`
}

// sameAs: the same verdict, warnings and errors, and the same message
// but for the order of its errors, which the apiserver's OpenAPI
// validator takes from map iteration.
func (a validateResult) sameAs(b validateResult) bool {
	sorted := func(l []string) []string { return slices.Sorted(slices.Values(l)) }
	without := func(r validateResult) string {
		if len(r.Errors) < 2 {
			return r.Message
		}
		return strings.TrimSuffix(r.Message, "["+strings.Join(r.Errors, ", ")+"]")
	}
	return a.Allowed == b.Allowed && reflect.DeepEqual(a.Warnings, b.Warnings) &&
		reflect.DeepEqual(sorted(a.Errors), sorted(b.Errors)) && without(a) == without(b)
}

// TestCRDValidateFidelity: the corpus of testdata/crdvalidate (creates,
// updates, status updates; defaults, pruning, CEL messages, fieldPath and
// reason, a run-time error on a missing key, transition rules,
// optionalOldSelf, ratcheting) gets the same verdict, message and
// warnings from `hookback validate` as from the apiserver with the CRD
// installed, through server-side dry-runs; the creates again with the
// CRD read from the cluster (--crd-from-cluster). The stored objects of the
// updates are created under the CRD's previous release
// (widgets-crd-v0.yaml), their status set through /status, before the
// current CRD replaces it: as on a real upgrade, some are invalid now.
func TestCRDValidateFidelity(t *testing.T) {
	dir := repoPath("testdata", "crdvalidate")
	ns := namespaceLabelled(t, nil)
	dyn, warnings := warningClient(t)
	installValidateCRD(t, dyn, filepath.Join(dir, "widgets-crd-v0.yaml"))
	for _, d := range loadDocs(t, filepath.Join(dir, "update", "old.yaml")) {
		storeOld(t, dyn, d.Object, ns)
	}
	replaceValidateCRD(t, dyn, filepath.Join(dir, "widgets-crd.yaml"))

	crd := filepath.Join(dir, "widgets-crd.yaml")
	storedClasses(t, crd)
	suiteFromCluster(t, filepath.Join(dir, "suite"))
	old := filepath.Join(dir, "update", "old.yaml")
	runs := []struct {
		name, subresource string
		args              []string
		objects           string
	}{
		{name: "create", objects: filepath.Join(dir, "create")},
		// The CRD as the cluster serves it, read with --crd-from-cluster.
		{name: "create-from-cluster", args: []string{"--crd-from-cluster"}, objects: filepath.Join(dir, "create")},
		{name: "update", args: []string{"--old", old}, objects: filepath.Join(dir, "update", "new.yaml")},
		{name: "status", subresource: "status", args: []string{"--old", old, "--subresource", "status"}, objects: filepath.Join(dir, "update", "status.yaml")},
	}
	for _, run := range runs {
		args := append([]string{"validate", "--namespace", ns, "-o", "json"}, run.args...)
		if !slices.Contains(run.args, "--crd-from-cluster") {
			args = append(args, "--crd", crd)
		}
		stdout, stderr, code := hookback(t, env.kubeconfig, append(args, run.objects)...)
		if code != 0 && code != 1 {
			t.Fatalf("hookback %v: exit %d\n%s", args, code, stderr)
		}
		var ours []validateResult
		if err := json.Unmarshal([]byte(stdout), &ours); err != nil {
			t.Fatalf("hookback %v: %v\n%s", args, err, stdout)
		}
		docs := loadDocs(t, run.objects)
		if len(ours) != len(docs) {
			t.Fatalf("%s: hookback judged %d objects, want %d", run.name, len(ours), len(docs))
		}
		for i, d := range docs {
			h := ours[i]
			t.Run(run.name+"/"+d.Object.GetName(), func(t *testing.T) {
				if h.Problem != "" {
					t.Fatalf("hookback could not judge it: %s", h.Problem)
				}
				got := dryRun(context.Background(), t, dyn, warnings, d.Object, ns, run.subresource)
				if !got.sameAs(h) {
					t.Errorf("apiserver: allowed %v message %q warnings %q\nhookback:  allowed %v message %q warnings %q",
						got.Allowed, got.Message, got.Warnings, h.Allowed, h.Message, h.Warnings)
				}
				if !h.Allowed && len(h.Errors) == 0 {
					t.Errorf("hookback denied %s with no errors", h.Name)
				}
			})
		}
	}
}

// suiteFromCluster runs the CRD cases of testdata/crdvalidate/suite with
// the CRD read from the cluster (test --crd-from-cluster): they pass as
// with the CRD's file.
func suiteFromCluster(t *testing.T, suiteDir string) {
	t.Helper()
	stdout, stderr, code := hookback(t, env.kubeconfig, "test", "--crd-from-cluster", "--webhooks", "none", suiteDir)
	if code != 0 || !strings.Contains(stderr, " passed, 0 failed, 0 errors") {
		t.Errorf("hookback test --crd-from-cluster: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

func loadDocs(t *testing.T, path string) []manifests.Document {
	t.Helper()
	docs, err := manifests.Load([]string{path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// installValidateCRD creates the test's CRD (removing one a killed run
// left), waits until it is served, and deletes it at the end.
func installValidateCRD(t *testing.T, dyn dynamic.Interface, path string) {
	t.Helper()
	installCRD(t, dyn, path, validateWidgets)
}

// installCRD creates the CRD of path, whose resource is gvr (removing one
// a killed run left), waits until it is served, and deletes it at the
// end.
func installCRD(t *testing.T, dyn dynamic.Interface, path string, gvr schema.GroupVersionResource) {
	t.Helper()
	ctx := context.Background()
	crds := dyn.Resource(crdGVR)
	name := gvr.GroupResource().String()
	_ = crds.Delete(ctx, name, metav1.DeleteOptions{})
	eventually(t, "a CRD left by an earlier run to go", func(ctx context.Context) (bool, error) {
		_, err := crds.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	crd := loadDocs(t, path)[0].Object
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD: %v", err)
	}
	t.Cleanup(func() {
		// Wait until it is gone: the help example of audit --crd lists
		// the Widgets of the cluster, which must not be these.
		_ = crds.Delete(context.Background(), name, metav1.DeleteOptions{})
		eventually(t, "CRD "+name+" to be deleted", func(ctx context.Context) (bool, error) {
			_, err := crds.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	})
	eventually(t, "CRD "+name+" to be served", func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
}

// replaceValidateCRD updates the installed CRD's spec to the one in path.
func replaceValidateCRD(t *testing.T, dyn dynamic.Interface, path string) {
	t.Helper()
	crds := dyn.Resource(crdGVR)
	cur, err := crds.Get(context.Background(), validateCRDName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	next := loadDocs(t, path)[0].Object
	next.SetResourceVersion(cur.GetResourceVersion())
	if _, err := crds.Update(context.Background(), next, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update CRD: %v", err)
	}
	// The apiserver serves the new schema once its CRD handler has seen
	// the update: wait until it refuses what only the new schema refuses.
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": validateWidgets.GroupVersion().String(), "kind": "Widget",
		"metadata": map[string]any{"name": "probe"}, "spec": map[string]any{"class": "gold", "maxReplicas": int64(101)}}}
	eventually(t, "the apiserver to serve the schema of "+path, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(validateWidgets).Namespace("default").Create(ctx, probe.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsInvalid(err), nil
	})
}

// storeOld creates obj in ns and sets its status through /status.
func storeOld(t *testing.T, dyn dynamic.Interface, obj *unstructured.Unstructured, ns string) {
	t.Helper()
	ctx := context.Background()
	r := dyn.Resource(validateWidgets).Namespace(ns)
	created, err := r.Create(ctx, obj.DeepCopy(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("store %s: %v", obj.GetName(), err)
	}
	status, ok := obj.Object["status"]
	if !ok {
		return
	}
	created.Object["status"] = status
	if _, err := r.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("store the status of %s: %v", obj.GetName(), err)
	}
}

// dryRun sends obj to the apiserver as a dry-run create, or, when an
// object of its name is stored, as a dry-run update of it (of its status
// with subresource "status"), and returns the answer.
func dryRun(ctx context.Context, t *testing.T, dyn dynamic.Interface, w *warningList, obj *unstructured.Unstructured, ns, subresource string) validateResult {
	r := dyn.Resource(validateWidgets).Namespace(ns)
	o := obj.DeepCopy()
	o.SetNamespace(ns)
	dry := []string{metav1.DryRunAll}
	stored, err := r.Get(ctx, o.GetName(), metav1.GetOptions{})
	w.take()
	switch {
	case apierrors.IsNotFound(err):
		_, err = r.Create(ctx, o, metav1.CreateOptions{DryRun: dry})
	case err != nil:
		t.Fatalf("get %s: %v", o.GetName(), err)
	case subresource == "status":
		o.SetResourceVersion(stored.GetResourceVersion())
		w.take()
		_, err = r.UpdateStatus(ctx, o, metav1.UpdateOptions{DryRun: dry})
	default:
		o.SetResourceVersion(stored.GetResourceVersion())
		w.take()
		_, err = r.Update(ctx, o, metav1.UpdateOptions{DryRun: dry})
	}
	got := validateResult{Name: o.GetName(), Allowed: err == nil, Warnings: w.take()}
	var status apierrors.APIStatus
	switch {
	case err == nil:
	case errors.As(err, &status):
		got.Message = status.Status().Message
		got.Errors = causes(status)
	default:
		t.Fatalf("dry-run %s: %v", o.GetName(), err)
	}
	return got
}

// causes are the status's field errors as validate writes them ("field:
// message"), or its message when it has none.
func causes(status apierrors.APIStatus) []string {
	s := status.Status()
	var l []string
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			if c.Field == "" {
				l = append(l, c.Message)
				continue
			}
			l = append(l, c.Field+": "+c.Message)
		}
	}
	if len(l) == 0 {
		l = []string{s.Message}
	}
	return l
}

// TestCRDValidateRefusedCRDs: a CRD the apiserver refuses (a rule that
// does not compile, one over the cost budget, a schema that is not
// structural) makes `hookback validate` exit 2 with the apiserver's own
// message, which a dry-run create of the CRD returns.
func TestCRDValidateRefusedCRDs(t *testing.T) {
	t.Parallel()
	crds := dynamicClient(t).Resource(crdGVR)
	for _, file := range []string{"crd-bad-rule.yaml", "crd-too-costly.yaml", "crd-not-structural.yaml"} {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			path := repoPath("testdata", "crdvalidate", "invalid", file)
			_, err := crds.Create(context.Background(), loadDocs(t, path)[0].Object, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			var status apierrors.APIStatus
			if !errors.As(err, &status) || !apierrors.IsInvalid(err) {
				t.Fatalf("the apiserver accepted the CRD or failed otherwise: %v", err)
			}
			_, stderr, code := hookback(t, env.kubeconfig, "validate", "--crd", path, repoPath("testdata", "crdvalidate", "create"))
			if code != 2 || !strings.Contains(stderr, "the apiserver would refuse this CRD: "+status.Status().Message) {
				t.Errorf("hookback validate: exit %d, stderr:\n%s\nwant exit 2 and the apiserver's message:\n%s", code, stderr, status.Status().Message)
			}
		})
	}
}

// storedClasses runs `hookback audit --crd` with the current CRD and
// checks each stored object's class: the objects stored under the
// previous release with a maxReplicas the new one refuses stay updatable
// until it changes.
func storedClasses(t *testing.T, crd string) {
	t.Helper()
	stdout, stderr, code := hookback(t, env.kubeconfig, "audit", "--crd", crd, "-o", "json")
	if code != 1 {
		t.Fatalf("hookback audit --crd: exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	var rows []struct{ Name, Class string }
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	failing := map[string]string{}
	for _, r := range rows {
		if r.Class != "valid" {
			failing[r.Name[strings.Index(r.Name, "/")+1:]] = r.Class
		}
	}
	want := map[string]string{"upd-ratchet-kept": "fails only when the failing field is changed", "upd-ratchet-changed": "fails only when the failing field is changed"}
	if len(rows) != 9 || !reflect.DeepEqual(failing, want) {
		t.Errorf("audit --crd: %d rows, failing %v; want 9 rows, failing %v\n%s", len(rows), failing, want, stdout)
	}
}
