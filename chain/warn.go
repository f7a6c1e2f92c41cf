package chain

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/hookback/hookback/internal/jsondiff"
)

// warnings are what works against your webhook in the chain:
//   - overwritten: a field your patch set (add, replace) in a round is
//     altered or gone in the last observer's view of that round (a
//     reinvocation of your webhook may set it again: the round says);
//   - not-reinvoked: your reinvocationPolicy is Never, and a change after
//     your webhook touched a field it reads. What a webhook reads is not
//     observable: the view takes the fields it patched, up to their
//     top-level field under metadata or spec (a patch of
//     /spec/containers/0/env reads /spec/containers); a webhook that
//     patched nothing is taken to read the whole object;
//   - saw-changed: the object your webhook saw already differed from the
//     submitted one in a field it patches.
func (e *explainer) warnings(steps []Step) ([]Warning, error) {
	var out []Warning
	c := e.c
	lastYours := c.Yours[len(c.Yours)-1]
	paths := patchPaths(lastYours.Patch)
	var later []Attributed
	for _, st := range steps {
		if st.Name == StepAfter || st.Name == StepRound {
			later = append(later, st.Changes...)
		}
	}
	// Overwritten: compare what your patch wrote in each round with the
	// last observer's view of that round.
	for round, y := range c.Yours {
		view := e.viewAfter(round)
		if view == nil || len(y.Patch) == 0 {
			continue
		}
		mineAfter, err := e.patched(y.Object, y.Patch)
		if err != nil {
			return nil, fmt.Errorf("chain: %s: your patch: %w", c.Identity, err)
		}
		w, err := overwritten(e.decode, y.Patch, mineAfter, view, later, round)
		if err != nil {
			return nil, err
		}
		out = append(out, w...)
	}
	if e.yourHook.Reinvocation == "Never" {
		reads := readPaths(paths)
		for _, ch := range later {
			if ch.By != nil && len(ch.By) == 1 && ch.By[0].Kind == KindYours {
				continue
			}
			if touches(reads, ch.Path) {
				out = append(out, Warning{Kind: WarnNotReinvoked, Path: ch.Path, Message: fmt.Sprintf(
					"your webhook's reinvocationPolicy is Never, and %s changed %s after it, a field it reads: it will not be called again to see it",
					ch.Who(), ch.Path)})
			}
		}
	}
	for _, st := range steps {
		if st.Name != StepBefore {
			continue
		}
		for _, ch := range st.Changes {
			if touches(patchPaths(c.Yours[0].Patch), ch.Path) {
				out = append(out, Warning{Kind: WarnSawChanged, Path: ch.Path, Message: fmt.Sprintf(
					"your webhook saw %s already changed by %s: not what was submitted, in a field it patches", ch.Path, ch.Who())})
			}
		}
	}
	return out, nil
}

// viewAfter is the last observer's view of round, else (the last round)
// the validators'.
func (e *explainer) viewAfter(round int) []byte {
	if round < len(e.c.After) {
		return e.c.After[round].Object
	}
	if e.c.Final != nil && round == len(e.c.Yours)-1 {
		return e.c.Final.Object
	}
	return nil
}

// overwritten compares each field the patch set (in mine, the object just
// after it) with last, naming the later changes that touched it.
func overwritten(dec func([]byte) (any, error), patch, mine, last []byte, later []Attributed, round int) ([]Warning, error) {
	var ops []patchOp
	if err := json.Unmarshal(patch, &ops); err != nil {
		return nil, fmt.Errorf("chain: your patch: %w", err)
	}
	a, err := dec(mine)
	if err != nil {
		return nil, err
	}
	b, err := dec(last)
	if err != nil {
		return nil, err
	}
	var out []Warning
	for _, op := range ops {
		if op.Op != "add" && op.Op != "replace" {
			continue
		}
		path := op.Path
		if strings.HasSuffix(path, "/-") {
			// Appended: it sits last in the array just after the patch.
			arr, _ := lookup(a, strings.TrimSuffix(path, "/-")).([]any)
			path = strings.TrimSuffix(path, "-") + strconv.Itoa(len(arr)-1)
		}
		want := lookup(a, path)
		got := lookup(b, path)
		if reflect.DeepEqual(want, got) || inParentArray(b, path, want) {
			continue
		}
		what := "altered"
		if _, gone := got.(jsondiff.Absent); gone {
			what = "removed"
		}
		who := "a later change"
		for _, ch := range later {
			if jsondiff.Related(ch.Path, path) {
				who = ch.Who()
				break
			}
		}
		out = append(out, Warning{Kind: WarnOverwritten, Path: path, Round: round, Message: fmt.Sprintf(
			"%s %s %s, which your patch set to %s in round %d", who, what, path, jsondiff.Raw(want), round)})
	}
	return out, nil
}

// inParentArray: an element your patch put in an array is still in it,
// moved by a later insertion before it.
func inParentArray(doc any, path string, want any) bool {
	i := strings.LastIndex(path, "/")
	if i < 0 {
		return false
	}
	if _, err := strconv.Atoi(path[i+1:]); err != nil {
		return false
	}
	arr, ok := lookup(doc, path[:i]).([]any)
	if !ok {
		return false
	}
	for _, x := range arr {
		if reflect.DeepEqual(x, want) {
			return true
		}
	}
	return false
}

// lookup is the value at a JSON pointer, jsondiff.Absent{} when there is none.
func lookup(doc any, pointer string) any {
	if pointer == "" {
		return doc
	}
	cur := doc
	for _, tok := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := cur.(type) {
		case map[string]any:
			v, ok := x[tok]
			if !ok {
				return jsondiff.Absent{}
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return jsondiff.Absent{}
			}
			cur = x[i]
		default:
			return jsondiff.Absent{}
		}
	}
	return cur
}

// readPaths are the fields a webhook is taken to read (see warnings).
func readPaths(patched []string) []string {
	if len(patched) == 0 {
		return []string{""}
	}
	var out []string
	for _, p := range patched {
		parts := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 3)
		if len(parts) > 2 {
			parts = parts[:2]
		}
		out = append(out, "/"+strings.Join(parts, "/"))
	}
	return out
}

func touches(paths []string, p string) bool {
	for _, q := range paths {
		if jsondiff.Related(q, p) {
			return true
		}
	}
	return false
}
