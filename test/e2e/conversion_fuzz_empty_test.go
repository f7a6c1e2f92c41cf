package e2e

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestConversionFuzzEmptyStructures: `hookback test --conversion-fuzz`
// against e2e/crmanager --drop-v2-color --materialize-empty, a
// controller-runtime conversion whose Go types write an absent
// spec.template back as empty structures (as the kubebuilder tutorial's
// spec.jobTemplate does) beside one that drops the set spec.color, on the
// CRD variant that declares spec.template. Compared as the apiserver
// stores objects, the dropped color fails first, on both round trips; the
// materialised template follows as passing rows, one per version pair at
// spec.template (the topmost field that was absent), none for the levels
// below it; cases are written for the color only. With
// --conversion-fuzz-strict every byte counts: the template's levels fail
// as losses too, each at its own path.
func TestConversionFuzzEmptyStructures(t *testing.T) {
	t.Parallel()
	crd, err := filepath.Abs(filepath.Join("crmanager", "config", "crd", "variants", "widgets_with_template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	mgr := startCRManager(t, "--drop-v2-color", "--materialize-empty")
	run := func(suiteDir string, extra ...string) ([]fuzzRow, int, string) {
		t.Helper()
		args := append([]string{"test", "--webhook-config", crManifests(t), "--upstream", mgr.URL, "--upstream-ca", mgr.Cert, "-o", "json",
			"--conversion-fuzz", "30", "--seed", "5", "--crd", crd}, extra...)
		out, errOut, code := hookback(t, env.kubeconfig, append(args, suiteDir)...)
		var rows []fuzzRow
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatalf("test -o json (exit %d): %v\n%s\nstderr:\n%s", code, err, out, errOut)
		}
		return rows, code, errOut
	}

	suiteDir := filepath.Join(t.TempDir(), "suite")
	rows, code, errOut := run(suiteDir)
	if code != 1 {
		t.Fatalf("fuzz exited %d, want 1 for the lost color\n%+v\n%s", code, rows, errOut)
	}
	var failed, emptied []string // "pair path"
	lastFail, firstEmptied := -1, len(rows)
	for i, r := range rows {
		pair := r.Case[strings.LastIndex(r.Case, " ")+1:]
		path, _, _ := strings.Cut(r.Diff, ":")
		switch {
		case r.Status == "FAIL":
			failed = append(failed, pair+" "+path)
			lastFail = i
		case strings.HasPrefix(path, "spec.template"):
			emptied = append(emptied, pair+" "+path)
			firstEmptied = min(firstEmptied, i)
			if !strings.Contains(r.Detail, "came back as an empty structure") || !strings.Contains(r.Diff, "want <missing>, got {") {
				t.Errorf("row %+v: want spec.template absent and come back empty", r)
			}
		}
	}
	slices.Sort(failed)
	slices.Sort(emptied)
	if want := []string{"v1->v2->v1 spec.color", "v2->v1->v2 spec.color"}; !slices.Equal(failed, want) {
		t.Errorf("failing rows %v, want exactly the color lost both ways (rows %+v)", failed, rows)
	}
	if want := []string{"v1->v2->v1 spec.template", "v2->v1->v2 spec.template"}; !slices.Equal(emptied, want) {
		t.Errorf("empty-structure rows %v, want %v: one per field, not one per level (rows %+v)", emptied, want, rows)
	}
	if lastFail > firstEmptied {
		t.Errorf("rows %+v: want the lost color before the empty structures", rows)
	}
	cases, err := filepath.Glob(filepath.Join(suiteDir, "convert_*.yaml"))
	if err != nil || len(cases) != 2 || !strings.Contains(strings.Join(cases, " "), "spec.color") {
		t.Errorf("cases written %v (%v), want the two losses of spec.color only", cases, err)
	}

	rows, code, errOut = run(filepath.Join(t.TempDir(), "suite"), "--conversion-fuzz-strict")
	if code != 1 {
		t.Fatalf("strict fuzz exited %d, want 1\n%+v\n%s", code, rows, errOut)
	}
	levels := map[string]bool{}
	color := 0
	for _, r := range rows {
		path, _, _ := strings.Cut(r.Diff, ":")
		switch {
		case r.Status != "FAIL":
			t.Errorf("strict row %+v: want every finding failing", r)
		case path == "spec.color":
			color++
		case strings.HasPrefix(path, "spec.template"):
			levels[path] = true
		}
	}
	if color != 2 || len(levels) < 2 || !levels["spec.template"] {
		t.Errorf("strict: %d rows lose spec.color, the template's paths %v: want the color both ways and the template failing at spec.template and below (rows %+v)", color, levels, rows)
	}
}
