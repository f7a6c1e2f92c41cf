package jsondiff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Change is one field that differs between two views of an object, as a
// JSON pointer (RFC 6901) with its value before and after: Op is add (no
// value before), remove (none after) or replace. The chain's views speak
// it, for they are read beside JSON patches.
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

// Pointers lists the fields that differ between two JSON documents, both as
// received from the apiserver (never re-encoded typed objects, which would
// drop fields the types do not know), as JSON pointers with raw values.
// Either document may be empty (no object): every field is then added or
// removed. managedFields is left out: the apiserver rewrites it after
// admission, and no webhook's change shows there.
func Pointers(before, after []byte) ([]Change, error) {
	return PointersDecoded(Decode, before, after)
}

// PointersDecoded is Pointers with the documents decoded by dec (a caller
// that decodes each document once, for several comparisons).
func PointersDecoded(dec func([]byte) (any, error), before, after []byte) ([]Change, error) {
	if len(before) > 0 && bytes.Equal(before, after) {
		// The apiserver encodes one object the same way each call: the same
		// bytes are no change, without decoding both.
		return nil, nil
	}
	a, err := dec(before)
	if err != nil {
		return nil, fmt.Errorf("jsondiff: the earlier object: %w", err)
	}
	b, err := dec(after)
	if err != nil {
		return nil, fmt.Errorf("jsondiff: the later object: %w", err)
	}
	var out []Change
	_, inA := a.(Absent)
	_, inB := b.(Absent)
	walk(nil, a, b, !inA, !inB, skipManagedFields, func(path []step, x, y any, inX, inY bool) {
		p := pointer(path)
		switch {
		case !inX:
			out = append(out, Change{Path: p, Op: OpAdd, New: Raw(y)})
		case !inY:
			out = append(out, Change{Path: p, Op: OpRemove, Old: Raw(x)})
		default:
			out = append(out, Change{Path: p, Op: OpReplace, Old: Raw(x), New: Raw(y)})
		}
	})
	return out, nil
}

func skipManagedFields(path []step) bool {
	return len(path) == 2 && path[0].key == "metadata" && path[1].key == "managedFields"
}

// Absent stands for a document that is not there (no object): what Decode
// returns for an empty document or null.
type Absent struct{}

// Decode decodes a document as Pointers does: numbers kept as written, and
// an empty document or null as no object.
func Decode(doc []byte) (any, error) {
	if t := bytes.TrimSpace(doc); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return Absent{}, nil
	}
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// pointer is path as a JSON pointer.
func pointer(path []step) string {
	var b strings.Builder
	for _, s := range path {
		b.WriteByte('/')
		if s.index >= 0 {
			b.WriteString(strconv.Itoa(s.index))
			continue
		}
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(s.key, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// Raw is v as compact JSON, HTML characters as they are.
func Raw(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return nil
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// Related reports whether two JSON pointers touch the same data: equal, or
// one inside the other.
func Related(a, b string) bool {
	return a == b || strings.HasPrefix(b, a+"/") || strings.HasPrefix(a, b+"/") || a == "" || b == ""
}
