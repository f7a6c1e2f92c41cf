package suite

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUpdateRewritesTheExpectObjectFile: a failing case whose expected
// object lives in expect.objectFile gets that file rewritten (in its own
// format), not the object inlined into the case; the suite file and a
// passing case's object file stay byte for byte.
func TestUpdateRewritesTheExpectObjectFile(t *testing.T) {
	dir := t.TempDir()
	suiteBody := header + `# objects in files
- name: passes
  webhooks: [alice.example.com]
  operation: CREATE
  object: ` + pod("p", "") + `
  expect: {result: patched, objectFile: passing.yaml}   # kept as written
- name: stale
  webhooks: [alice.example.com]
  operation: CREATE
  object: ` + pod("q", "") + `
  expect:
    result: patched
    objectFile: objects/stale.json
`
	files := map[string]string{
		"suite.yaml":   suiteBody,
		"passing.yaml": "# the pod as the webhook leaves it\napiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {seen: \"yes\"}}\nspec: {containers: [{name: a, image: b}]}\n",
		"objects/stale.json": `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q", "labels": {"old": "label"}},
  "spec": {"containers": [{"name": "a", "image": "b"}]}}`,
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h := &counting{}
	loaded, err := Load([]string{filepath.Join(dir, "suite.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	rows := Run(context.Background(), loaded, Options{Webhooks: testWebhooks(h)})
	if c := Count(rows); c.Passed != 1 || c.Failed != 1 {
		t.Fatalf("counts %+v, want one pass and one failure", c)
	}
	var out bytes.Buffer
	if n, err := Update(rows, &out); err != nil || n != 1 {
		t.Fatalf("Update = %d, %v\n%s", n, err, out.String())
	}
	stale := filepath.Join(dir, "objects", "stale.json")
	if !strings.Contains(out.String(), "updated "+stale+" (expect.objectFile of ") {
		t.Errorf("Update printed:\n%s", out.String())
	}
	for _, name := range []string{"suite.yaml", "passing.yaml"} {
		if b, _ := os.ReadFile(filepath.Join(dir, name)); !bytes.Equal(b, []byte(files[name])) {
			t.Errorf("%s changed:\n%s", name, b)
		}
	}
	b, _ := os.ReadFile(stale)
	if !strings.Contains(string(b), `"seen": "yes"`) || strings.Contains(string(b), "old") || !strings.HasPrefix(string(b), "{\n") {
		t.Errorf("%s is not the new object as indented JSON:\n%s", stale, b)
	}
	loaded, err = Load([]string{filepath.Join(dir, "suite.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	if c := Count(Run(context.Background(), loaded, Options{Webhooks: testWebhooks(h)})); c.Passed != 2 {
		t.Errorf("after --update: %+v", c)
	}
}
