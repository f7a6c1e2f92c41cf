package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// TestConversionThroughHookback: a controller-runtime manager (e2e/crmanager:
// a CRD in two versions with hub and spoke conversion, a defaulter and a
// validator), its manifests as its project keeps them, debugged through
// hookback. The CRD is missing at first: hookback installs it, with its
// conversion pointed at itself, and at Ctrl-C gives it back the manifests'
// stanza; an existing CRD gets its own stanza back byte for byte, after
// Ctrl-C and after kill -9 + `hookback cleanup`.
func TestConversionThroughHookback(t *testing.T) {
	requireLocal(t, "it deletes and installs a cluster-scoped CRD of its own")
	dyn := dynamicClient(t)
	deleteTestCRD(t, dyn)
	mgr := startCRManager(t)
	ns := namespace(t)
	manifests := crManifests(t)
	t.Logf("manifests: %s", manifests)
	args := []string{"--webhooks", "none", "--controllers", "none", "--webhook-config", manifests,
		"--upstream", mgr.URL, "--upstream-ca", mgr.Cert}

	t.Run("installed, called, recorded, restored at Ctrl-C", func(t *testing.T) {
		records := t.TempDir()
		p := start(t, append(args, "--record-dir", records)...)
		p.ready(t)
		stanza, crd := conversionJSON(t, dyn)
		if got := crd.GetAnnotations()["hookback.dev/installed"]; got != p.session {
			t.Errorf("annotation hookback.dev/installed = %q, want the session %q", got, p.session)
		}
		if !strings.Contains(stanza, `"url":"https://`) || !strings.Contains(stanza, "/convert/"+widgetCRD+`/convert"`) {
			t.Fatalf("conversion %s: want it pointed at hookback", stanza)
		}
		want := manifestStanza()
		var saved any
		if err := json.Unmarshal([]byte(crd.GetAnnotations()["hookback.dev/conversion"]), &saved); err != nil || !reflect.DeepEqual(saved, want) {
			t.Fatalf("saved stanza %s, want the manifests' %v", crd.GetAnnotations()["hookback.dev/conversion"], want)
		}
		checkWidgets(t, dyn, ns, p)
		p.signal(syscall.SIGINT)
		if code := p.wait(t); code != 0 {
			t.Fatalf("exit code %d", code)
		}
		// The manifests' stanza, as the apiserver defaults it (port 443).
		want["webhook"].(map[string]any)["clientConfig"].(map[string]any)["service"].(map[string]any)["port"] = float64(443)
		got, crd := conversionJSON(t, dyn)
		var restored any
		if err := json.Unmarshal([]byte(got), &restored); err != nil || !reflect.DeepEqual(restored, want) {
			t.Errorf("conversion after Ctrl-C %s, want the manifests' %v", got, want)
		}
		if _, ok := crd.GetAnnotations()["hookback.dev/conversion"]; ok {
			t.Errorf("annotation hookback.dev/conversion left on the CRD")
		}
		p.whWaitLogLine(t, "CustomResourceDefinitions hookback installed are left in place", widgetCRD)
		replayConversions(t, records, mgr)
	})

	t.Run("existing CRD restored byte for byte after kill -9 and cleanup", func(t *testing.T) {
		before, _ := conversionJSON(t, dyn)
		p := start(t, args...)
		p.ready(t)
		during, crd := conversionJSON(t, dyn)
		if during == before || crd.GetAnnotations()["hookback.dev/conversion"] != before {
			t.Fatalf("conversion %s, saved %q: want it redirected and %s saved exactly", during, crd.GetAnnotations()["hookback.dev/conversion"], before)
		}
		readInOtherVersion(t, dyn, ns, "after-restart", p)
		p.signal(syscall.SIGKILL)
		p.wait(t)
		if still, _ := conversionJSON(t, dyn); still != during {
			t.Fatalf("conversion changed with hookback killed: %s", still)
		}
		out, errOut, code := hookback(t, env.kubeconfig, "cleanup", "--session", p.session)
		if code != 0 || !strings.Contains(out, p.session) {
			t.Fatalf("cleanup: exit %d\n%s\n%s", code, out, errOut)
		}
		if after, _ := conversionJSON(t, dyn); after != before {
			t.Errorf("conversion after cleanup:\n%s\nwant, byte for byte:\n%s", after, before)
		}
	})

	t.Run("existing CRD restored byte for byte by the next run after kill -9", func(t *testing.T) {
		before, _ := conversionJSON(t, dyn)
		p := start(t, args...)
		p.ready(t)
		p.signal(syscall.SIGKILL)
		p.wait(t)
		// The next run of the same session (a user's default session is
		// the same every time) keeps the stanza saved by the killed one.
		next := start(t, append(args, "--session", p.session)...)
		next.ready(t)
		if _, crd := conversionJSON(t, dyn); crd.GetAnnotations()["hookback.dev/conversion"] != before {
			t.Fatalf("saved stanza %q after the restart, want %s", crd.GetAnnotations()["hookback.dev/conversion"], before)
		}
		readInOtherVersion(t, dyn, ns, "after-kill", next)
		next.signal(syscall.SIGINT)
		if code := next.wait(t); code != 0 {
			t.Fatalf("exit code %d", code)
		}
		if after, _ := conversionJSON(t, dyn); after != before {
			t.Errorf("conversion after the next run:\n%s\nwant, byte for byte:\n%s", after, before)
		}
	})

	t.Run("upstream down, then restored byte for byte at Ctrl-C", func(t *testing.T) {
		before, _ := conversionJSON(t, dyn)
		p := start(t, args...)
		p.ready(t)
		mgr.stop(t)
		_, err := dyn.Resource(widgetsV2).Namespace(ns).Get(context.Background(), "w1", metav1.GetOptions{})
		want := "nothing listens on 127.0.0.1:" + itoa(mgr.Port) + ": is your webhook running?"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("read in v2 with the manager stopped: %v, want %q", err, want)
		}
		p.signal(syscall.SIGINT)
		if code := p.wait(t); code != 0 {
			t.Fatalf("exit code %d", code)
		}
		if after, _ := conversionJSON(t, dyn); after != before {
			t.Errorf("conversion after Ctrl-C:\n%s\nwant, byte for byte:\n%s", after, before)
		}
	})
}

