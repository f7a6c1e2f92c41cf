package roundtrip

import (
	"encoding/json"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// field is a property a schema declares, reached through properties
// only, with whether its parent requires it.
type field struct {
	path     []string
	schema   *apiextensionsv1.JSONSchemaProps
	required bool
}

// fields lists the properties of a root schema that a variation may set
// or remove: everything below the root but apiVersion, kind and metadata.
func fields(root *apiextensionsv1.JSONSchemaProps) []field {
	var out []field
	var walk func(s *apiextensionsv1.JSONSchemaProps, path []string)
	walk = func(s *apiextensionsv1.JSONSchemaProps, path []string) {
		if len(path) >= maxDepth {
			return
		}
		for _, name := range sortedKeys(s.Properties) {
			if len(path) == 0 && (name == "apiVersion" || name == "kind" || name == "metadata") {
				continue
			}
			p := s.Properties[name]
			fp := append(slices.Clone(path), name)
			out = append(out, field{path: fp, schema: &p, required: slices.Contains(s.Required, name)})
			if p.Type == "object" {
				walk(&p, fp)
			}
		}
	}
	walk(root, nil)
	return out
}

// vary returns a copy of obj with one to three of fs changed: set to a
// new value the schema accepts, or, for an optional field, removed.
func (g *generator) vary(obj map[string]any, fs []field) map[string]any {
	out := deepCopy(obj)
	if len(fs) == 0 {
		return out
	}
	for range 1 + g.rnd.IntN(3) {
		f := fs[g.rnd.IntN(len(fs))]
		if !f.required && len(f.path) > 1 && g.rnd.IntN(4) == 0 {
			unset(out, f.path)
			continue
		}
		if v, ok := g.value(f.schema, len(f.path)); ok {
			set(out, f.path, v)
		}
	}
	return out
}

// set writes v at path, making the objects on the way; a non-object on
// the way is replaced, which the schema allows since path is declared.
func set(obj map[string]any, path []string, v any) {
	m := obj
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
}

func unset(obj map[string]any, path []string) {
	m := obj
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			return
		}
		m = next
	}
	delete(m, path[len(path)-1])
}

// deepCopy copies a JSON object through JSON: what a round trip sees.
func deepCopy(obj map[string]any) map[string]any {
	b, err := json.Marshal(obj)
	if err != nil {
		return map[string]any{}
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return map[string]any{}
	}
	return out
}
