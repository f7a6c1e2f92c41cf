package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestConversionFuzzFromCluster: `--from-cluster` makes the conversion
// fuzzer start from the cluster's widgets, listed in v1 (the storage
// version): a stored widget of a color e2e/crmanager refuses to convert to
// v2 (--refuse-v2-color) is one no schema-made object has, and the round
// trip of it fails with the manager's refusal. The same run without
// --from-cluster contacts no cluster and finds nothing.
func TestConversionFuzzFromCluster(t *testing.T) {
	requireLocal(t, "it installs a cluster-scoped CRD of its own when missing")
	dyn := dynamicClient(t)
	ensureWidgetCRD(t, dyn)
	ns := namespace(t)
	w := widget("v1", ns, "stored-infrared", map[string]any{"size": int64(3), "color": "infrared"})
	if _, err := dyn.Resource(widgetsV1).Namespace(ns).Create(context.Background(), w, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the widget: %v", err)
	}
	mgr := startCRManager(t, "--refuse-v2-color", "infrared")
	run := func(extra ...string) ([]fuzzRow, int, string) {
		t.Helper()
		args := append([]string{"test", "--webhook-config", crManifests(t), "--upstream", mgr.URL, "--upstream-ca", mgr.Cert, "-o", "json",
			"--conversion-fuzz", "40", "--seed", "11"}, extra...)
		out, errOut, code := hookback(t, env.kubeconfig, append(args, filepath.Join(t.TempDir(), "suite"))...)
		var rows []fuzzRow
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatalf("test -o json (exit %d): %v\n%s\nstderr:\n%s", code, err, out, errOut)
		}
		return rows, code, errOut
	}
	refused := func(rows []fuzzRow) bool {
		for _, r := range rows {
			if r.Status != "PASS" && strings.Contains(r.Detail+r.Diff, "infrared") {
				return true
			}
		}
		return false
	}

	rows, code, errOut := run()
	if code != 0 || refused(rows) || strings.Contains(errOut, "in the cluster") {
		t.Fatalf("without --from-cluster: exit %d, rows %+v\n%s\nwant every round trip kept and no cluster", code, rows, errOut)
	}
	rows, code, errOut = run("--from-cluster", "100")
	if code != 1 || !refused(rows) {
		t.Errorf("with --from-cluster: exit %d, rows %+v\n%s\nwant the stored infrared widget's round trip refused", code, rows, errOut)
	}
	if !strings.Contains(errOut, "objects of widgets.e2e.hookback.dev in the cluster to start from") {
		t.Errorf("stderr:\n%s\nwant the count of the cluster's objects", errOut)
	}
}
