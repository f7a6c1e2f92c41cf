package roundtrip

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"

	fielderr "github.com/hookback/hookback/field"
	"github.com/hookback/hookback/internal/jsondiff"
)

// structural reads a version's schema as the apiserver does, to store its
// objects as the apiserver would.
func structural(crd string, v version) (*structuralschema.Structural, error) {
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.schema, &internal, nil); err != nil {
		return nil, fmt.Errorf("%s %s: read the schema: %w", crd, v.name, err)
	}
	s, err := structuralschema.NewStructural(&internal)
	if err != nil {
		return nil, fielderr.Advise("roundtrip.Options.Strict",
			"%s %s: read the schema as the apiserver does: %v: the apiserver refuses such a CRD; fix the schema, or compare every byte of the answers instead ({roundtrip.Options.Strict})", crd, v.name, err)
	}
	return s, nil
}

// asStored changes obj into what the apiserver keeps of it after a
// conversion (the schemaCoercingConverter of apiextensions-apiserver's
// customresource_handler.go): the fields s does not declare pruned, and
// the nulls of fields that are neither nullable nor defaulted dropped, by
// the apiserver's own code. Object metadata is left alone: the round trip
// compares only its labels and annotations, which are never pruned.
func asStored(obj map[string]any, s *structuralschema.Structural) {
	structuralpruning.Prune(obj, s, true)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, s)
}

// splitEmptied removes from after, and returns, each field absent from
// before that came back as an empty structure: an object holding only
// empty structures and zero values, such as a Go-typed conversion writes
// for a struct field it was not given
// ({"template":{"metadata":{},"spec":{}}}). A lone {}, [] or zero value
// is removed and not returned: it reads as the absent field it replaces
// (meaningful). The paths are written as audit.Diff writes them; the
// root's apiVersion, kind and metadata are not looked at.
func splitEmptied(before, after map[string]any) []jsondiff.FieldChange {
	var out []jsondiff.FieldChange
	var walk func(path string, b, a any)
	walk = func(path string, b, a any) {
		switch av := a.(type) {
		case map[string]any:
			bv, ok := b.(map[string]any)
			if !ok {
				return
			}
			for _, k := range sortedKeys(av) {
				if path == "" && (k == "apiVersion" || k == "kind" || k == "metadata") {
					continue
				}
				p := jsondiff.FieldPath(path, k)
				if _, had := bv[k]; had {
					walk(p, bv[k], av[k])
					continue
				}
				if !empty(av[k]) {
					continue
				}
				if !zero(av[k]) {
					out = append(out, jsondiff.FieldChange{Path: p, Before: jsondiff.Missing, After: short(av[k])})
				}
				delete(av, k)
			}
		case []any:
			if bv, ok := b.([]any); ok && len(bv) == len(av) {
				for i := range av {
					walk(fmt.Sprintf("%s[%d]", path, i), bv[i], av[i])
				}
			}
		}
	}
	walk("", before, after)
	return out
}

// empty says whether v holds no value: null, a zero value, an empty list,
// or an object of empty values.
func empty(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			if !empty(x) {
				return false
			}
		}
		return true
	case []any:
		return len(v) == 0
	}
	return v == nil || zero(v)
}

// zero says whether v is "", 0, false, {} or [], which Kubernetes clients
// read as an absent field.
func zero(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	case string:
		return v == ""
	case float64:
		return v == 0
	case int64:
		return v == 0
	case bool:
		return !v
	}
	return false
}

// maxShort bounds a value shown in a finding, as audit.Diff's.
const maxShort = 120

// short is v as JSON, cut to maxShort runes.
func short(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if r := []rune(string(b)); len(r) > maxShort {
		return string(r[:maxShort-1]) + "…"
	}
	return strings.TrimSpace(string(b))
}
