package project

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestLoadOperatorSDK: an Operator SDK project is a kubebuilder one with
// Operator SDK's plugins in PROJECT (testdata/operator-sdk/PROJECT, as
// operator-sdk init writes it): detected and loaded the same, in both its
// layouts.
func TestLoadOperatorSDK(t *testing.T) {
	sdk, err := os.ReadFile(filepath.Join("..", "testdata", "operator-sdk", "PROJECT"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, layout, run string
		edit              func(t *testing.T, dir string)
	}{
		{name: "go/v4", layout: "go.kubebuilder.io/v4", run: "make run", edit: func(*testing.T, string) {}},
		{name: "go/v3: main.go at the root, no Makefile", layout: "go.kubebuilder.io/v3", run: "go run ./main.go", edit: func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, "Makefile")))
			must(t, os.Rename(filepath.Join(dir, "cmd", "main.go"), filepath.Join(dir, "main.go")))
			v3 := strings.Replace(string(sdk), "go.kubebuilder.io/v4", "go.kubebuilder.io/v3", 1)
			must(t, os.WriteFile(filepath.Join(dir, File), []byte(v3), 0o644))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tree(t, func(dir string) {
				must(t, os.WriteFile(filepath.Join(dir, File), sdk, 0o644))
				tt.edit(t, dir)
			})
			if !Has(dir) {
				t.Fatal("Has: false")
			}
			p, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Title(); got != "memcached-operator (example.com)" {
				t.Errorf("title %q", got)
			}
			if !slices.Contains(p.Layout, tt.layout) || p.Run != tt.run {
				t.Errorf("layout %v run %q, want %s and %q", p.Layout, p.Run, tt.layout, tt.run)
			}
			if rel := p.ManifestsRel(); !reflect.DeepEqual(rel, []string{"config/default"}) || p.Fallback != "" {
				t.Errorf("manifests %v (fallback %q), want config/default", rel, p.Fallback)
			}
		})
	}
}
