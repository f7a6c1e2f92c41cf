package lint

import (
	"bufio"
	"bytes"
	"os"
	"strings"
)

// maxSourceBytes bounds what lineFinder reads of one file: a line number
// is a convenience, not worth reading a huge file twice.
const maxSourceBytes = 8 << 20

// lineFinder finds the line where an object (or one of its webhooks) is
// written in a file, for the reports' locations: best effort, 0 when not
// known (stdin, a rendered kustomization, the cluster).
type lineFinder struct {
	files map[string][]string
}

func newLineFinder() *lineFinder { return &lineFinder{files: map[string][]string{}} }

func (l *lineFinder) lines(path string) []string {
	if ls, ok := l.files[path]; ok {
		return ls
	}
	var ls []string
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() && st.Size() <= maxSourceBytes {
		if b, err := os.ReadFile(path); err == nil {
			sc := bufio.NewScanner(bytes.NewReader(b))
			sc.Buffer(nil, maxSourceBytes)
			for sc.Scan() {
				ls = append(ls, sc.Text())
			}
		}
	}
	l.files[path] = ls
	return ls
}

// line is the 1-based line of the webhook named hook in o's document
// (the document's first line when hook is "" or not found), counting
// documents as the YAML reader splits them: at lines that are "---", a
// document of blank lines only not counted.
func (l *lineFinder) line(o *Object, hook string) int {
	ls := l.lines(o.Doc.Source)
	doc, start, content := 0, 0, false
	for i := 0; i <= len(ls); i++ {
		end := i == len(ls) || isSeparator(ls[i])
		if !end {
			if !content && strings.TrimSpace(ls[i]) != "" {
				content, start = true, i
			}
			continue
		}
		if content {
			if doc++; doc == o.Doc.Index {
				return within(ls[start:i], start, hook)
			}
		}
		content = false
	}
	return 0
}

func isSeparator(s string) bool {
	return strings.HasPrefix(s, "---") && strings.TrimSpace(s[3:]) == ""
}

// within finds "name: hook" in a document's lines (YAML, or JSON's
// "name": "hook"), else the document's first line.
func within(doc []string, start int, hook string) int {
	if hook != "" {
		for i, s := range doc {
			t := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "- "))
			t = strings.NewReplacer(`"`, "", "'", "").Replace(t)
			if t == "name: "+hook || t == "name: "+hook+"," {
				return start + i + 1
			}
		}
	}
	return start + 1
}
