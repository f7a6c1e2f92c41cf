package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fuzzRow is a row of `hookback test -o json`.
type fuzzRow struct {
	File, Case, Webhook, Status, Detail, Diff string
}

// TestConversionFuzz: `hookback test --conversion-fuzz` against
// e2e/crmanager (controller-runtime's conversion webhook, v1 the hub, v2 a
// spoke) with the manifests of its config/default. With --drop-v2-color it
// finds spec.color lost on both round trips (v1->v2->v1, v2->v1->v2),
// exits 1 and writes a case per loss into the suite directory; the same
// seed against the manager without the flag finds nothing, and the cases
// it wrote then pass: the fix is proved by the suite.
func TestConversionFuzz(t *testing.T) {
	suiteDir := filepath.Join(t.TempDir(), "suite")
	run := func(mgr *crManager, fuzz bool) ([]fuzzRow, int, string) {
		t.Helper()
		args := []string{"test", "--webhook-config", crManifests(t), "--upstream", mgr.URL, "--upstream-ca", mgr.Cert, "-o", "json"}
		if fuzz {
			args = append(args, "--conversion-fuzz", "25", "--seed", "7")
		}
		out, errOut, code := hookback(t, env.kubeconfig, append(args, suiteDir)...)
		var rows []fuzzRow
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatalf("test -o json (exit %d): %v\n%s\nstderr:\n%s", code, err, out, errOut)
		}
		return rows, code, errOut
	}

	lossy := startCRManager(t, "--drop-v2-color")
	rows, code, errOut := run(lossy, true)
	if code != 1 {
		t.Fatalf("fuzz against --drop-v2-color exited %d, want 1\n%+v\n%s", code, rows, errOut)
	}
	found := map[string]fuzzRow{}
	for _, r := range rows {
		if r.Status == "FAIL" {
			found[r.Case[strings.LastIndex(r.Case, " ")+1:]] = r
		}
	}
	for _, pair := range []string{"v1->v2->v1", "v2->v1->v2"} {
		r, ok := found[pair]
		if !ok || r.Webhook != widgetCRD || !strings.HasPrefix(r.Detail, "spec.color lost or changed") || !strings.HasPrefix(r.Diff, "spec.color: want \"") {
			t.Errorf("%s: %+v, want spec.color lost (rows %+v)", pair, r, rows)
		}
	}
	if len(found) != 2 || !strings.Contains(errOut, "--seed 7 reproduces this run") {
		t.Errorf("failing rows %v, want exactly the two losses of spec.color; stderr:\n%s", found, errOut)
	}
	cases, err := filepath.Glob(filepath.Join(suiteDir, "convert_*.yaml"))
	if err != nil || len(cases) != 2 {
		t.Fatalf("cases written %v (%v), want one per loss", cases, err)
	}
	b, _ := os.ReadFile(cases[0])
	if !strings.Contains(string(b), "via: e2e.hookback.dev/") || !strings.Contains(string(b), "loses spec.color") {
		t.Errorf("case %s:\n%s\nwant a round trip through the other version", cases[0], b)
	}

	// The same seed against the manager that keeps color: nothing lost,
	// and the cases written above pass.
	lossless := startCRManager(t)
	rows, code, errOut = run(lossless, true)
	if code != 0 {
		t.Fatalf("fuzz against the lossless manager exited %d, want 0\n%+v\n%s", code, rows, errOut)
	}
	passed := 0
	for _, r := range rows {
		if r.Status != "PASS" {
			t.Errorf("row %+v: want every row passing", r)
		}
		if strings.HasPrefix(filepath.Base(r.File), "convert_") {
			passed++
		}
	}
	if passed != 2 || !strings.Contains(rows[len(rows)-1].Detail, "every field kept") {
		t.Errorf("rows %+v: want the two written cases passing and the fuzz row keeping every field", rows)
	}
	// Against the lossy manager the written cases fail on their own.
	rows, code, _ = run(lossy, false)
	if code != 1 || len(rows) != 2 || rows[0].Status != "FAIL" || !strings.Contains(rows[0].Diff, "color") {
		t.Errorf("the written cases against --drop-v2-color: exit %d, %+v; want both failing on spec.color", code, rows)
	}
}
