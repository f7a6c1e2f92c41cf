package suite

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"sigs.k8s.io/yaml"
)

// judge compares what came with what the case expects (or with the
// recorded answer, for asRecorded), and says PASS or FAIL, a one-line
// detail, and a diff for a failure.
func judge(l *Loaded, got Outcome, recorded *Outcome) (status, detail, diff string) {
	return judgeWith(l, l.Expect, got, recorded)
}

// judgeWith is judge with the expectation of one webhook.
func judgeWith(l *Loaded, e Expect, got Outcome, recorded *Outcome) (status, detail, diff string) {
	var diffs []string
	if recorded != nil && e.Result == AsRecorded {
		diffs = sameOutcome(l, *recorded, got)
	} else {
		diffs = meets(l, e, got)
	}
	if len(diffs) == 0 {
		return Pass, summary(got), ""
	}
	return Fail, summary(got), strings.Join(diffs, "\n")
}

// summary is the one-line detail of an outcome.
func summary(o Outcome) string {
	s := o.Result
	if o.Code != 0 && o.Result == Denied {
		s += fmt.Sprintf(" (%d)", o.Code)
	}
	if o.Message != "" {
		s += ": " + o.Message
	}
	if o.Result == Patched {
		var ops []json.RawMessage
		_ = json.Unmarshal(o.Patch, &ops)
		s += fmt.Sprintf(" (%d operations)", len(ops))
	}
	if len(o.Warnings) > 0 {
		s += fmt.Sprintf("; %d warnings", len(o.Warnings))
	}
	return strings.Join(strings.Fields(s), " ")
}

// meets lists how got falls short of the case's expectations.
func meets(l *Loaded, e Expect, got Outcome) []string {
	var out []string
	if e.Result != got.Result {
		out = append(out, fmt.Sprintf("result: want %s, got %s", e.Result, got.Result))
		if got.Message != "" {
			out = append(out, fmt.Sprintf("message: %q", got.Message))
		}
		if got.Result == Patched && e.Result != Patched {
			out = append(out, objectDiff(l, nil, got.Object))
		}
		return out
	}
	if e.Code != 0 && e.Code != got.Code {
		out = append(out, fmt.Sprintf("code: want %d, got %d", e.Code, got.Code))
	}
	if e.Message != "" && !strings.Contains(got.Message, e.Message) {
		out = append(out, fmt.Sprintf("message: want it to contain %q, got %q", e.Message, got.Message))
	}
	if e.MessageRegexp != "" && !regexp.MustCompile(e.MessageRegexp).MatchString(got.Message) {
		out = append(out, fmt.Sprintf("message: want it to match %q, got %q", e.MessageRegexp, got.Message))
	}
	for _, w := range e.Warnings {
		if !containedIn(w, got.Warnings) {
			out = append(out, fmt.Sprintf("warnings: want one containing %q, got %q", w, got.Warnings))
		}
	}
	if len(e.Patch) > 0 && !jsonpatch.Equal(e.Patch, got.Patch) {
		out = append(out, "patch operations differ:\n"+textDiff(yamlOf(e.Patch), yamlOf(got.Patch), "want", "got"))
	}
	if has(e.Object, e.ObjectFile) {
		want, err := objectOf(l, e.Object, e.ObjectFile)
		if err != nil {
			return append(out, "expect.object: "+err.Error())
		}
		if d := objectDiff(l, want, got.Object); d != "" {
			out = append(out, d)
		}
	}
	return out
}

// sameOutcome lists how got differs from the recorded answer: result,
// code, message, the patched (or converted) object, warnings.
func sameOutcome(l *Loaded, rec, got Outcome) []string {
	var out []string
	if rec.Result != got.Result {
		out = append(out, fmt.Sprintf("result: recorded %s, got %s", rec.Result, got.Result))
	}
	if rec.Message != got.Message {
		out = append(out, fmt.Sprintf("message: recorded %q, got %q", rec.Message, got.Message))
	}
	if rec.Result == Denied && got.Result == Denied && rec.Code != got.Code {
		out = append(out, fmt.Sprintf("code: recorded %d, got %d", rec.Code, got.Code))
	}
	if !reflect.DeepEqual(rec.Warnings, got.Warnings) && len(rec.Warnings)+len(got.Warnings) > 0 {
		out = append(out, fmt.Sprintf("warnings: recorded %q, got %q", rec.Warnings, got.Warnings))
	}
	if len(rec.Object) > 0 || len(got.Object) > 0 {
		if d := objectDiff(l, rec.Object, got.Object); d != "" {
			out = append(out, d)
		}
	}
	return out
}

func containedIn(s string, list []string) bool {
	for _, w := range list {
		if strings.Contains(w, s) {
			return true
		}
	}
	return false
}

// objectDiff is "" when want and got are the same object once the
// ignored paths are taken out, else a unified diff of the two as YAML.
func objectDiff(l *Loaded, want, got []byte) string {
	w, g := comparable(l, want), comparable(l, got)
	if reflect.DeepEqual(w, g) {
		return ""
	}
	return "object (- want, + got):\n" + textDiff(yamlValue(w), yamlValue(g), "want", "got")
}

// comparable decodes an object with the ignored paths removed.
func comparable(l *Loaded, raw []byte) any {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	paths := append(append([]string{}, DefaultIgnore...), l.ignore...)
	if m, ok := v.(map[string]any); ok {
		if md, ok := m["metadata"].(map[string]any); ok && md["generateName"] != nil {
			paths = append(paths, "/metadata/name")
		}
	}
	for _, p := range paths {
		v = without(v, pointer(p))
	}
	return v
}

// pointer splits a JSON pointer into its unescaped tokens.
func pointer(p string) []string {
	toks := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, t := range toks {
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks
}

// without removes what path names from v; * matches any key or index.
func without(v any, path []string) any {
	if len(path) == 0 {
		return v
	}
	head, rest := path[0], path[1:]
	switch t := v.(type) {
	case map[string]any:
		for k := range t {
			if head != "*" && k != head {
				continue
			}
			if len(rest) == 0 {
				delete(t, k)
			} else {
				t[k] = without(t[k], rest)
			}
		}
	case []any:
		for i := range t {
			if head == "*" || head == fmt.Sprint(i) {
				if len(rest) > 0 {
					t[i] = without(t[i], rest)
				}
			}
		}
	}
	return v
}

func yamlValue(v any) string {
	if v == nil {
		return ""
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func yamlOf(raw []byte) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	return yamlValue(v)
}

// textDiff is a unified diff with three lines of context.
func textDiff(a, b, from, to string) string {
	d, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(strings.TrimRight(a, "\n")), B: difflib.SplitLines(strings.TrimRight(b, "\n")), FromFile: from, ToFile: to, Context: 3,
	})
	if err != nil {
		return err.Error()
	}
	return strings.TrimRight(d, "\n")
}
