package roundtrip

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Bounds of what the generator makes: deep or long values find no more
// losses than short ones, and each costs a conversion.
const (
	maxDepth    = 6
	maxItems    = 3
	maxMapKeys  = 2
	maxStrLen   = 12
	optionalPct = 70 // an optional property is set this often
)

// generator makes values that a structural schema accepts, from one
// random source, so that a seed reproduces them.
type generator struct {
	rnd *rand.Rand
}

// value is a value s accepts, or ok false when the generator cannot meet
// s (a pattern it cannot satisfy, contradictory bounds): the caller leaves
// an optional field out.
func (g *generator) value(s *apiextensionsv1.JSONSchemaProps, depth int) (any, bool) {
	if len(s.Enum) > 0 {
		var v any
		if err := json.Unmarshal(s.Enum[g.rnd.IntN(len(s.Enum))].Raw, &v); err != nil {
			return nil, false
		}
		return v, true
	}
	if s.XIntOrString {
		if g.rnd.IntN(2) == 0 {
			return int64(g.rnd.IntN(100)), true
		}
		return fmt.Sprintf("%d%%", g.rnd.IntN(101)), true
	}
	switch s.Type {
	case "object":
		return g.object(s, depth)
	case "array":
		return g.array(s, depth)
	case "string":
		return g.str(s)
	case "integer":
		return g.integer(s)
	case "number":
		return g.number(s)
	case "boolean":
		return g.rnd.IntN(2) == 0, true
	}
	// No type: x-kubernetes-preserve-unknown-fields or an untyped field,
	// where any JSON goes; a string is the plainest.
	return g.word(1 + g.rnd.IntN(maxStrLen)), true
}

func (g *generator) object(s *apiextensionsv1.JSONSchemaProps, depth int) (any, bool) {
	out := map[string]any{}
	if s.XEmbeddedResource {
		out["apiVersion"], out["kind"] = "v1", "ConfigMap"
		out["metadata"] = map[string]any{"name": g.word(8)}
	}
	if depth >= maxDepth {
		return out, len(s.Required) == 0
	}
	for _, name := range sortedKeys(s.Properties) {
		if s.XEmbeddedResource && (name == "apiVersion" || name == "kind" || name == "metadata") {
			continue
		}
		// The root's properties (spec, status) are always made: an object
		// without a spec finds nothing.
		required := slices.Contains(s.Required, name) || depth == 0
		if !required && g.rnd.IntN(100) >= optionalPct {
			continue
		}
		p := s.Properties[name]
		v, ok := g.value(&p, depth+1)
		if !ok {
			if required {
				return nil, false
			}
			continue
		}
		out[name] = v
	}
	if ap := s.AdditionalProperties; ap != nil && ap.Schema != nil && len(s.Properties) == 0 {
		for range g.rnd.IntN(maxMapKeys + 1) {
			if v, ok := g.value(ap.Schema, depth+1); ok {
				out[g.word(3+g.rnd.IntN(6))] = v
			}
		}
	}
	if s.MinProperties != nil && int64(len(out)) < *s.MinProperties {
		return nil, false
	}
	return out, true
}

func (g *generator) array(s *apiextensionsv1.JSONSchemaProps, depth int) (any, bool) {
	lo, hi := int64(0), int64(maxItems)
	if s.MinItems != nil {
		lo = *s.MinItems
	}
	if s.MaxItems != nil {
		hi = min(hi, *s.MaxItems)
	}
	hi = max(hi, lo)
	out := []any{}
	if s.Items == nil || s.Items.Schema == nil || depth >= maxDepth {
		return out, lo == 0
	}
	n := lo + g.rnd.Int64N(hi-lo+1)
	seen := map[string]bool{}
	for attempt := 0; int64(len(out)) < n && attempt < int(n)*4; attempt++ {
		v, ok := g.value(s.Items.Schema, depth+1)
		if !ok {
			break
		}
		key := uniqueKey(s, v)
		if key != "" && seen[key] {
			continue
		}
		seen[key] = key != ""
		out = append(out, v)
	}
	return out, int64(len(out)) >= lo
}

// uniqueKey is what must be unique among a list's items: the whole item
// for a set or uniqueItems, the map keys for a map list; "" for none.
func uniqueKey(s *apiextensionsv1.JSONSchemaProps, v any) string {
	listType := ""
	if s.XListType != nil {
		listType = *s.XListType
	}
	switch {
	case listType == "map" && len(s.XListMapKeys) > 0:
		m, _ := v.(map[string]any)
		parts := make([]any, len(s.XListMapKeys))
		for i, k := range s.XListMapKeys {
			parts[i] = m[k]
		}
		b, _ := json.Marshal(parts)
		return string(b)
	case listType == "set" || s.UniqueItems:
		b, _ := json.Marshal(v)
		return string(b)
	}
	return ""
}

