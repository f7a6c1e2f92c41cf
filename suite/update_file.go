package suite

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	sigsyaml "sigs.k8s.io/yaml"
)

// objectFiles are the expect.objectFile files one --update writes, by
// path, so that two cases naming one file cannot write it two ways.
type objectFiles map[string][]byte

// intoObjectFile keeps a case's expected object in its file: when the
// case names expect.objectFile and the new expectation has an object,
// the object is written to that file (YAML, or JSON for a .json file) and
// the expectation names the file again. edit reports whether the case's
// own expect must change too: only when more than the object changed.
func (of objectFiles) intoObjectFile(l *Loaded, e Expect) (out Expect, edit bool, path string, err error) {
	path = l.Expect.ObjectFile
	if !filepath.IsAbs(path) {
		path = filepath.Join(l.Dir(), path)
	}
	body, err := objectFileBody(path, e.Object)
	if err != nil {
		return e, false, path, fmt.Errorf("expect.objectFile %s: %w", l.Expect.ObjectFile, err)
	}
	if prev, ok := of[path]; ok && !bytes.Equal(prev, body) {
		return e, false, path, fmt.Errorf("expect.objectFile %s: another failing case wrote a different object to it: give each case its own file", l.Expect.ObjectFile)
	}
	of[path] = body
	out = e
	out.Object, out.ObjectFile = nil, l.Expect.ObjectFile
	a, _ := json.Marshal(out)
	b, _ := json.Marshal(l.Expect)
	return out, string(a) != string(b), path, writeKeepingMode(path, body)
}

// objectFileBody is obj as a file at path holds it.
func objectFileBody(path string, obj json.RawMessage) ([]byte, error) {
	if strings.EqualFold(filepath.Ext(path), ".json") {
		var v any
		if err := json.Unmarshal(obj, &v); err != nil {
			return nil, err
		}
		b, err := json.MarshalIndent(v, "", "  ")
		return append(b, '\n'), err
	}
	return sigsyaml.JSONToYAML(obj)
}
