package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const validateTestdata = "../testdata/crdvalidate"

// TestValidateCommand: exit 0 when every object is valid, 1 when any is
// invalid, 2 on bad input, and the apiserver's messages on stdout.
func TestValidateCommand(t *testing.T) {
	crd := filepath.Join(validateTestdata, "widgets-crd.yaml")
	for _, tc := range []struct {
		name     string
		args     []string
		wantExit string // "" for 0
		stdout   []string
		stderr   string
	}{
		{name: "valid", args: []string{"--crd", crd, filepath.Join(validateTestdata, "examples", "widget.yaml")},
			stdout: []string{"Widget example: valid"}},
		{name: "invalid", args: []string{"--crd", crd, filepath.Join(validateTestdata, "create")}, wantExit: "exit 1",
			stdout: []string{`Widget replicas-inverted: Widget.crdvalidate.hookback.dev "replicas-inverted" is invalid: spec.maxReplicas: Forbidden: minReplicas must not exceed maxReplicas`,
				`Widget unknown-field: Warning: unknown field "spec.colour"`},
			stderr: "10 objects: 4 valid, 6 invalid, 0 not judged"},
		{name: "strict field validation", args: []string{"--crd", crd, "--field-validation", "Strict", "-o", "table", filepath.Join(validateTestdata, "create")}, wantExit: "exit 1",
			stdout: []string{`error: Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.colour"`}},
		{name: "update", args: []string{"--crd", crd, "--old", filepath.Join(validateTestdata, "update", "old.yaml"), filepath.Join(validateTestdata, "update", "new.yaml")}, wantExit: "exit 1",
			stdout: []string{`spec.class: Invalid value: "silver": class is immutable`, "upd-ratchet-kept: valid"}},
		{name: "refused CRD", args: []string{"--crd", filepath.Join(validateTestdata, "invalid", "crd-bad-rule.yaml"), filepath.Join(validateTestdata, "create")}, wantExit: "exit 2",
			stderr: "the apiserver would refuse this CRD: CustomResourceDefinition.apiextensions.k8s.io \"gadgets.crdvalidate.hookback.dev\" is invalid"},
		{name: "no CRD", args: []string{filepath.Join(validateTestdata, "create")}, wantExit: "exit 2", stdout: []string{"not judged: no CRD given for this kind"}},
		{name: "unreadable", args: []string{"--crd", crd, "/nonexistent/widget.yaml"}, wantExit: "exit 2", stderr: "read objects"},
		{name: "bad flags", args: []string{"--crd", crd, "--subresource", "scale", "--field-validation", "x", "-o", "yaml", "w.yaml"}, wantExit: "exit 2",
			stderr: `--output "yaml": want one of text, table, json, junit`},
		{name: "flag names in library errors", args: []string{"--subresource", "scale", "w.yaml"}, wantExit: "exit 2",
			stderr: `--subresource "scale": want status`},
		{name: "costs", args: []string{"--crd-cost", "--crd", crd},
			stdout: []string{"spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[class].x-kubernetes-validations[0].rule", "of the CRD budget"}},
		{name: "costs over budget", args: []string{"--crd-cost", filepath.Join(validateTestdata, "invalid", "crd-too-costly.yaml")}, wantExit: "exit 2",
			stdout: []string{"more than 100x OVER"}, stderr: "over the apiserver's cost budget"},
		{name: "watch needs files", args: []string{"--watch", "--crd", crd, "-"}, wantExit: "exit 2", stderr: "stdin (-) cannot be watched"},
		{name: "status needs old", args: []string{"--subresource", "status", "w.yaml"}, wantExit: "exit 2",
			stderr: "a status update replaces a stored object: name it with --old"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, err := run(t, append([]string{"validate"}, tc.args...)...)
			switch {
			case tc.wantExit == "" && err != nil:
				t.Fatalf("%v\n%s", err, stdout)
			case tc.wantExit != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantExit)):
				t.Fatalf("err = %v, want %s\n%s", err, tc.wantExit, stdout)
			}
			for _, want := range tc.stdout {
				if !strings.Contains(stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout)
				}
			}
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, stderr)
			}
		})
	}
}

// TestValidateInAProject: with no --crd, a kubebuilder project's
// config/crd (a kustomize directory, with its conversion patch) holds the
// CRDs.
func TestValidateInAProject(t *testing.T) {
	obj := filepath.Join(t.TempDir(), "cronjob.yaml")
	if err := os.WriteFile(obj, []byte("apiVersion: batch.tutorial.kubebuilder.io/v2\nkind: CronJob\nmetadata: {name: nightly}\nspec: {schedule: \"@daily\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir("../testdata/project")
	stdout, _, err := run(t, "validate", obj)
	if err == nil || !strings.HasPrefix(err.Error(), "exit 1") {
		t.Fatalf("err = %v, want exit 1\n%s", err, stdout)
	}
	want := `CronJob.batch.tutorial.kubebuilder.io "nightly" is invalid: spec.schedule: Invalid value: "string": spec.schedule in body must be of type object: "string"`
	if !strings.Contains(stdout, want) {
		t.Errorf("stdout lacks %q:\n%s", want, stdout)
	}
}

// TestTestTargetsCRD: suite cases sent to a CRD's rules (test --crd),
// creates, updates and a status update, pass.
func TestTestTargetsCRD(t *testing.T) {
	stdout, _, err := run(t, "test", "--crd", filepath.Join(validateTestdata, "widgets-crd.yaml"), "--webhooks", "none", filepath.Join(validateTestdata, "suite"))
	if err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	for _, name := range []string{"valid-create", "replicas-inverted", "class-is-immutable", "failed-stays-failed"} {
		if !strings.Contains(stdout, name) {
			t.Errorf("the report lacks case %s:\n%s", name, stdout)
		}
	}
}
