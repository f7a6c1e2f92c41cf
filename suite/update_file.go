package suite

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"
)

// edit replaces the block of one key of a case (expect or
// expectWebhooks) with a new value.
type edit struct {
	l     *Loaded
	key   *yaml.Node
	value any
}

// caseEdits are the edits that make a failing case expect what came now,
// printed to w: expect for the webhooks without an expectation of their
// own, expectWebhooks for those with one. Expected objects kept in files
// are rewritten there (written).
func caseEdits(l *Loaded, rs []Row, written objectFiles, w io.Writer) ([]edit, error) {
	for _, r := range rs {
		if r.Got == nil || r.Status == Erred {
			return nil, errors.New(rs[0].Detail)
		}
	}
	var shared []Row
	own := map[string]Row{}
	for _, r := range rs {
		if _, ok := l.ExpectWebhooks[r.Webhook]; ok {
			if r.Status != Pass {
				own[r.Webhook] = r
			}
			continue
		}
		shared = append(shared, r)
	}
	var edits []edit
	if slices.ContainsFunc(shared, func(r Row) bool { return r.Status != Pass }) {
		e, ok := commonExpect(shared)
		if !ok {
			return nil, errors.New(shared[0].Detail)
		}
		e, changed, where, err := written.keep(l, l.Expect, e)
		if err != nil {
			return nil, err
		}
		if changed {
			edits = append(edits, edit{l, l.expectK, e})
		}
		fmt.Fprintf(w, "updated %s %s: expect %s, was %s\n%s\n", where, l.Name, e.Result, l.Expect.Result, indent(diffsOf(shared)))
	}
	if len(own) == 0 {
		return edits, nil
	}
	m, changed := maps.Clone(l.ExpectWebhooks), false
	names := slices.Collect(maps.Keys(own))
	sort.Strings(names)
	for _, name := range names {
		old := l.ExpectWebhooks[name]
		e, ch, where, err := written.keep(l, old, ExpectOf(*own[name].Got))
		if err != nil {
			return nil, err
		}
		m[name], changed = e, changed || ch
		fmt.Fprintf(w, "updated %s %s (expectWebhooks %s): expect %s, was %s\n%s\n", where, l.Name, name, e.Result, old.Result, indent(diffsOf([]Row{own[name]})))
	}
	if changed {
		edits = append(edits, edit{l, l.expectWK, m})
	}
	return edits, nil
}

func diffsOf(rs []Row) string {
	var diffs []string
	for _, r := range rs {
		if r.Diff != "" {
			diffs = append(diffs, r.Diff)
		}
	}
	return strings.Join(diffs, "\n")
}

// objectFiles are the objectFile files one --update writes, by path, so
// that two cases naming one file cannot write it two ways.
type objectFiles map[string][]byte

// keep turns e, the new expectation in place of old, into what the case
// holds: when old keeps its object in a file (objectFile) and e has an
// object, the object is written to that file (YAML, or JSON for a .json
// file) and e names the file again. changed reports whether the case's
// text must change too: only when more than the object changed. where
// names what was rewritten, for the report.
func (of objectFiles) keep(l *Loaded, old, e Expect) (out Expect, changed bool, where string, err error) {
	where = fmt.Sprintf("%s:%d", l.File.Path, l.Line)
	if old.ObjectFile == "" || len(e.Object) == 0 {
		return e, true, where, nil
	}
	path := old.ObjectFile
	if !filepath.IsAbs(path) {
		path = filepath.Join(l.Dir(), path)
	}
	body, err := objectFileBody(path, e.Object)
	if err != nil {
		return e, false, where, fmt.Errorf("objectFile %s: %w", old.ObjectFile, err)
	}
	if prev, ok := of[path]; ok && !bytes.Equal(prev, body) {
		return e, false, where, fmt.Errorf("objectFile %s: another failing case wrote a different object to it: give each case its own file", old.ObjectFile)
	}
	of[path] = body
	out = e
	out.Object, out.ObjectFile = nil, old.ObjectFile
	a, _ := json.Marshal(out)
	b, _ := json.Marshal(old)
	return out, string(a) != string(b), path + " (objectFile of " + where + ")", writeKeepingMode(path, body)
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