// checkWidgets: the validator's denial (422 with its cause), the defaulter's
// color, and objects read in the version they were not written in, each
// conversion through hookback.
func checkWidgets(t *testing.T, dyn dynamic.Interface, ns string, p *proc) {
	t.Helper()
	ctx := context.Background()
	_, err := dyn.Resource(widgetsV1).Namespace(ns).Create(ctx, widget("v1", ns, "big", map[string]any{"size": int64(20)}), metav1.CreateOptions{})
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "must be at most 10 (crmanager's validator)") {
		t.Fatalf("size 20: err = %v, want the validator's 422", err)
	}
	if !asStatus(err, &status) || status.Status().Code != 422 || status.Status().Details == nil ||
		len(status.Status().Details.Causes) != 1 || status.Status().Details.Causes[0].Field != "spec.size" {
		t.Fatalf("size 20: status %+v, want 422 with the cause spec.size", status)
	}
	// Written in v2: converted to v1 for the webhooks and for storage.
	w2, err := dyn.Resource(widgetsV2).Namespace(ns).Create(ctx, widget("v2", ns, "w2", map[string]any{"count": int64(3)}), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create in v2: %v", err)
	}
	if c, _, _ := unstructured.NestedString(w2.Object, "spec", "color"); c != "blue" {
		t.Errorf("w2 color %q: the defaulter's blue was not applied", c)
	}
	v1, err := dyn.Resource(widgetsV1).Namespace(ns).Get(ctx, "w2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s, _, _ := unstructured.NestedInt64(v1.Object, "spec", "size"); s != 3 {
		t.Errorf("w2 read in v1: spec %v, want size 3", v1.Object["spec"])
	}
	readInOtherVersion(t, dyn, ns, "w1", p)
	p.whWaitLogLine(t, "msg=conversion", "crd="+widgetCRD, "desired_api_version=e2e.hookback.dev/v1", "result=success")
	metrics := get(t, "http://"+p.health+"/metrics")
	if !strings.Contains(metrics, `hookback_conversion_reviews_total{crd="`+widgetCRD+`",result="success"}`) {
		t.Errorf("metrics have no successful conversion of %s", widgetCRD)
	}
}

// readInOtherVersion creates a widget in v1 and reads it back in v2,
// converted by the manager through hookback (its log line proves it).
func readInOtherVersion(t *testing.T, dyn dynamic.Interface, ns, name string, p *proc) {
	t.Helper()
	ctx := context.Background()
	if _, err := dyn.Resource(widgetsV1).Namespace(ns).Create(ctx, widget("v1", ns, name, map[string]any{"size": int64(4)}), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create %s in v1: %v", name, err)
	}
	v2, err := dyn.Resource(widgetsV2).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read %s in v2: %v", name, err)
	}
	if c, _, _ := unstructured.NestedInt64(v2.Object, "spec", "count"); c != 4 || v2.GetAPIVersion() != "e2e.hookback.dev/v2" {
		t.Errorf("%s read in v2: %s %v, want count 4", name, v2.GetAPIVersion(), v2.Object["spec"])
	}
	p.whWaitLogLine(t, "msg=conversion", "crd="+widgetCRD, "desired_api_version=e2e.hookback.dev/v2", "result=success")
}

func asStatus(err error, s *apierrors.APIStatus) bool {
	st, ok := err.(apierrors.APIStatus)
	*s = st
	return ok
}

// manifestStanza is the conversion of config/crd's patch, as rendered by
// config/default (prefix, namespace).
func manifestStanza() map[string]any {
	return map[string]any{"strategy": "Webhook", "webhook": map[string]any{
		"clientConfig": map[string]any{"service": map[string]any{
			"namespace": "crmanager-system", "name": "crmanager-webhook-service", "path": "/convert"}},
		"conversionReviewVersions": []any{"v1"}}}
}

// deleteTestCRD removes the test's own CRD left by an earlier run, so that
// hookback finds it missing; it waits until it is gone.
func deleteTestCRD(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	err := dyn.Resource(crdGVR).Delete(context.Background(), widgetCRD, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	eventually(t, "the test CRD gone", func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(crdGVR).Get(ctx, widgetCRD, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// replayConversions replays the recorded conversions to the manager: the
// same answers.
func replayConversions(t *testing.T, records string, mgr *crManager) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(records, "*_convert-*.json"))
	if err != nil || len(files) == 0 {
		entries, _ := os.ReadDir(records)
		t.Fatalf("no recorded conversion in %s (%d files): %v", records, len(entries), err)
	}
	out, errOut, code := hookback(t, env.kubeconfig, append([]string{"replay", "--upstream", mgr.URL, "--upstream-ca", mgr.Cert}, files...)...)
	if code != 0 || !strings.Contains(out, "all "+itoa(len(files))+" answers as recorded") {
		t.Fatalf("replay: exit %d\n%s\n%s", code, out, errOut)
	}
}
