package manifests

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hookback/hookback/internal/errkind"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// StdinSource is the Document.Source of documents read from "-".
const StdinSource = "<stdin>"

// manifestExts are the file names Load reads from a directory.
var manifestExts = []string{".yaml", ".yml", ".json"}

// Document is one YAML/JSON object read from a manifest source, with where it
// came from, so that every complaint about it can name the file.
type Document struct {
	// Source is the file path, or StdinSource.
	Source string
	// Index is the 1-based position of the YAML/JSON document in Source, as
	// the YAML decoder counts: nothing between two "---" is no document, a
	// document of comments only is one (and yields no Document).
	// Items of a List share the Index of their List; their kind and name
	// tell them apart.
	Index int
	// Object holds JSON-compatible values (integers as int64), as
	// unstructured objects must.
	Object *unstructured.Unstructured
}

// Location names the document in messages: "SOURCE document INDEX".
func (d Document) Location() string {
	return fmt.Sprintf("%s document %d", d.Source, d.Index)
}

// Load reads every path in order: a file, a kustomization
// directory (rendered, see IsKustomization; its Documents' Source is the
// directory), a directory (its *.yaml,
// *.yml and *.json files, sorted by name, not recursive), or "-" for stdin,
// which can be read only once. Multi-document YAML ("---") and List kinds
// (their items) are split into Documents; empty documents are skipped.
// Read errors name the path; parse errors also wrap ErrInvalid.
func Load(paths []string, stdin io.Reader) ([]Document, error) {
	var docs []Document
	stdinRead := false
	for _, p := range paths {
		if p == "-" {
			if stdinRead {
				return nil, errors.New(`manifest "-" given twice: stdin can be read only once`)
			}
			if stdin == nil {
				return nil, errors.New(`manifest "-": no stdin to read`)
			}
			stdinRead = true
			b, err := io.ReadAll(stdin)
			if err != nil {
				return nil, fmt.Errorf("read manifests from stdin: %w", err)
			}
			d, err := decodeManifest(StdinSource, b)
			if err != nil {
				return nil, err
			}
			docs = append(docs, d...)
			continue
		}
		if IsKustomization(p) {
			b, err := kustomize(p)
			if err != nil {
				return nil, err
			}
			d, err := decodeManifest(p, b)
			if err != nil {
				return nil, err
			}
			docs = append(docs, d...)
			continue
		}
		files, err := manifestFiles(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("read manifest: %w", err)
			}
			d, err := decodeManifest(f, b)
			if err != nil {
				return nil, err
			}
			docs = append(docs, d...)
		}
	}
	return docs, nil
}

// manifestFiles expands a directory into its manifest files; a file is
// returned as is, whatever its name, because the user named it.
func manifestFiles(p string) ([]string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	entries, err := os.ReadDir(p) // sorted by name
	if err != nil {
		return nil, fmt.Errorf("read manifest directory: %w", err)
	}
	var files []string
	for _, e := range entries {
		if e.IsDir() || !slices.Contains(manifestExts, strings.ToLower(filepath.Ext(e.Name()))) {
			continue
		}
		files = append(files, filepath.Join(p, e.Name()))
	}
	if len(files) == 0 {
		// Most likely a wrong directory: say so rather than register nothing.
		return nil, fmt.Errorf("manifest directory %s has no *.yaml, *.yml or *.json files", p)
	}
	return files, nil
}

// decodeManifest splits a YAML or JSON stream into Documents.
func decodeManifest(source string, b []byte) ([]Document, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var docs []Document
	for i := 1; ; i++ {
		// Decode to raw JSON first, then with utiljson, which keeps integers
		// as int64 the way unstructured objects expect (ports, timeouts).
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return docs, nil
			}
			return nil, errkind.New(ErrInvalid, fmt.Errorf("%s document %d: %w", source, i, err))
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue // a document of comments only
		}
		var m map[string]any
		if err := utiljson.Unmarshal(raw, &m); err != nil {
			return nil, errkind.New(ErrInvalid, fmt.Errorf("%s document %d: not an object: %w", source, i, err))
		}
		if len(m) == 0 {
			continue
		}
		o := &unstructured.Unstructured{Object: m}
		if !isList(o) {
			docs = append(docs, Document{Source: source, Index: i, Object: o})
			continue
		}
		items, err := listItems(o)
		if err != nil {
			return nil, errkind.New(ErrInvalid, fmt.Errorf("%s document %d: %s: %w", source, i, o.GetKind(), err))
		}
		for _, it := range items {
			docs = append(docs, Document{Source: source, Index: i, Object: it})
		}
	}
}

// isList reports a v1 List or a typed list (kubectl get -o yaml writes
// either): a kind ending in List with an items array.
func isList(o *unstructured.Unstructured) bool {
	_, isSlice := o.Object["items"].([]any)
	return isSlice && strings.HasSuffix(o.GetKind(), "List")
}

func listItems(o *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	raw := o.Object["items"].([]any)
	items := make([]*unstructured.Unstructured, 0, len(raw))
	for j, it := range raw {
		m, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("items[%d] is not an object", j)
		}
		if len(m) == 0 {
			continue
		}
		items = append(items, &unstructured.Unstructured{Object: m})
	}
	return items, nil
}
