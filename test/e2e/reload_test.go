package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTemplateHotReload edits the template while hookback runs: a valid edit
// goes live, a broken one is refused and the previous configuration stays.
func TestTemplateHotReload(t *testing.T) {
	orig, err := os.ReadFile(repoPath("testdata", "e2e", "mark.yaml.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := filepath.Join(t.TempDir(), "webhooks.yaml.tmpl")
	if err := os.WriteFile(tmpl, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, env.markBinary, append(os.Environ(), "KUBECONFIG="+env.kubeconfig), "--webhooks", "none", "--controllers", "none", "--template", tmpl)
	p.ready(t)
	name := "hookback-e2e-" + p.session
	timeout := func(ctx context.Context) (int32, error) {
		m, err := env.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return 0, err
		}
		return *m.Webhooks[0].TimeoutSeconds, nil
	}

	edited := strings.Replace(string(orig), "timeoutSeconds: 5", "timeoutSeconds: 7", 1)
	saved := time.Now()
	writeAtomic(t, tmpl, edited)
	eventually(t, "the edited timeoutSeconds to be live", func(ctx context.Context) (bool, error) {
		s, err := timeout(ctx)
		return s == 7, err
	})
	t.Logf("template edit live after %s", time.Since(saved).Round(time.Millisecond))

	writeAtomic(t, tmpl, edited+"\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: nope}\n")
	eventually(t, "the refusal to be logged", func(context.Context) (bool, error) {
		return strings.Contains(p.stderr.String(), "template not applied; the previous configuration stays live"), nil
	})
	if s, err := timeout(context.Background()); err != nil || s != 7 {
		t.Fatalf("after a broken edit timeoutSeconds = %d (err %v), want the previous 7", s, err)
	}
}

// writeAtomic replaces path the way editors do: write a temp file, rename.
func writeAtomic(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".swp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