func (g *generator) integer(s *apiextensionsv1.JSONSchemaProps) (any, bool) {
	lo, hi := int64(-1000), int64(1000)
	switch s.Format {
	case "int32":
		lo, hi = max(lo, math.MinInt32), min(hi, math.MaxInt32)
	}
	if s.Minimum != nil {
		lo = int64(math.Ceil(*s.Minimum))
		if s.ExclusiveMinimum && float64(lo) == *s.Minimum {
			lo++
		}
		hi = max(hi, lo+1000)
	}
	if s.Maximum != nil {
		hi = int64(math.Floor(*s.Maximum))
		if s.ExclusiveMaximum && float64(hi) == *s.Maximum {
			hi--
		}
		if s.Minimum == nil {
			lo = min(lo, hi-1000)
		}
	}
	if lo > hi {
		return nil, false
	}
	v := lo + g.rnd.Int64N(hi-lo+1)
	if s.MultipleOf != nil && *s.MultipleOf >= 1 {
		m := int64(*s.MultipleOf)
		v -= v % m
		if v < lo {
			v += m
		}
		if v > hi {
			return nil, false
		}
	}
	return v, true
}

func (g *generator) number(s *apiextensionsv1.JSONSchemaProps) (any, bool) {
	lo, hi := -1000.0, 1000.0
	if s.Minimum != nil {
		lo, hi = *s.Minimum, max(hi, *s.Minimum+1000)
	}
	if s.Maximum != nil {
		hi = *s.Maximum
		if s.Minimum == nil {
			lo = min(lo, hi-1000)
		}
	}
	if lo > hi {
		return nil, false
	}
	// Quarters: exact in binary, so that a value survives JSON unchanged
	// and a change is the converter's.
	v := math.Round((lo+g.rnd.Float64()*(hi-lo))*4) / 4
	v = min(max(v, lo), hi)
	if (s.ExclusiveMinimum && v == lo) || (s.ExclusiveMaximum && v == hi) {
		v = (lo + hi) / 2
	}
	if s.MultipleOf != nil && *s.MultipleOf > 0 {
		v = math.Ceil(lo / *s.MultipleOf) * *s.MultipleOf
		if v > hi {
			return nil, false
		}
	}
	return v, true
}

func (g *generator) str(s *apiextensionsv1.JSONSchemaProps) (any, bool) {
	lo, hi := int64(0), int64(maxStrLen)
	if s.MinLength != nil {
		lo = *s.MinLength
	}
	if s.MaxLength != nil {
		hi = min(hi, *s.MaxLength)
	}
	hi = max(hi, lo)
	fits := func(v string) bool {
		n := int64(len([]rune(v)))
		return n >= lo && (s.MaxLength == nil || n <= *s.MaxLength)
	}
	if s.Pattern != "" {
		for range 8 {
			if v, ok := g.pattern(s.Pattern, int(hi)); ok && fits(v) {
				return v, true
			}
		}
		return nil, false
	}
	if v, ok := g.format(s.Format); ok {
		return v, fits(v)
	}
	return g.word(int(lo + g.rnd.Int64N(hi-lo+1))), true
}

// format is a value of a format the apiserver validates; ok false for a
// format it does not know, which is then any string.
func (g *generator) format(f string) (string, bool) {
	r := g.rnd
	switch f {
	case "date-time":
		return time.Unix(1_700_000_000+r.Int64N(100_000_000), 0).UTC().Format(time.RFC3339), true
	case "date":
		return time.Unix(1_700_000_000+r.Int64N(100_000_000), 0).UTC().Format(time.DateOnly), true
	case "duration":
		return (time.Duration(1+r.IntN(3600)) * time.Second).String(), true
	case "byte":
		return base64.StdEncoding.EncodeToString([]byte(g.word(1 + r.IntN(8)))), true
	case "uuid":
		return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", r.Uint32(), r.IntN(1<<16), r.IntN(1<<12), r.IntN(1<<12), r.Int64N(1<<48)), true
	case "email":
		return g.word(5) + "@example.com", true
	case "hostname":
		return g.word(6) + ".example.com", true
	case "ipv4":
		return fmt.Sprintf("10.%d.%d.%d", r.IntN(256), r.IntN(256), 1+r.IntN(254)), true
	case "ipv6":
		return fmt.Sprintf("fd00::%x", 1+r.IntN(0xfffe)), true
	case "cidr":
		return fmt.Sprintf("10.%d.0.0/16", r.IntN(256)), true
	case "uri":
		return "https://example.com/" + g.word(5), true
	case "mac":
		return fmt.Sprintf("02:00:00:%02x:%02x:%02x", r.IntN(256), r.IntN(256), r.IntN(256)), true
	}
	return "", false
}

// word is n lowercase letters and digits, starting with a letter: valid
// as most names, labels and plain strings.
func (g *generator) word(n int) string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	const alnum = letters + "0123456789"
	var b strings.Builder
	for i := range n {
		set := alnum
		if i == 0 {
			set = letters
		}
		b.WriteByte(set[g.rnd.IntN(len(set))])
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
