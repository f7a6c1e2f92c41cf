package chain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Change is one field that differs between two views of an object, as a
// JSON pointer (RFC 6901) with its value before and after: Op is add (no
// value before), remove (none after) or replace.
type Change struct {
	Path string          `json:"path"`
	Op   string          `json:"op"`
	Old  json.RawMessage `json:"old,omitempty"`
	New  json.RawMessage `json:"new,omitempty"`
}

// Operations of a Change.
const (
	OpAdd     = "add"
	OpRemove  = "remove"
	OpReplace = "replace"
)

// ignored are the fields a diff leaves out: the apiserver rewrites
// managedFields after admission, and no webhook's change shows there.
var ignored = []string{"/metadata/managedFields"}

// Diff lists the fields that differ between two JSON documents, both as
// received from the apiserver (never re-encoded typed objects, which would
// drop fields the types do not know). Objects are compared key by key,
// arrays index by index (an insertion shows as changes at each later index
// and an add at the end: what a JSON patch against the same array says).
// Either document may be empty (no object): every field is then added or
// removed.
func Diff(before, after []byte) ([]Change, error) {
	return diffWith(decode, before, after)
}

// diffWith is Diff with the objects decoded by dec (an explainer's, which
// decodes each object of a chain once).
func diffWith(dec func([]byte) (any, error), before, after []byte) ([]Change, error) {
	if len(before) > 0 && bytes.Equal(before, after) {
		// The apiserver encodes one object the same way each call, and the
		// views' objects are parts of reviews already decoded (validated):
		// the same bytes are no change, without decoding both (most of the
		// publisher's time when nothing changed between two stages).
		return nil, nil
	}
	a, err := dec(before)
	if err != nil {
		return nil, fmt.Errorf("chain: diff: the earlier object: %w", err)
	}
	b, err := dec(after)
	if err != nil {
		return nil, fmt.Errorf("chain: diff: the later object: %w", err)
	}
	var out []Change
	walk("", a, b, &out)
	return out, nil
}

// absent stands for a document that is not there (no object).
type absent struct{}

func decode(raw []byte) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return absent{}, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func walk(path string, a, b any, out *[]Change) {
	if slices.Contains(ignored, path) {
		return
	}
	_, aAbsent := a.(absent)
	_, bAbsent := b.(absent)
	switch {
	case aAbsent && bAbsent:
		return
	case aAbsent:
		*out = append(*out, Change{Path: path, Op: OpAdd, New: raw(b)})
		return
	case bAbsent:
		*out = append(*out, Change{Path: path, Op: OpRemove, Old: raw(a)})
		return
	}
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := make([]string, 0, len(am)+len(bm))
		for k := range am {
			keys = append(keys, k)
		}
		for k := range bm {
			if _, ok := am[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			walk(path+"/"+escape(k), orAbsent(am, k), orAbsent(bm, k), out)
		}
		return
	}
	as, aok := a.([]any)
	bs, bok := b.([]any)
	if aok && bok {
		for i := 0; i < max(len(as), len(bs)); i++ {
			var x, y any = absent{}, absent{}
			if i < len(as) {
				x = as[i]
			}
			if i < len(bs) {
				y = bs[i]
			}
			walk(path+"/"+strconv.Itoa(i), x, y, out)
		}
		return
	}
	if !reflect.DeepEqual(a, b) {
		*out = append(*out, Change{Path: path, Op: OpReplace, Old: raw(a), New: raw(b)})
	}
}

func orAbsent(m map[string]any, k string) any {
	if v, ok := m[k]; ok {
		return v
	}
	return absent{}
}

func raw(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return nil
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// escape is a JSON pointer's escaping of one key.
func escape(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// Related reports whether two JSON pointers touch the same data: equal, or
// one inside the other.
func Related(a, b string) bool {
	return a == b || strings.HasPrefix(b, a+"/") || strings.HasPrefix(a, b+"/") || a == "" || b == ""
}
