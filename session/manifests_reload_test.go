package session

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/plan"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// TestStartReloadsYourManifests: your manifests are watched as the template
// is. A change to a webhook hookback serves (its rules) is applied; a
// webhook at a path this run does not serve is not registered (it would
// fail open unseen), and one line says to restart.
func TestStartReloadsYourManifests(t *testing.T) {
	orig, err := os.ReadFile(filepath.Join("testdata", "user", "webhooks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "manifests.yaml")
	save := func(text string) {
		t.Helper()
		// As an editor or a generator saves: a new file renamed into place.
		if err := os.WriteFile(file+".tmp", []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(file+".tmp", file); err != nil {
			t.Fatal(err)
		}
	}
	save(string(orig))
	j := &journal{}
	cs, dyn := newFakeClients(t, j)
	callsBack(t, j, cs, dyn)
	out, logs := &syncBuffer{}, &syncBuffer{}
	cfg := startConfig(t, out)
	cfg.Log = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.User = plan.UserWebhooks{Manifests: []string{file}, Upstreams: []plan.Upstream{{URL: upstreamServer(t).URL}}, UpstreamInsecure: true}
	stop := startUntilReady(t, cfg, &kubeconfig.Cluster{Config: localConfig(), Client: cs, Watch: cs, Dynamic: dyn}, out)
	if got := yourOperations(t, dyn); got != "CREATE" {
		t.Fatalf("registered operations %q, want CREATE", got)
	}

	// Rewritten as it was, as a generator does: nothing to apply.
	save(string(orig))
	waitFor(t, "the same objects seen", func() bool { return strings.Contains(logs.String(), "rewritten with the same objects") })
	if strings.Contains(logs.String(), "re-applying") {
		t.Errorf("the same objects were re-applied:\n%s", logs.String())
	}
	save(strings.Replace(string(orig), `operations: ["CREATE"]`, `operations: ["CREATE", "UPDATE"]`, 1))
	waitFor(t, "the edited rules applied", func() bool { return yourOperations(t, dyn) == "CREATE,UPDATE" })
	// The configuration as re-applied still reaches your server.
	o, err := dyn.Tracker().Get(validatingGVR, "", "yours-unit")
	if err != nil {
		t.Fatal(err)
	}
	if err := callWebhook(o.(*unstructured.Unstructured), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-reload", Namespace: "default"}}); err != nil {
		t.Fatalf("the apiserver's call after the reload: %v", err)
	}

	added := string(orig) + `  - name: vsecret.example.com
    clientConfig:
      service:
        name: webhook-service
        namespace: system
        path: /validate-v1-secret
    rules:
      - apiGroups: [""]
        apiVersions: ["v1"]
        operations: ["CREATE"]
        resources: ["secrets"]
    sideEffects: None
    admissionReviewVersions: ["v1"]
`
	save(added)
	waitFor(t, "the restart asked for", func() bool {
		return strings.Contains(logs.String(), "restart hookback start to serve them") && strings.Contains(logs.String(), "vsecret.example.com")
	})
	if got := yourOperations(t, dyn); got != "CREATE,UPDATE" {
		t.Errorf("registered operations %q after an unserved webhook was added: want the previous configuration, CREATE,UPDATE", got)
	}
	if err := stop(); err != nil {
		t.Errorf("run = %v, want a clean stop", err)
	}
}

// yourOperations are the operations of the registered configuration's
// webhooks, comma-joined; "" when it is missing or has another count of
// webhooks than one.
func yourOperations(t *testing.T, dyn *dynamicfake.FakeDynamicClient) string {
	t.Helper()
	o, err := dyn.Tracker().Get(validatingGVR, "", "yours-unit")
	if err != nil {
		return ""
	}
	hooks, _, _ := unstructured.NestedSlice(o.(*unstructured.Unstructured).Object, "webhooks")
	if len(hooks) != 1 {
		return ""
	}
	rules, _, _ := unstructured.NestedSlice(hooks[0].(map[string]any), "rules")
	ops, _, _ := unstructured.NestedStringSlice(rules[0].(map[string]any), "operations")
	return strings.Join(ops, ",")
}

func TestManifestRoots(t *testing.T) {
	dir := t.TempDir()
	kust := filepath.Join(dir, "config", "default")
	plain := filepath.Join(dir, "manifests")
	for _, d := range []string{kust, plain} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(kust, "kustomization.yaml"), []byte("resources: [../webhook]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "install.yaml")
	tests := []struct {
		name  string
		paths []string
		want  []string
	}{
		{name: "a kustomize directory: its parent, for the siblings it reads", paths: []string{kust}, want: []string{filepath.Join(dir, "config")}},
		{name: "a directory of YAML: itself", paths: []string{plain}, want: []string{plain}},
		{name: "a file: itself", paths: []string{file}, want: []string{file}},
		{name: "one root once", paths: []string{plain, plain + "/"}, want: []string{plain}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := manifestRoots(tc.paths); strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("manifestRoots(%v) = %v, want %v", tc.paths, got, tc.want)
			}
		})
	}
}
