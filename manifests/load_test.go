package manifests

import (
	"errors"
	"io/fs"
	"reflect"
	"strings"
	"testing"

	"github.com/hookback/hookback/registration"
)

// docRef is what a Document says about itself, for exact comparisons.
type docRef struct {
	Source string
	Index  int
	Kind   string
	Name   string
}

func refs(docs []Document) []docRef {
	var out []docRef
	for _, d := range docs {
		out = append(out, docRef{d.Source, d.Index, d.Object.GetKind(), d.Object.GetName()})
	}
	return out
}

func TestLoad(t *testing.T) {
	in := func(f string) string { return manifestPath("in", f) }
	dir := manifestPath("dir")
	tests := []struct {
		name  string
		paths []string
		stdin string
		want  []docRef
	}{
		{name: "file", paths: []string{in("controller-gen.yaml")}, want: []docRef{
			{in("controller-gen.yaml"), 1, registration.KindMutatingHook, "mutating-webhook-configuration"},
			{in("controller-gen.yaml"), 2, registration.KindValidatingHook, "validating-webhook-configuration"},
		}},
		{name: "empty documents skipped, comment-only ones counted", paths: []string{in("match-conditions.yaml")}, want: []docRef{
			{in("match-conditions.yaml"), 2, registration.KindMutatingHook, "sidecar-injector"},
		}},
		{name: "list items share the list's index", paths: []string{in("list.yaml")}, want: []docRef{
			{in("list.yaml"), 1, registration.KindValidatingHook, "policy"},
			{in("list.yaml"), 1, registration.KindMutatingHook, "policy"},
		}},
		{name: "json", paths: []string{in("url.json")}, want: []docRef{
			{in("url.json"), 1, registration.KindValidatingHook, "external"},
		}},
		{name: "directory sorted, not recursive, manifests only", paths: []string{dir}, want: []docRef{
			{dir + "/a.json", 1, registration.KindMutatingHook, "a"},
			{dir + "/b.yml", 1, registration.KindValidatingHook, "b"},
			{dir + "/c.yaml", 1, "ConfigMap", "c"},
			{dir + "/c.yaml", 2, "ConfigMap", "d"},
		}},
		{name: "stdin between files", paths: []string{in("url.json"), "-"}, stdin: "---\nkind: List\napiVersion: v1\nitems:\n- {kind: ConfigMap, metadata: {name: x}}\n---\n{}\n---\nkind: Secret\nmetadata: {name: s}\n", want: []docRef{
			{in("url.json"), 1, registration.KindValidatingHook, "external"},
			{StdinSource, 1, "ConfigMap", "x"},
			{StdinSource, 3, "Secret", "s"},
		}},
		{name: "nothing", paths: nil, want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := Load(tc.paths, strings.NewReader(tc.stdin))
			if err != nil {
				t.Fatal(err)
			}
			if got := refs(docs); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("documents:\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	missing := manifestPath("in", "missing.yaml")
	empty := t.TempDir()
	tests := []struct {
		name     string
		paths    []string
		stdin    string
		want     string
		manifest bool // wraps ErrInvalid
	}{
		{name: "missing file", paths: []string{missing}, want: "read manifest: stat " + missing + ": no such file or directory"},
		{name: "stdin twice", paths: []string{"-", "-"}, want: `manifest "-" given twice: stdin can be read only once`},
		{name: "directory without manifests", paths: []string{empty}, want: "manifest directory " + empty + " has no *.yaml, *.yml or *.json files"},
		{name: "bad yaml", paths: []string{"-"}, stdin: "kind: A\n---\nkind: [unclosed\n", want: StdinSource + " document 2: ", manifest: true},
		{name: "not an object", paths: []string{"-"}, stdin: "- a\n- b\n", want: StdinSource + " document 1: not an object", manifest: true},
		{name: "list item not an object", paths: []string{"-"}, stdin: "kind: List\nitems: [3]\n", want: StdinSource + " document 1: List: items[0] is not an object", manifest: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(tc.paths, strings.NewReader(tc.stdin))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load() error = %v, want it to contain %q", err, tc.want)
			}
			if got := errors.Is(err, ErrInvalid); got != tc.manifest {
				t.Errorf("errors.Is(err, ErrInvalid) = %v, want %v", got, tc.manifest)
			}
		})
	}
	t.Run("missing file is fs.ErrNotExist", func(t *testing.T) {
		if _, err := Load([]string{missing}, nil); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("error = %v, want fs.ErrNotExist", err)
		}
	})
}
