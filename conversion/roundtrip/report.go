package roundtrip

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/hookback/hookback/internal/jsondiff"
)

// report sums the results in the order the objects were made, so that a
// seed gives the same report, and makes each loss's object minimal.
func (r *runner) report(ctx context.Context, objs []made, results []objectResult) Report {
	rep := Report{CRD: r.crd.Name, Seed: r.opts.Seed, Objects: len(objs), Strict: r.opts.Strict}
	for _, v := range r.versions {
		rep.Versions = append(rep.Versions, v.name)
	}
	losses := map[[3]string]int{}
	emptied := map[[3]string]int{}
	failures := map[[3]string]int{}
	for i, res := range results {
		m := objs[i]
		if res.denied {
			rep.Denied++
		}
		rep.RoundTrips += res.trips
		rep.Kept += res.kept
		for _, l := range res.losses {
			for _, f := range l.fields {
				rep.Losses = count(rep.Losses, losses, m, l.via, f)
			}
			for _, f := range l.emptied {
				rep.Emptied = count(rep.Emptied, emptied, m, l.via, f)
			}
		}
		for _, f := range res.failures {
			k := [3]string{f.From, f.To, f.Message}
			if j, ok := failures[k]; ok {
				rep.Failures[j].Count++
				continue
			}
			failures[k] = len(rep.Failures)
			rep.Failures = append(rep.Failures, f)
		}
	}
	byPairAndPath := func(a, b Loss) int {
		return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.Via, b.Via), cmp.Compare(a.Path, b.Path))
	}
	slices.SortStableFunc(rep.Losses, byPairAndPath)
	slices.SortStableFunc(rep.Emptied, byPairAndPath)
	rep.Emptied = topmost(rep.Emptied)
	slices.SortStableFunc(rep.Failures, func(a, b Failure) int {
		return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To), cmp.Compare(a.Message, b.Message))
	})
	for i := range rep.Losses {
		rep.Losses[i].Object = r.shrink(ctx, rep.Losses[i])
	}
	return rep
}

// count adds f, changed by a round trip of m through via, to ls: a new
// Loss, or one more count of the one at index[from, via, path].
func count(ls []Loss, index map[[3]string]int, m made, via string, f jsondiff.FieldChange) []Loss {
	k := [3]string{m.version, via, f.Path}
	if j, ok := index[k]; ok {
		ls[j].Count++
		return ls
	}
	index[k] = len(ls)
	return append(ls, Loss{From: m.version, Via: via, Path: f.Path, Before: f.Before, After: f.After, Count: 1, Object: m.obj})
}

// topmost folds each field that came back empty into the field above it
// that did, for the same version pair, so that a struct materialised at
// any depth is one finding: objects that lack a template and objects that
// lack only the template's spec are one Go struct written back. ls is
// sorted by pair and path, so a field comes before those below it.
func topmost(ls []Loss) []Loss {
	var out []Loss
	for _, l := range ls {
		j := slices.IndexFunc(out, func(o Loss) bool { return o.From == l.From && o.Via == l.Via && onPath(l.Path, o.Path) })
		if j < 0 {
			out = append(out, l)
			continue
		}
		out[j].Count += l.Count
	}
	return out
}

// shrink removes from l's object every field it can while the round trip
// still loses l.Path (and the validating webhook, when given, still
// admits it), shallowest first, never a field the schema requires nor one
// on the lost path, within MaxShrink round trips.
func (r *runner) shrink(ctx context.Context, l Loss) map[string]any {
	obj := deepCopy(l.Object)
	required := map[string]bool{}
	for _, v := range r.versions {
		if v.name == l.From {
			for _, f := range fields(v.schema) {
				required[auditPath(f.path)] = f.required
			}
		}
	}
	queue := candidates(obj, nil)
	for budget := r.opts.MaxShrink; len(queue) > 0 && budget > 0; {
		p := queue[0]
		queue = queue[1:]
		s := auditPath(p)
		if onPath(l.Path, s) || required[s] {
			queue = append(queue, candidates(obj, p)...)
			continue
		}
		try := deepCopy(obj)
		unset(try, p)
		budget--
		if r.reproduces(ctx, l, try) {
			obj = try
			continue
		}
		queue = append(queue, candidates(obj, p)...)
	}
	return obj
}

// reproduces says whether obj, admitted, still loses l.Path on l's trip.
func (r *runner) reproduces(ctx context.Context, l Loss, obj map[string]any) bool {
	if r.opts.Admit != nil {
		if ok, _, err := r.opts.Admit(ctx, l.From, obj); err != nil || !ok {
			return false
		}
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return false
	}
	c, fail := r.trip(ctx, made{version: l.From, obj: obj}, raw, l.Via)
	return fail == nil && slices.ContainsFunc(c.lost, func(f jsondiff.FieldChange) bool { return f.Path == l.Path })
}

// candidates are the keys of the object at path (the root's but
// apiVersion, kind and metadata, of which only labels and annotations).
func candidates(obj map[string]any, path []string) [][]string {
	var m map[string]any = obj
	for _, k := range path {
		next, ok := m[k].(map[string]any)
		if !ok {
			return nil
		}
		m = next
	}
	var out [][]string
	for _, k := range sortedKeys(m) {
		switch {
		case len(path) == 0 && (k == "apiVersion" || k == "kind"):
			continue
		case len(path) == 0 && k == "metadata":
			for _, mk := range []string{"labels", "annotations"} {
				if _, ok := m[k].(map[string]any)[mk]; ok {
					out = append(out, []string{"metadata", mk})
				}
			}
			continue
		}
		out = append(out, append(slices.Clone(path), k))
	}
	return out
}

// onPath says whether the field at p holds the lost field at lost.
func onPath(lost, p string) bool {
	return lost == p || strings.HasPrefix(lost, p+".") || strings.HasPrefix(lost, p+"[")
}

// auditPath writes a path as jsondiff.Fields does: spec.color,
// metadata.labels["example.com/x"].
func auditPath(path []string) string {
	s := ""
	for _, k := range path {
		s = jsondiff.FieldPath(s, k)
	}
	return s
}
