package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTestInitFromObjects: test init --from-objects writes a case per
// object of the corpus, each expecting what the CRD's rules answer now
// (the apiserver's message for the invalid ones, its warnings for the
// valid ones), and hookback test runs the suite it wrote green; an object
// of a kind no CRD defines is skipped, saying so.
func TestTestInitFromObjects(t *testing.T) {
	crd := filepath.Join(validateTestdata, "widgets-crd.yaml")
	out := filepath.Join(t.TempDir(), "suite")
	stdout, stderr, err := run(t, "test", "init", "--from-objects", filepath.Join(validateTestdata, "create"),
		"--from-objects", filepath.Join("testdata", "init-objects", "pod.yaml"), "--crd", crd, "--out", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	for _, want := range []string{"10 cases written to " + out, "(0 duplicate objects, 1 objects skipped)",
		"no CRD given for Pod: give it with --crd"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{name: "denied", file: "widgets.crdvalidate.hookback.dev_widget_replicas-inverted_create.yaml",
			want: []string{"kind: Case", "webhooks:\n- widgets.crdvalidate.hookback.dev", "configurationKind: CustomResourceDefinition",
				"operation: CREATE", "namespace: default", "result: denied", "code: 422",
				"minReplicas must not exceed maxReplicas"}},
		{name: "field errors in any order", file: "widgets.crdvalidate.hookback.dev_widget_required-and-bounds_create.yaml",
			want: []string{"result: denied", "messageRegexp:"}},
		{name: "allowed with a warning", file: "widgets.crdvalidate.hookback.dev_widget_unknown-field_create.yaml",
			want: []string{"result: allowed", `- unknown field "spec.colour"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(out, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("%s lacks %q:\n%s", tc.file, w, b)
				}
			}
		})
	}
	t.Run("the suite passes", func(t *testing.T) {
		stdout, stderr, err := run(t, "test", "--crd", crd, "--webhooks", "none", out)
		if err != nil || !strings.Contains(stderr, "10 results: 10 passed, 0 failed, 0 errors") {
			t.Fatalf("%v\n%s\n%s", err, stdout, stderr)
		}
	})
	t.Run("never overwrites", func(t *testing.T) {
		_, _, err := run(t, "test", "init", "--from-objects", filepath.Join(validateTestdata, "create"), "--crd", crd, "--out", out)
		if err == nil || !strings.Contains(err.Error(), "test init never overwrites a case") {
			t.Fatalf("err = %v, want a refusal to overwrite", err)
		}
	})
	t.Run("one source", func(t *testing.T) {
		_, _, err := run(t, "test", "init", "--out", out)
		if err == nil || !strings.Contains(err.Error(), "test init needs --from-records DIR or --from-objects DIR") {
			t.Fatalf("err = %v", err)
		}
	})
}
