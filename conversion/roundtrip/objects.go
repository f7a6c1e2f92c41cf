package roundtrip

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// objects makes N objects per served version: variations of the seeds of
// that version (a seed of another version is first converted to it
// through the converter, as a read in that version would be), else
// objects made from the schema. The first objects of a version are its
// seeds as given.
func (r *runner) objects(ctx context.Context) ([]made, error) {
	seeds := r.seedsByVersion()
	if err := r.convertSeeds(ctx, seeds); err != nil {
		return nil, err
	}
	var out []made
	for _, v := range r.versions {
		fs := fields(v.schema)
		for i := range r.opts.N {
			var obj map[string]any
			switch s := seeds[v.name]; {
			case i < len(s):
				obj = deepCopy(s[i])
			case len(s) > 0:
				obj = r.gen.vary(s[i%len(s)], fs)
			default:
				var err error
				if obj, err = r.fresh(v); err != nil {
					return nil, err
				}
			}
			out = append(out, made{version: v.name, obj: r.identify(obj, v.name, i)})
		}
	}
	return out, nil
}

// seedsByVersion keeps the seeds of this CRD's kind and served versions.
func (r *runner) seedsByVersion() map[string][]map[string]any {
	out := map[string][]map[string]any{}
	for _, s := range r.opts.Seeds {
		group, ver, _ := strings.Cut(fmt.Sprint(s["apiVersion"]), "/")
		if group != r.crd.Spec.Group || s["kind"] != r.crd.Spec.Names.Kind {
			continue
		}
		for _, v := range r.versions {
			if v.name == ver {
				out[ver] = append(out[ver], deepCopy(s))
			}
		}
	}
	return out
}

// convertSeeds gives each version without seeds of its own the seeds of
// the first version that has some, converted; a seed the webhook refuses
// to convert is left out (and logged: the round trips will find it too).
func (r *runner) convertSeeds(ctx context.Context, seeds map[string][]map[string]any) error {
	var from string
	for _, v := range r.versions {
		if len(seeds[v.name]) > 0 {
			from = v.name
			break
		}
	}
	if from == "" {
		return nil
	}
	for _, v := range r.versions {
		if len(seeds[v.name]) > 0 {
			continue
		}
		for i, s := range seeds[from] {
			raw, err := json.Marshal(r.identify(deepCopy(s), from, i))
			if err != nil {
				return fmt.Errorf("encode seed %d: %w", i, err)
			}
			out, err := r.convert(ctx, raw, v.name)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				r.log.Info("a seed was not converted: it is not a seed of this version", "crd", r.crd.Name, "from", from, "to", v.name, "error", err)
				continue
			}
			var obj map[string]any
			if err := json.Unmarshal(out, &obj); err != nil {
				return fmt.Errorf("read seed %d converted to %s: %w", i, v.name, err)
			}
			seeds[v.name] = append(seeds[v.name], obj)
		}
	}
	return nil
}

// fresh is an object made from v's schema alone.
func (r *runner) fresh(v version) (map[string]any, error) {
	for range 16 {
		val, ok := r.gen.value(v.schema, 0)
		if obj, isObj := val.(map[string]any); ok && isObj {
			return obj, nil
		}
	}
	return nil, fmt.Errorf("%s %s: no object meets the schema's required fields (a pattern or bounds the generator cannot meet): give a seed object (a sample or a suite case)", r.crd.Name, v.name)
}

// identify sets what a stored object has: apiVersion, kind, a name of the
// fuzzer's (fuzz-VERSION-N), a namespace for a namespaced CRD, a uid; and
// drops what the apiserver sets and a conversion never changes.
func (r *runner) identify(obj map[string]any, version string, i int) map[string]any {
	obj["apiVersion"] = r.crd.Spec.Group + "/" + version
	obj["kind"] = r.crd.Spec.Names.Kind
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	for _, k := range []string{"resourceVersion", "managedFields", "creationTimestamp", "generation", "selfLink", "generateName"} {
		delete(meta, k)
	}
	meta["name"] = fmt.Sprintf("fuzz-%s-%d", version, i)
	meta["uid"] = fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
	if r.crd.Spec.Scope == "Namespaced" {
		if ns, _ := meta["namespace"].(string); ns == "" {
			meta["namespace"] = r.opts.Namespace
		}
	} else {
		delete(meta, "namespace")
	}
	obj["metadata"] = meta
	return obj
}
