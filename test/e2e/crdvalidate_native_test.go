package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestValidateNativeKinds: built-in kinds judged by `hookback validate`
// against the bundled OpenAPI schemas and against the cluster's
// (--schemas-from-cluster) get the apiserver's verdict on a server-side
// dry-run create: valid objects pass, a wrong type is refused (the
// apiserver's decoder and hookback's schema check both name the field),
// and an unknown field is the same warning.
func TestValidateNativeKinds(t *testing.T) {
	t.Parallel()
	dir := repoPath("testdata", "crdvalidate", "native")
	ns := namespaceLabelled(t, nil)
	dyn, warnings := warningClient(t)
	resources := map[string]schema.GroupVersionResource{
		"Deployment": {Group: "apps", Version: "v1", Resource: "deployments"},
		"Pod":        {Version: "v1", Resource: "pods"},
		"ConfigMap":  {Version: "v1", Resource: "configmaps"},
		"Secret":     {Version: "v1", Resource: "secrets"},
	}
	for _, source := range [][]string{nil, {"--schemas-from-cluster"}} {
		args := append([]string{"validate", "--namespace", ns, "-o", "json"}, source...)
		stdout, stderr, code := hookback(t, env.kubeconfig, append(args, dir)...)
		if code != 1 {
			t.Fatalf("hookback %v: exit %d, want 1 (two invalid)\n%s", args, code, stderr)
		}
		var ours []validateResult
		if err := json.Unmarshal([]byte(stdout), &ours); err != nil {
			t.Fatalf("hookback %v: %v\n%s", args, err, stdout)
		}
		docs := loadDocs(t, dir)
		if len(ours) != len(docs) {
			t.Fatalf("hookback %v judged %d objects, want %d", args, len(ours), len(docs))
		}
		for i, d := range docs {
			h := ours[i]
			name := strings.Join(append([]string{"bundled"}, source...), ",") + "/" + filepath.Base(d.Source)
			if h.Problem != "" {
				t.Errorf("%s: hookback could not judge it: %s", name, h.Problem)
				continue
			}
			o := d.Object.DeepCopy()
			o.SetNamespace(ns)
			warnings.take()
			_, err := dyn.Resource(resources[o.GetKind()]).Namespace(ns).Create(context.Background(), o,
				metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			got := warnings.take()
			var status apierrors.APIStatus
			if err != nil && !errors.As(err, &status) {
				t.Fatalf("%s: dry-run: %v", name, err)
			}
			if (err == nil) != h.Allowed {
				t.Errorf("%s: apiserver allowed %v (%v), hookback %v (%s)", name, err == nil, err, h.Allowed, h.Message)
				continue
			}
			if err == nil && !reflect.DeepEqual(got, h.Warnings) {
				t.Errorf("%s: apiserver warned %q, hookback %q", name, got, h.Warnings)
			}
			if err != nil && !sameField(status.Status().Message, h.Errors) {
				t.Errorf("%s: apiserver %q and hookback %q name different fields", name, status.Status().Message, h.Errors)
			}
		}
	}
}

// sameField: the apiserver's decoding error ("... Go struct field
// DeploymentSpec.spec.replicas of type int32") names the field of
// hookback's first schema error ("spec.replicas: Invalid value: ...").
func sameField(apiserver string, ours []string) bool {
	if len(ours) == 0 {
		return false
	}
	field, _, _ := strings.Cut(ours[0], ":")
	// The decoder names list items without their index.
	for strings.Contains(field, "[") {
		i, j := strings.Index(field, "["), strings.Index(field, "]")
		field = field[:i] + field[j+1:]
	}
	return strings.Contains(apiserver, field)
}
