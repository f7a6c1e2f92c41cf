package policy

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// testCase is one request of a testdata/*/cases.yaml table and what the
// evaluation must say about it.
type testCase struct {
	Name      string         `json:"name"`
	Operation string         `json:"operation"`
	Namespace string         `json:"namespace"`
	Resource  string         `json:"resource"` // group/version/resource; default from the object's kind
	Object    map[string]any `json:"object"`
	OldObject map[string]any `json:"oldObject"`
	Want      struct {
		Allowed  bool          `json:"allowed"`
		Message  string        `json:"message"`
		Warnings []string      `json:"warnings"`
		Patch    []PatchOp     `json:"patch"`
		Bindings []wantBinding `json:"bindings"`
	} `json:"want"`
}

type wantBinding struct {
	Policy           string            `json:"policy"`
	Decision         Decision          `json:"decision"`
	Actions          []string          `json:"actions"`
	Message          string            `json:"message"`
	Validations      []string          `json:"validations"`
	Variables        map[string]any    `json:"variables"`
	AuditAnnotations map[string]string `json:"auditAnnotations"`
	Patch            []PatchOp         `json:"patch"`
}

func TestEvaluate(t *testing.T) {
	dirs, err := filepath.Glob("testdata/*/cases.yaml")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no testdata/*/cases.yaml: %v", err)
	}
	for _, casesFile := range dirs {
		dir := filepath.Dir(casesFile)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			set, err := Load([]string{filepath.Join(dir, "policy.yaml")}, nil)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			e, err := New(context.Background(), set, Options{})
			if err != nil {
				t.Fatalf("new: %v", err)
			}
			for _, tc := range readCases(t, casesFile) {
				t.Run(tc.Name, func(t *testing.T) {
					ev, err := e.Evaluate(context.Background(), tc.request(t))
					if err != nil {
						t.Fatalf("evaluate: %v", err)
					}
					check(t, tc, ev)
				})
			}
		})
	}
}

func readCases(t *testing.T, path string) []testCase {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cases []testCase
	if err := yaml.UnmarshalStrict(b, &cases); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return cases
}

func (tc testCase) request(t *testing.T) *admissionv1.AdmissionRequest {
	t.Helper()
	obj := tc.Object
	if obj == nil {
		obj = tc.OldObject
	}
	gvk := schema.FromAPIVersionAndKind(obj["apiVersion"].(string), obj["kind"].(string))
	gvr := gvk.GroupVersion().WithResource(strings.ToLower(gvk.Kind) + "s")
	if tc.Resource != "" {
		p := strings.Split(tc.Resource, "/")
		gvr = schema.GroupVersionResource{Group: p[0], Version: p[1], Resource: p[2]}
	}
	name, _ := obj["metadata"].(map[string]any)["name"].(string)
	dry := true
	return &admissionv1.AdmissionRequest{
		UID: "test", Kind: metav1.GroupVersionKind(gvk), Resource: metav1.GroupVersionResource(gvr),
		RequestKind: (*metav1.GroupVersionKind)(&gvk), RequestResource: (*metav1.GroupVersionResource)(&gvr),
		Name: name, Namespace: tc.Namespace, Operation: admissionv1.Operation(tc.Operation),
		UserInfo: authenticationv1.UserInfo{Username: "dev", Groups: []string{"system:authenticated"}},
		Object:   raw(t, tc.Object), OldObject: raw(t, tc.OldObject), DryRun: &dry,
	}
}

func raw(t *testing.T, m map[string]any) runtime.RawExtension {
	if m == nil {
		return runtime.RawExtension{}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return runtime.RawExtension{Raw: b}
}

func check(t *testing.T, tc testCase, ev *Evaluation) {
	t.Helper()
	w := tc.Want
	if ev.Allowed != w.Allowed || ev.Message != w.Message {
		t.Errorf("allowed %v message %q\nwant    %v message %q", ev.Allowed, ev.Message, w.Allowed, w.Message)
	}
	if !reflect.DeepEqual(ev.Warnings, w.Warnings) {
		t.Errorf("warnings %q, want %q", ev.Warnings, w.Warnings)
	}
	if w.Patch != nil && !sameJSON(ev.Patch, w.Patch) {
		t.Errorf("patch %s, want %s", js(ev.Patch), js(w.Patch))
	}
	if len(ev.Bindings) != len(w.Bindings) {
		t.Fatalf("%d bindings matched (%s), want %d", len(ev.Bindings), js(ev.Bindings), len(w.Bindings))
	}
	for i, wb := range w.Bindings {
		checkBinding(t, ev.Bindings[i], wb)
	}
}

func checkBinding(t *testing.T, got BindingResult, w wantBinding) {
	t.Helper()
	var results []string
	for _, v := range got.Validations {
		results = append(results, v.Result)
	}
	vars := map[string]any{}
	for _, v := range got.Variables {
		vars[v.Name] = v.Value
		if v.Error != "" {
			vars[v.Name] = "error: " + v.Error
		}
	}
	switch {
	case got.Policy != w.Policy || got.Decision != w.Decision:
		t.Errorf("binding %s: %s, want %s: %s", got.Policy, got.Decision, w.Policy, w.Decision)
	case !reflect.DeepEqual(got.Actions, w.Actions):
		t.Errorf("%s: actions %q, want %q", got.Policy, got.Actions, w.Actions)
	case w.Validations != nil && !reflect.DeepEqual(results, w.Validations):
		t.Errorf("%s: validations %q, want %q", got.Policy, results, w.Validations)
	case w.Message != "" && got.Message != w.Message:
		t.Errorf("%s: message %q\nwant %q", got.Policy, got.Message, w.Message)
	case w.Variables != nil && !sameJSON(vars, w.Variables):
		t.Errorf("%s: variables %s, want %s", got.Policy, js(vars), js(w.Variables))
	case w.AuditAnnotations != nil && !reflect.DeepEqual(got.AuditAnnotations, w.AuditAnnotations):
		t.Errorf("%s: audit annotations %q, want %q", got.Policy, got.AuditAnnotations, w.AuditAnnotations)
	case w.Patch != nil && !sameJSON(got.Patch, w.Patch):
		t.Errorf("%s: patch %s, want %s", got.Policy, js(got.Patch), js(w.Patch))
	}
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func sameJSON(a, b any) bool {
	var x, y any
	_ = json.Unmarshal([]byte(js(a)), &x)
	_ = json.Unmarshal([]byte(js(b)), &y)
	return reflect.DeepEqual(x, y)
}
