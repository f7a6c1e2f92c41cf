package chain

import (
	"unsafe"

	"github.com/hookback/hookback/internal/jsondiff"
)

// decode is decode(raw), once per object of the chain. The walk only
// reads what it returns.
func (e *explainer) decode(raw []byte) (any, error) {
	if len(raw) == 0 {
		return jsondiff.Decode(raw)
	}
	k := keyOf(raw)
	if v, ok := e.objects[k]; ok {
		return v, nil
	}
	v, err := jsondiff.Decode(raw)
	if err != nil {
		return nil, err
	}
	if e.objects == nil {
		e.objects = map[bytesKey]any{}
	}
	e.objects[k] = v
	return v, nil
}

// bytesKey is where a byte slice is: the chain's objects and patches are
// each their own copy (redacted, bytes.Clone), never changed once joined.
type bytesKey struct {
	p *byte
	n int
}

func keyOf(b []byte) bytesKey { return bytesKey{unsafe.SliceData(b), len(b)} }

// patched is patched(object, patch), once per call of your webhook (a
// call's patch is its own slice).
func (e *explainer) patched(object, patch []byte) ([]byte, error) {
	if len(patch) == 0 || len(object) == 0 {
		return object, nil
	}
	k := [2]bytesKey{keyOf(object), keyOf(patch)}
	if v, ok := e.patchedObjs[k]; ok {
		return v, nil
	}
	v, err := patched(object, patch)
	if err != nil {
		return nil, err
	}
	if e.patchedObjs == nil {
		e.patchedObjs = map[[2]bytesKey][]byte{}
	}
	e.patchedObjs[k] = v
	return v, nil
}
