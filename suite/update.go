package suite

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"
)

// ExpectOf is the expectation an outcome meets exactly: what --update and
// `test init` write.
func ExpectOf(o Outcome) Expect {
	e := Expect{Result: o.Result, Warnings: o.Warnings}
	switch o.Result {
	case Denied:
		e.Code, e.Message = o.Code, o.Message
	case Error, Failed:
		e.Message = o.Message
	case Patched, Converted:
		e.Object = o.Object
	}
	return e
}

// Update rewrites, in their files, the expectations of the cases that
// failed to what came now, and prints what changed to w. Passing cases,
// and everything else in the files, are left byte for byte; an expected
// object kept in a file (expect.objectFile) is rewritten there. A case
// whose webhooks answered differently (and that has no expectWebhooks
// for them), or that could not run, is not rewritten and is named.
func Update(rows []Row, w io.Writer) (updated int, err error) {
	var order []*Loaded
	byCase := map[*Loaded][]Row{}
	for _, r := range rows {
		if r.loaded == nil {
			// Not a case of the suite: the conversion fuzzer's rows.
			continue
		}
		if _, ok := byCase[r.loaded]; !ok {
			order = append(order, r.loaded)
		}
		byCase[r.loaded] = append(byCase[r.loaded], r)
	}
	perFile := map[*File][]edit{}
	var files []*File
	written := objectFiles{}
	for _, l := range order {
		rs := byCase[l]
		// A row failed only by a check beyond its expectation (a second
		// patch, requireOperations) has nothing to rewrite.
		if !slices.ContainsFunc(rs, func(r Row) bool { return r.Status != Pass && !r.beyond }) {
			continue
		}
		edits, err := caseEdits(l, rs, written, w)
		if err != nil {
			fmt.Fprintf(w, "not updated %s:%d %s: %v\n", l.File.Path, l.Line, l.Name, err)
			continue
		}
		updated++
		if len(edits) == 0 {
			continue
		}
		if _, seen := perFile[l.File]; !seen {
			files = append(files, l.File)
		}
		perFile[l.File] = append(perFile[l.File], edits...)
	}
	for _, f := range files {
		src := f.src
		es := perFile[f]
		// Bottom up, so that earlier line numbers stay right.
		slices.SortFunc(es, func(a, b edit) int { return b.key.Line - a.key.Line })
		for _, e := range es {
			if src, err = splice(src, e); err != nil {
				return updated, fmt.Errorf("update %s: %w", f.Path, err)
			}
		}
		if err := writeKeepingMode(f.Path, src); err != nil {
			return updated, err
		}
	}
	return updated, nil
}

// commonExpect is the expectation every row of a case meets now; false
// when the webhooks answered differently or a row could not run.
func commonExpect(rs []Row) (Expect, bool) {
	var first *Outcome
	for _, r := range rs {
		if r.Got == nil || r.Status == Erred {
			return Expect{}, false
		}
		if first == nil {
			first = r.Got
			continue
		}
		a, _ := json.Marshal(ExpectOf(*first))
		b, _ := json.Marshal(ExpectOf(*r.Got))
		if string(a) != string(b) {
			return Expect{}, false
		}
	}
	return ExpectOf(*first), first != nil
}

// splice replaces a block of a case (its key's line up to the case's
// next key, or the case's end) with the edit's value.
func splice(src []byte, e edit) ([]byte, error) {
	lines := strings.SplitAfter(string(src), "\n")
	start := e.key.Line - 1
	end := e.l.blockEnd(e.key)
	if end <= 0 || end-1 > len(lines) {
		end = len(lines) + 1
	}
	// Keep trailing blank and comment lines that separate it from what
	// follows.
	for end-2 > start && isBlankOrComment(lines[end-2]) {
		end--
	}
	head := lines[start][:e.key.Column-1]
	pad := strings.Repeat(" ", len(head))
	b, err := sigsyaml.Marshal(map[string]any{e.key.Value: e.value})
	if err != nil {
		return nil, err
	}
	var block strings.Builder
	for i, line := range strings.SplitAfter(strings.TrimRight(string(b), "\n")+"\n", "\n") {
		if line == "" {
			continue
		}
		if i == 0 {
			block.WriteString(head + line)
		} else {
			block.WriteString(pad + line)
		}
	}
	out := strings.Join(lines[:start], "") + block.String() + strings.Join(lines[end-1:], "")
	return []byte(out), nil
}

func isBlankOrComment(line string) bool {
	t := strings.TrimSpace(line)
	return t == "" || strings.HasPrefix(t, "#")
}

// blockEnd is the line after the block of a case's key: the case's next
// key, else the next case, else 0 (the end of the file).
func (l *Loaded) blockEnd(key *yaml.Node) int {
	after := 0
	if l.caseNode != nil {
		for i := 0; i+1 < len(l.caseNode.Content); i += 2 {
			k := l.caseNode.Content[i]
			if k.Line > key.Line && (after == 0 || k.Line < after) {
				after = k.Line
			}
		}
	}
	if after == 0 {
		after = l.next
	}
	return after
}

func writeKeepingMode(path string, b []byte) error {
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp := path + ".hookback-update"
	if err := os.WriteFile(tmp, b, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
