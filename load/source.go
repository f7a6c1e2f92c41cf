package load

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/manifests"
	"github.com/hookback/hookback/record"
	"github.com/hookback/hookback/suite"
)

// Inputs name where the objects to create come from; the requests take
// them in turn.
type Inputs struct {
	// Objects are manifests: a file, a directory, a kustomize directory,
	// or - for Stdin.
	Objects []string
	// Suites are `hookback test` suites: their CREATE cases.
	Suites []string
	// Records are recordings (start --record-dir): their CREATE reviews.
	Records []string
	Stdin   io.Reader
}

// Object is one object to create and where it was read, for messages.
type Object struct {
	Source string
	Object *unstructured.Unstructured
}

// Read reads every input; an input that yields nothing to create is an
// error, as is no input at all.
func (in Inputs) Read() ([]Object, error) {
	if len(in.Objects)+len(in.Suites)+len(in.Records) == 0 {
		return nil, field.Advise("load.Inputs.Objects", "nothing to send: give manifests ({load.Inputs.Objects}), suites ({load.Inputs.Suites}) or recordings ({load.Inputs.Records})")
	}
	var out []Object
	var errs []error
	add := func(objs []Object, err error) {
		out, errs = append(out, objs...), append(errs, err)
	}
	if len(in.Objects) > 0 {
		add(readManifests(in.Objects, in.Stdin))
	}
	if len(in.Suites) > 0 {
		add(readSuites(in.Suites))
	}
	if len(in.Records) > 0 {
		add(readRecords(in.Records))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

func readManifests(paths []string, stdin io.Reader) ([]Object, error) {
	docs, err := manifests.Load(paths, stdin)
	if err != nil {
		return nil, fmt.Errorf("read manifests: %w", err)
	}
	out := make([]Object, 0, len(docs))
	for _, d := range docs {
		out = append(out, Object{Source: d.Location(), Object: d.Object})
	}
	if len(out) == 0 {
		return nil, field.Clause("load.Inputs.Objects", fmt.Sprint(paths), "holds no object to create")
	}
	return out, nil
}

func readSuites(paths []string) ([]Object, error) {
	files, err := suite.Load(paths)
	if err != nil {
		return nil, err
	}
	var out []Object
	for _, f := range files {
		for _, c := range f.Cases {
			raw, ok, err := c.CreateObject()
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			o, err := decode(raw)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.ID(), err)
			}
			out = append(out, Object{Source: c.ID(), Object: o})
		}
	}
	if len(out) == 0 {
		return nil, field.Clause("load.Inputs.Suites", fmt.Sprint(paths), "has no CREATE case: load sends only creates")
	}
	return out, nil
}

func readRecords(paths []string) ([]Object, error) {
	entries, err := record.ReadEntries(paths)
	if err != nil {
		return nil, err
	}
	var out []Object
	for _, e := range entries {
		var r struct {
			Request *struct {
				Operation string          `json:"operation"`
				Object    json.RawMessage `json:"object"`
			} `json:"request"`
		}
		if err := json.Unmarshal(e.Review, &r); err != nil || r.Request == nil {
			return nil, fmt.Errorf("%s: the recording holds no admission request", e.File)
		}
		if r.Request.Operation != "CREATE" || len(r.Request.Object) == 0 {
			continue
		}
		o, err := decode(r.Request.Object)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.File, err)
		}
		out = append(out, Object{Source: e.File, Object: o})
	}
	if len(out) == 0 {
		return nil, field.Clause("load.Inputs.Records", fmt.Sprint(paths), "holds no CREATE review: load sends only creates")
	}
	return out, nil
}

// decode reads an object as a case or a review carried it (its namespace
// is the load's, set later).
func decode(raw []byte) (*unstructured.Unstructured, error) {
	o := &unstructured.Unstructured{}
	if err := o.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("decode object: %w", err)
	}
	return o, nil
}
