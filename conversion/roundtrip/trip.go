package roundtrip

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hookback/hookback/conversion"
	"github.com/hookback/hookback/internal/jsondiff"
)

// object asks the admitter about one object, then round-trips it through
// every other served version.
func (r *runner) object(ctx context.Context, m made) (objectResult, error) {
	var res objectResult
	if r.opts.Admit != nil {
		ok, msg, err := r.opts.Admit(ctx, m.version, m.obj)
		if err != nil {
			return res, fmt.Errorf("ask the validating webhook about %s %s: %w", m.version, name(m.obj), err)
		}
		if !ok {
			r.log.Debug("denied by the validating webhook: not round-tripped", "crd", r.crd.Name, "version", m.version, "name", name(m.obj), "message", msg)
			res.denied = true
			return res, nil
		}
	}
	raw, err := json.Marshal(m.obj)
	if err != nil {
		return res, fmt.Errorf("encode %s: %w", name(m.obj), err)
	}
	for _, v := range r.versions {
		if v.name == m.version {
			continue
		}
		res.trips++
		c, fail := r.trip(ctx, m, raw, v.name)
		if fail != nil {
			res.failures = append(res.failures, *fail)
			continue
		}
		if len(c.lost) == 0 {
			res.kept++
		}
		if len(c.lost)+len(c.emptied) > 0 {
			res.losses = append(res.losses, tripLoss{via: v.name, fields: c.lost, emptied: c.emptied})
		}
	}
	return res, nil
}

// changes are what a round trip changed: the set values lost or changed,
// and the absent fields that came back as empty structures.
type changes struct {
	lost, emptied []jsondiff.FieldChange
}

// trip converts m to via and back and says what changed, or which
// conversion failed. Unless strict, both objects are compared as the
// apiserver stores them, and the absent fields that came back empty are
// told apart from the losses; strict compares the answer as it came, and
// every difference is a loss.
func (r *runner) trip(ctx context.Context, m made, raw []byte, via string) (changes, *Failure) {
	there, err := r.convert(ctx, raw, via)
	if err != nil {
		return changes{}, failure(m.version, via, m.obj, err)
	}
	back, err := r.convert(ctx, there, m.version)
	if err != nil {
		return changes{}, failure(via, m.version, m.obj, err)
	}
	var after map[string]any
	if err := json.Unmarshal(back, &after); err != nil {
		return changes{}, failure(via, m.version, m.obj, fmt.Errorf("read the converted object: %w", err))
	}
	before := deepCopy(m.obj)
	var c changes
	if s := r.stored[m.version]; s != nil {
		asStored(before, s)
		asStored(after, s)
		c.emptied = splitEmptied(before, after)
	}
	c.lost = meaningful(jsondiff.Fields(before, after))
	return c, nil
}

// meaningful drops the changes between a missing field and a zero value
// ("", 0, false, {} or []): a converter in Go drops zero values with
// omitempty and writes "spec": {} for a struct field whatever omitempty
// says, and Kubernetes clients read a missing field as its zero value.
func meaningful(cs []jsondiff.FieldChange) []jsondiff.FieldChange {
	zeroJSON := func(s string) bool { return s == "{}" || s == "[]" || s == `""` || s == "0" || s == "false" }
	out := cs[:0]
	for _, c := range cs {
		if (c.Before == jsondiff.Missing && zeroJSON(c.After)) || (c.After == jsondiff.Missing && zeroJSON(c.Before)) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// convert sends one object to version of the CRD's group.
func (r *runner) convert(ctx context.Context, raw []byte, version string) ([]byte, error) {
	out, err := conversion.ConvertObjects(ctx, r.opts.Converter, r.opts.ReviewVersion, r.crd.Spec.Group+"/"+version, []json.RawMessage{raw})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

func failure(from, to string, obj map[string]any, err error) *Failure {
	var refused *conversion.RefusedError
	return &Failure{From: from, To: to, Refused: errors.As(err, &refused), Message: err.Error(), Count: 1, Object: obj}
}

func name(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	n, _ := meta["name"].(string)
	return n
}
