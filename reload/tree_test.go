package reload

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestTree: a kustomize tree as kubebuilder lays it out, watched from
// config/; each change is reported by fsnotify (the backstop scan is an
// hour away), a write into a directory created after the watch began too.
func TestTree(t *testing.T) {
	write := func(t *testing.T, path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root := filepath.Join(t.TempDir(), "config")
	write(t, filepath.Join(root, "default", "kustomization.yaml"), "resources: [../webhook]\n")
	write(t, filepath.Join(root, "webhook", "manifests.yaml"), "v1\n")
	changed, stop := start(t, Options{Trees: []string{root}, Interval: time.Hour, Debounce: 5 * time.Millisecond})
	defer stop()
	for _, step := range []struct {
		name string
		do   func(t *testing.T)
	}{
		{"a file rewritten in a sibling directory", func(t *testing.T) { write(t, filepath.Join(root, "webhook", "manifests.yaml"), "v2, longer\n") }},
		{"a directory created, then a file in it", func(t *testing.T) {
			if err := os.MkdirAll(filepath.Join(root, "crd", "bases"), 0o755); err != nil {
				t.Fatal(err)
			}
			waitFor(t, changed)
			write(t, filepath.Join(root, "crd", "bases", "widgets.yaml"), "kind: CustomResourceDefinition\n")
		}},
		{"a file removed", func(t *testing.T) {
			if err := os.Remove(filepath.Join(root, "webhook", "manifests.yaml")); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(step.name, func(t *testing.T) {
			step.do(t)
			waitFor(t, changed)
		})
	}
}

// TestTreeScan: without events (a directory fsnotify cannot watch,
// a lost event), the periodic scan still reports the change.
func TestTreeScan(t *testing.T) {
	file := filepath.Join(t.TempDir(), "manifests.yaml")
	if err := os.WriteFile(file, []byte("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	changed, stop := start(t, Options{Trees: []string{file}, Interval: 10 * time.Millisecond, Debounce: time.Hour})
	defer stop()
	if err := os.WriteFile(file, []byte("v2, longer"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, changed)
}
