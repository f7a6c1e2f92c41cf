package crdvalidate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hookback/hookback/internal/report"
)

var update = flag.Bool("update", false, "rewrite testdata/crdvalidate/golden from what validate answers")

const corpus = "../testdata/crdvalidate"

// TestCorpus judges the fidelity corpus (the same files the e2e test sends
// to a real apiserver, which proves these answers) and compares every
// verdict, message and warning with the golden files.
func TestCorpus(t *testing.T) {
	crd := filepath.Join(corpus, "widgets-crd.yaml")
	old := filepath.Join(corpus, "update", "old.yaml")
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"create", Options{Objects: []string{filepath.Join(corpus, "create")}}},
		{"update", Options{Old: []string{old}, Objects: []string{filepath.Join(corpus, "update", "new.yaml")}}},
		{"status", Options{Old: []string{old}, Subresource: "status", Objects: []string{filepath.Join(corpus, "update", "status.yaml")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.CRDs = []string{crd}
			rep, err := Run(context.Background(), tc.opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i := range rep {
				rep[i] = canonical(t, rep[i])
			}
			var got bytes.Buffer
			if err := report.JSON(&got, rep); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join(corpus, "golden", tc.name+".json")
			if *update {
				if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != string(want) {
				t.Errorf("validate answered (go test -update to accept):\n%s\nwant:\n%s", got.String(), want)
			}
		})
	}
}

// canonical sorts r's errors, in Errors and in Message: the apiserver's
// OpenAPI validator reports the properties of an object in map order, so
// neither it nor validate keeps one order from run to run.
func canonical(t *testing.T, r Result) Result {
	t.Helper()
	if len(r.Errors) < 2 {
		return r
	}
	prefix, ok := strings.CutSuffix(r.Message, "["+strings.Join(r.Errors, ", ")+"]")
	if !ok {
		t.Fatalf("message %q does not list the errors %q", r.Message, r.Errors)
	}
	r.Errors = slices.Sorted(slices.Values(r.Errors))
	r.Message = prefix + "[" + strings.Join(r.Errors, ", ") + "]"
	return r
}

func TestRunInput(t *testing.T) {
	crd := filepath.Join(corpus, "widgets-crd.yaml")
	for _, tc := range []struct {
		name    string
		opts    Options
		stdin   string
		wantErr string
		// wantProblem is the Problem of the single result.
		wantProblem string
	}{
		{name: "no objects", opts: Options{CRDs: []string{crd}}, wantErr: "no objects to judge"},
		{name: "bad subresource", opts: Options{Objects: []string{"-"}, Subresource: "scale", Old: []string{"x"}},
			wantErr: `crdvalidate.Options.Subresource "scale": want status`},
		{name: "status without old", opts: Options{Objects: []string{"-"}, Subresource: "status"},
			wantErr: "a status update replaces a stored object"},
		{name: "bad field validation", opts: Options{Objects: []string{"-"}, FieldValidation: "strict"},
			wantErr: `crdvalidate.Options.FieldValidation "strict": want Warn`},
		{name: "unreadable", opts: Options{CRDs: []string{crd}, Objects: []string{"/nonexistent/w.yaml"}}, wantErr: "read objects: read manifest"},
		{name: "refused CRD", opts: Options{CRDs: []string{filepath.Join(corpus, "invalid", "crd-bad-rule.yaml")}, Objects: []string{"-"}},
			stdin: "{}", wantErr: "the apiserver would refuse this CRD"},
		{name: "no CRD for the kind", opts: Options{CRDs: []string{crd}, Objects: []string{"-"}},
			stdin:       `{"apiVersion":"other.dev/v1","kind":"Gadget","metadata":{"name":"g"}}`,
			wantProblem: "no CRD given for this kind: give the CustomResourceDefinition of Gadget.other.dev"},
		{name: "version not served", opts: Options{CRDs: []string{crd}, Objects: []string{"-"}},
			stdin:       `{"apiVersion":"crdvalidate.hookback.dev/v9","kind":"Widget","metadata":{"name":"w"}}`,
			wantProblem: "crdvalidate.hookback.dev/v9 is not a version that CRD widgets.crdvalidate.hookback.dev serves"},
		{name: "no old object", opts: Options{CRDs: []string{crd}, Old: []string{filepath.Join(corpus, "update", "old.yaml")}, Objects: []string{"-"}},
			stdin:       `{"apiVersion":"crdvalidate.hookback.dev/v1","kind":"Widget","metadata":{"name":"new"},"spec":{"class":"a"}}`,
			wantProblem: "no stored object of this kind, namespace and name among the old objects: an update needs the object it replaces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Run(context.Background(), tc.opts, strings.NewReader(tc.stdin))
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			case err != nil:
				t.Fatal(err)
			case len(rep) != 1 || rep[0].Problem != tc.wantProblem:
				t.Fatalf("report = %+v, want one result with problem %q", rep, tc.wantProblem)
			}
		})
	}
}

// TestInvalidCRD: a CRD the apiserver would refuse is refused with the
// apiserver's own reason, named by path.
func TestInvalidCRD(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"crd-bad-rule.yaml", `spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: {"Rule":"self.size \u003e ",`},
		{"crd-too-costly.yaml", "estimated rule cost exceeds budget"},
		{"crd-not-structural.yaml", "spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			_, err := Run(context.Background(), Options{CRDs: []string{filepath.Join(corpus, "invalid", tc.file)}, Objects: []string{"-"}}, strings.NewReader(""))
			var invalid *InvalidCRDError
			if !errors.As(err, &invalid) {
				t.Fatalf("err = %v, want an InvalidCRDError", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

// TestReportFormats: every format writes each object, and JSON is the
// Report itself.
func TestReportFormats(t *testing.T) {
	rep := Report{
		{File: "w.yaml", Index: 1, Kind: "crdvalidate.hookback.dev/v1 Widget", Name: "default/a", Operation: "CREATE", Allowed: true, Warnings: []string{`unknown field "spec.x"`}},
		{File: "w.yaml", Index: 2, Kind: "crdvalidate.hookback.dev/v1 Widget", Name: "default/b", Operation: "CREATE",
			Message: `Widget.crdvalidate.hookback.dev "b" is invalid: spec.class: Required value`, Errors: []string{"spec.class: Required value"}},
		{File: "w.yaml", Index: 3, Kind: "other.dev/v1 Gadget", Name: "g", Problem: "no CRD given for this kind"},
	}
	var text, table bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{
		text.String():  {`w.yaml document 1: crdvalidate.hookback.dev/v1 Widget default/a: Warning: unknown field "spec.x"`, "default/a: valid", `default/b: Widget.crdvalidate.hookback.dev "b" is invalid: spec.class: Required value`, "g: not judged: no CRD"},
		table.String(): {"FILE", "w.yaml:2", "denied", "    error: spec.class: Required value", "    warning: unknown field", "    not judged: no CRD"},
	} {
		for _, w := range want {
			if !strings.Contains(name, w) {
				t.Errorf("output lacks %q:\n%s", w, name)
			}
		}
	}
	j := rep.JUnit()
	if j.Tests != 3 || j.Failures != 1 || j.Errors != 1 {
		t.Errorf("junit counts: tests %d failures %d errors %d, want 3, 1, 1", j.Tests, j.Failures, j.Errors)
	}
	b, err := json.Marshal(rep)
	if err != nil || !strings.Contains(string(b), `"allowed":false`) {
		t.Errorf("json: %s %v", b, err)
	}
}
