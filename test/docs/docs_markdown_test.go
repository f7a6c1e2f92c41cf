package docs

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
)

// splitMarkdown separates prose from code: inline code spans and shell or
// text blocks go to code, Go blocks to goCode (Go identifiers are looked up
// in both; make targets only in code).
func splitMarkdown(text string) (prose, code, goCode string) {
	var p, c, g strings.Builder
	fence, lang := false, ""
	for line := range strings.SplitSeq(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			fence, lang = !fence, strings.TrimPrefix(trimmed, "```")
		case fence && lang == "go":
			g.WriteString(line + "\n")
		case fence:
			c.WriteString(line + "\n")
		default:
			p.WriteString(line + "\n")
			for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
				c.WriteString(m[1] + "\n")
			}
		}
	}
	return p.String(), c.String(), g.String()
}

// paths are the repository paths in text: each starts at one of its top-level
// directories and is cut where the path ends.
func (idx *repoIndex) paths(text string) []string {
	var out []string
	for _, m := range idx.pathRE.FindAllStringSubmatch(text, -1) {
		p := strings.TrimRight(m[1], ".:")
		p, _, _ = strings.Cut(p, "#")
		// Placeholders and globs (testdata/webhook/<name>/, golden/NAME.yaml,
		// hookback-bench-*) name no one file.
		if strings.ContainsAny(p, "*<>{}$…") || strings.Contains(p, "...") || placeholder.MatchString(p) || !pathLike(p) {
			continue
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// sectionProblems checks each `NAME.md, "Heading"` in text: the file exists
// (from the repository's root, or from doc's directory) and has a heading
// that starts with the quoted words.
func sectionProblems(doc, text string) []string {
	var problems []string
	for _, m := range sectionRef.FindAllStringSubmatch(text, -1) {
		if placeholder.MatchString(m[1]) {
			continue
		}
		path := m[1]
		if _, err := os.Stat(path); err != nil && doc != "" {
			path = filepath.Join(filepath.Dir(doc), m[1])
		}
		want := strings.Join(strings.Fields(m[2]), " ")
		found := false
		for _, h := range headings(path) {
			found = found || strings.HasPrefix(h, want)
		}
		if !found {
			problems = append(problems, "names the section "+m[1]+", \""+want+"\", which is not a heading there")
		}
	}
	return problems
}

// headings are the Markdown headings of the file at path, without their
// marks; none when it cannot be read.
func headings(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var hs []string
	fence := false
	for line := range strings.SplitSeq(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "```"):
			fence = !fence
		case !fence && strings.HasPrefix(line, "#"):
			hs = append(hs, strings.TrimSpace(strings.TrimLeft(line, "#")))
		}
	}
	return hs
}

// slugs are the anchors GitHub gives the headings of the file at path:
// lower case, spaces as hyphens, punctuation dropped.
func slugs(path string) []string {
	var out []string
	for _, h := range headings(path) {
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		out = append(out, b.String())
	}
	return out
}

// pathLike tells a path from prose that starts with a package's name
// ("admission/v1 reviews", "record/replay"): a file with an extension, a
// directory written with its slash, anything deeper than one level, or
// anything in a directory of scripts, docs, tests or fixtures.
func pathLike(p string) bool {
	first, rest, _ := strings.Cut(p, "/")
	switch {
	case strings.Contains(filepath.Base(p), "."), strings.HasSuffix(p, "/"), strings.Contains(rest, "/"):
		return true
	}
	return slices.Contains([]string{"hack", "docs", "bench", "examples", "testdata", "e2e", ".github", ".ci"}, first)
}
