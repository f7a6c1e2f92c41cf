package suite

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
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
	if !strings.Contains(out.String(), "updated "+stale+" (objectFile of ") {
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

// TestUpdateExpectWebhooks: in a chain, a failing webhook with its own
// expectation gets that entry of expectWebhooks rewritten (its object
// kept in its file), while expect, which the other webhooks still meet,
// stays as written.
func TestUpdateExpectWebhooks(t *testing.T) {
	dir := t.TempDir()
	s := newReviewServer(t, map[string]answer{"/a": addLabel("a", "now"), "/check": func(map[string]any) (string, []map[string]any) { return "", nil }})
	hooks := []*Webhook{
		{Configuration: "m", Path: "/a", Handler: s.forwarder(t, "/a"), Mutating: &admissionregistrationv1.MutatingWebhook{Name: "a", Rules: podRules(), AdmissionReviewVersions: []string{"v1"}}},
		{Configuration: "v", Path: "/check", Handler: s.forwarder(t, "/check"), Validating: &admissionregistrationv1.ValidatingWebhook{Name: "check", Rules: podRules(), AdmissionReviewVersions: []string{"v1"}}},
	}
	head := header + `- name: chained
  operation: CREATE
  namespace: y
  object: ` + pod("p", "") + `
  expect: {result: allowed}   # the validating webhook
`
	body := head + `  expectWebhooks:
    a: {result: patched, objectFile: a.yaml}
`
	if err := os.WriteFile(filepath.Join(dir, "suite.yaml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(pod("p", "a: before")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func() []Row {
		files, err := Load([]string{filepath.Join(dir, "suite.yaml")})
		if err != nil {
			t.Fatal(err)
		}
		return Run(context.Background(), files, Options{Webhooks: hooks})
	}
	rows := run()
	if c := Count(rows); c.Failed != 1 || c.Passed != 1 {
		t.Fatalf("counts %+v, want a's row failing and check's passing", c)
	}
	var out bytes.Buffer
	if n, err := Update(rows, &out); err != nil || n != 1 {
		t.Fatalf("Update = %d, %v\n%s", n, err, out.String())
	}
	if !strings.Contains(out.String(), "chained (expectWebhooks a): expect patched, was patched") {
		t.Errorf("Update printed:\n%s", out.String())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "suite.yaml")); string(b) != body {
		t.Errorf("the suite changed though only a.yaml's object did:\n%s", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.yaml")); !strings.Contains(string(b), "a: now") {
		t.Errorf("a.yaml:\n%s", b)
	}
	if c := Count(run()); c.Passed != 2 {
		t.Errorf("after --update: %+v", c)
	}

	// An inline expectation of one webhook: only expectWebhooks is
	// rewritten; expect and its comment stay.
	body = head + `  expectWebhooks:
    a: {result: allowed}
`
	if err := os.WriteFile(filepath.Join(dir, "suite.yaml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := Update(run(), &out); err != nil || n != 1 {
		t.Fatalf("Update = %d, %v\n%s", n, err, out.String())
	}
	b, _ := os.ReadFile(filepath.Join(dir, "suite.yaml"))
	if !strings.HasPrefix(string(b), head+"  expectWebhooks:\n    a:\n") || !strings.Contains(string(b), "result: patched") {
		t.Errorf("suite after --update:\n%s", b)
	}
	if c := Count(run()); c.Passed != 2 {
		t.Errorf("after the second --update: %+v\n%s", c, b)
	}
}
