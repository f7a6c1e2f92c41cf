package project

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// tree copies testdata/project into a temporary directory and applies edit.
func tree(t *testing.T, edit func(dir string)) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "p")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "testdata", "project"))); err != nil {
		t.Fatal(err)
	}
	edit(dir)
	return dir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestLoad(t *testing.T) {
	fallback := []string{"config/webhook", "config/crd"}
	tests := []struct {
		name      string
		edit      func(t *testing.T, dir string)
		manifests []string
		fallback  string // a substring of Fallback; "" when config/default is used
		run       string
		title     string
	}{
		{name: "kubebuilder v4", edit: func(*testing.T, string) {}, manifests: []string{"config/default"}, run: "make run", title: "project (tutorial.kubebuilder.io)"},
		{name: "config/default does not render", edit: func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "config", "default", "kustomization.yaml"), []byte("resources: [../nowhere]\n"), 0o644))
		}, manifests: fallback, fallback: "does not render", run: "make run", title: "project (tutorial.kubebuilder.io)"},
		{name: "config/default missing", edit: func(t *testing.T, dir string) {
			must(t, os.RemoveAll(filepath.Join(dir, "config", "default")))
		}, manifests: fallback, fallback: "is missing", run: "make run", title: "project (tutorial.kubebuilder.io)"},
		{name: "config/default without webhook nor crd", edit: func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "config", "default", "kustomization.yaml"), []byte("resources: [../manager]\n"), 0o644))
		}, manifests: fallback, fallback: "commented out", run: "make run", title: "project (tutorial.kubebuilder.io)"},
		{name: "no Makefile: go run cmd/main.go", edit: func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, "Makefile")))
		}, manifests: []string{"config/default"}, run: "go run ./cmd/main.go", title: "project (tutorial.kubebuilder.io)"},
		{name: "layout v3: main.go, PROJECT without projectName", edit: func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, "Makefile")))
			must(t, os.Rename(filepath.Join(dir, "cmd", "main.go"), filepath.Join(dir, "main.go")))
			must(t, os.WriteFile(filepath.Join(dir, File), []byte("domain: my.domain\nlayout: go.kubebuilder.io/v3\nrepo: example.com/memcached-operator\nversion: \"3\"\n"), 0o644))
		}, manifests: []string{"config/default"}, run: "go run ./main.go", title: "memcached-operator (my.domain)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tree(t, func(dir string) { tt.edit(t, dir) })
			if !Has(dir) {
				t.Fatal("Has: false")
			}
			p, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if rel := p.ManifestsRel(); !reflect.DeepEqual(rel, tt.manifests) {
				t.Errorf("manifests %v, want %v", rel, tt.manifests)
			}
			if (tt.fallback == "") != (p.Fallback == "") || !strings.Contains(p.Fallback, tt.fallback) {
				t.Errorf("fallback %q, want %q", p.Fallback, tt.fallback)
			}
			if p.Run != tt.run || p.Title() != tt.title {
				t.Errorf("run %q title %q, want %q %q", p.Run, p.Title(), tt.run, tt.title)
			}
		})
	}
}

func TestLoadNoManifests(t *testing.T) {
	dir := tree(t, func(dir string) { os.RemoveAll(filepath.Join(dir, "config")) })
	_, err := Load(dir)
	if err == nil || !strings.Contains(err.Error(), "pass plan.UserWebhooks.Manifests") {
		t.Fatalf("err = %v, want one that says to pass plan.UserWebhooks.Manifests", err)
	}
	if Has(t.TempDir()) {
		t.Error("Has: true in an empty directory")
	}
}
