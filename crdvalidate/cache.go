package crdvalidate

import (
	"encoding/json"
	"fmt"

	"github.com/hookback/hookback/manifests"
)

// compileCache keeps compiled CRDs across the runs of a watch: a CRD is
// compiled again only when its content or its place changed, so a save
// of an object is judged without recompiling every CRD (tens of
// milliseconds each for an HTTPRoute-sized schema, more than the judging
// of a hundred objects). A nil cache compiles every time.
type compileCache struct {
	last, next map[string]*CRD
}

func newCompileCache() *compileCache { return &compileCache{last: map[string]*CRD{}} }

// compile is Compile of d, or the CRD compiled from the same content at
// the same place in the previous run.
func (c *compileCache) compile(d manifests.Document) (*CRD, error) {
	if c == nil {
		return Compile(d.Object, d.Location())
	}
	raw, err := json.Marshal(d.Object.Object)
	if err != nil {
		return nil, &InvalidCRDError{Source: d.Location(), Err: fmt.Errorf("encode CustomResourceDefinition: %w", err)}
	}
	key := d.Location() + "\x00" + string(raw)
	crd, ok := c.last[key]
	if !ok {
		if crd, err = Compile(d.Object, d.Location()); err != nil {
			return nil, err
		}
	}
	if c.next == nil {
		c.next = map[string]*CRD{}
	}
	c.next[key] = crd
	return crd, nil
}

// done ends a run: what it did not use is forgotten.
func (c *compileCache) done() {
	if c == nil {
		return
	}
	c.last, c.next = c.next, nil
	if c.last == nil {
		c.last = map[string]*CRD{}
	}
}
