package suite

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

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
// and everything else in the files, are left byte for byte. A case whose
// webhooks answered differently, or that could not run, is not rewritten
// and is named.
func Update(rows []Row, w io.Writer) (updated int, err error) {
	type change struct {
		l      *Loaded
		expect Expect
		diff   string
	}
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
	perFile := map[*File][]change{}
	var files []*File
	for _, l := range order {
		rs := byCase[l]
		if !slices.ContainsFunc(rs, func(r Row) bool { return r.Status != Pass }) {
			continue
		}
		if len(l.ExpectWebhooks) > 0 {
			fmt.Fprintf(w, "not updated %s:%d %s: it has expectWebhooks, which --update leaves to you: %s\n", l.File.Path, l.Line, l.Name, rs[0].Detail)
			continue
		}
		e, ok := commonExpect(rs)
		if !ok {
			fmt.Fprintf(w, "not updated %s:%d %s: %s\n", l.File.Path, l.Line, l.Name, rs[0].Detail)
			continue
		}
		if _, seen := perFile[l.File]; !seen {
			files = append(files, l.File)
		}
		var diffs []string
		for _, r := range rs {
			if r.Diff != "" {
				diffs = append(diffs, r.Diff)
			}
		}
		perFile[l.File] = append(perFile[l.File], change{l, e, strings.Join(diffs, "\n")})
	}
	written := objectFiles{}
	for _, f := range files {
		src, edited := f.src, false
		cs := perFile[f]
		// Bottom up, so that earlier line numbers stay right.
		slices.SortFunc(cs, func(a, b change) int { return b.l.expectK.Line - a.l.expectK.Line })
		for _, c := range cs {
			e, edit, where := c.expect, true, fmt.Sprintf("%s:%d", f.Path, c.l.Line)
			if c.l.Expect.ObjectFile != "" && len(e.Object) > 0 {
				var path string
				if e, edit, path, err = written.intoObjectFile(c.l, e); err != nil {
					fmt.Fprintf(w, "not updated %s %s: %v\n", where, c.l.Name, err)
					continue
				}
				where = path + " (expect.objectFile of " + where + ")"
			}
			if edit {
				if src, err = splice(src, c.l, e); err != nil {
					return updated, fmt.Errorf("update %s: %w", f.Path, err)
				}
				edited = true
			}
			fmt.Fprintf(w, "updated %s %s: expect %s, was %s\n%s\n", where, c.l.Name, e.Result, c.l.Expect.Result, indent(c.diff))
			updated++
		}
		if !edited {
			continue
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

// splice replaces the case's expect block (its key's line up to the next
// key of the case, or the case's end) with e.
func splice(src []byte, l *Loaded, e Expect) ([]byte, error) {
	lines := strings.SplitAfter(string(src), "\n")
	start := l.expectK.Line - 1
	end := l.expectEnd()
	if end <= 0 || end-1 > len(lines) {
		end = len(lines) + 1
	}
	// Keep trailing blank and comment lines that separate it from what
	// follows.
	for end-2 > start && isBlankOrComment(lines[end-2]) {
		end--
	}
	head := lines[start][:l.expectK.Column-1]
	pad := strings.Repeat(" ", len(head))
	b, err := sigsyaml.Marshal(map[string]Expect{"expect": e})
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

// expectEnd is the line after the expect block: the case's next key, else
// the next case, else 0 (the end of the file).
func (l *Loaded) expectEnd() int {
	after := 0
	if l.caseNode != nil {
		for i := 0; i+1 < len(l.caseNode.Content); i += 2 {
			k := l.caseNode.Content[i]
			if k.Line > l.expectK.Line && (after == 0 || k.Line < after) {
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
