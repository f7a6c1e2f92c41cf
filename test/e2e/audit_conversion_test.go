package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// roundTripRow is a conversion row of `hookback audit -o json`.
type roundTripRow struct {
	Webhook, Resource, Namespace, Name, Operation, Result, Message string
	Fields                                                         []struct{ Path, Before, After string }
}

// TestAuditConversionRoundTrip: widgets stored before the audit, some with
// spec.color and some without, round-tripped v1->v2->v1 by hookback audit
// through e2e/crmanager (controller-runtime's conversion webhook, v2 a
// spoke that drops spec.color with --drop-v2-color). Exactly spec.color is
// reported, for exactly the widgets that set it, exit 1; the same manager
// without the flag keeps every field; nothing is written to the cluster.
func TestAuditConversionRoundTrip(t *testing.T) {
	requireLocal(t, "it installs a cluster-scoped CRD of its own when missing")
	dyn := dynamicClient(t)
	ensureWidgetCRD(t, dyn)
	ns := namespace(t)
	ctx := context.Background()
	specs := map[string]map[string]any{
		"red":   {"size": int64(2), "color": "red"},
		"green": {"color": "green"},
		"plain": {"size": int64(1)},
		"empty": {},
	}
	versions := map[string]string{}
	for name, spec := range specs {
		w, err := dyn.Resource(widgetsV1).Namespace(ns).Create(ctx, widget("v1", ns, name, spec), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create widget %s: %v", name, err)
		}
		versions[name] = w.GetResourceVersion()
	}
	args := func(mgr *crManager) []string {
		return []string{"audit", "--session", sessionFor(t), "--webhooks", "none", "--webhook-config", crManifests(t),
			"--upstream", mgr.URL, "--upstream-ca", mgr.Cert, "--namespace", ns, "-o", "json"}
	}

	lossy := startCRManager(t, "--drop-v2-color")
	rows, code, out := roundTrips(t, args(lossy))
	if code != 1 {
		t.Fatalf("audit exited %d, want 1 (lost fields)\n%s", code, out)
	}
	for name, spec := range specs {
		r, ok := rows[name]
		if !ok {
			t.Errorf("no round trip of %s: %v", name, rows)
			continue
		}
		color, set := spec["color"]
		switch {
		case !set && r.Result != "kept":
			t.Errorf("%s (no color): %+v, want kept", name, r)
		case set && (r.Result != "lost" || len(r.Fields) != 1 || r.Fields[0].Path != "spec.color" ||
			r.Fields[0].Before != `"`+color.(string)+`"` || r.Fields[0].After != "<missing>"):
			t.Errorf("%s (color %s): %+v, want exactly spec.color lost", name, color, r)
		}
	}

	table, _, code := hookback(t, env.kubeconfig, append(args(lossy), "-o", "table")...)
	if code != 1 || !regexp.MustCompile(`(?m)^conversion `+regexp.QuoteMeta(widgetCRD)+` +widgets\.e2e\.hookback\.dev +`+
		regexp.QuoteMeta(ns)+`/red +CONVERT v1->v2->v1 +lost +spec\.color: "red" -> <missing>$`).MatchString(table) {
		t.Errorf("audit -o table exited %d:\n%s\nwant the row of red losing spec.color", code, table)
	}
	junit, _, _ := hookback(t, env.kubeconfig, append(args(lossy), "-o", "junit")...)
	if !strings.Contains(junit, `<testsuite name="conversion `+widgetCRD+`" tests="4" failures="2" errors="0">`) {
		t.Errorf("audit -o junit:\n%s\nwant 4 round trips, 2 failures (red, green)", junit)
	}

	lossless := startCRManager(t)
	rows, code, out = roundTrips(t, args(lossless))
	if code != 0 || len(rows) != len(specs) {
		t.Fatalf("audit through the lossless manager exited %d with %d round trips, want 0 and %d\n%s", code, len(rows), len(specs), out)
	}
	for name, r := range rows {
		if r.Result != "kept" {
			t.Errorf("%s through the lossless manager: %+v, want kept", name, r)
		}
	}
	for name, rv := range versions {
		w, err := dyn.Resource(widgetsV1).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || w.GetResourceVersion() != rv {
			t.Errorf("widget %s: %v, resourceVersion %s then %s: the audit must write nothing", name, err, rv, w.GetResourceVersion())
		}
	}
}

// roundTrips runs the audit and returns its conversion rows by name (each
// checked to be the widgets' v1->v2->v1 trip), the exit code and stderr.
func roundTrips(t *testing.T, args []string) (map[string]roundTripRow, int, string) {
	t.Helper()
	out, errOut, code := hookback(t, env.kubeconfig, args...)
	var all []roundTripRow
	if err := json.Unmarshal([]byte(out), &all); err != nil {
		t.Fatalf("audit -o json (exit %d): %v\nstdout:\n%s\nstderr:\n%s", code, err, out, errOut)
	}
	rows := map[string]roundTripRow{}
	for _, r := range all {
		if !strings.HasPrefix(r.Operation, "CONVERT") {
			continue
		}
		if r.Webhook != "conversion "+widgetCRD || r.Operation != "CONVERT v1->v2->v1" || r.Resource != "widgets.e2e.hookback.dev" {
			t.Errorf("round trip %+v: want the widgets' CONVERT v1->v2->v1", r)
		}
		rows[r.Name] = r
	}
	return rows, code, out + "\nstderr:\n" + errOut
}

// ensureWidgetCRD installs the Widget CRD from crmanager's bases when the
// cluster lacks it (its conversion None: objects are written and listed in
// v1, the storage version, so nothing calls a conversion webhook), and
// waits until it is established. A CRD another test left is used as is.
func ensureWidgetCRD(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	ctx := context.Background()
	if _, err := dyn.Resource(crdGVR).Get(ctx, widgetCRD, metav1.GetOptions{}); err == nil {
		return
	} else if !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("crmanager", "config", "crd", "bases", "e2e.hookback.dev_widgets.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd unstructured.Unstructured
	if err := yaml.Unmarshal(b, &crd.Object); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(crdGVR).Create(ctx, &crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	eventually(t, "the Widget CRD established", func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(widgetsV1).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
}
