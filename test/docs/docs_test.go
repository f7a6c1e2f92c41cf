package docs

// The README and docs/*.md may only name what this tree holds: these tests
// fail, naming each one, on a layout table that misses a directory or names
// one that is gone, and on a file path, make target, test or benchmark name,
// or Go identifier of a hookback package that does not exist. The history in
// test/bench/JOURNAL.md is left out on purpose: it quotes names as they were.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// checkedDocs are the documents whose references must resolve.
func checkedDocs(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"README.md"}, docs...)
}

// layoutDoc holds the layout table: the README stays short and links to it.
const layoutDoc = "docs/development.md"

// TestReadmeLayout checks the layout table ("| package | what it owns |") of
// layoutDoc against the top-level directories: each one is named, and each
// name exists.
func TestReadmeLayout(t *testing.T) {
	named := layoutNames(t, readFile(t, layoutDoc))
	if len(named) == 0 {
		t.Fatal(layoutDoc + " has no layout table: a table whose header is `| package | what it owns |`")
	}
	covered := map[string]bool{}
	for _, n := range named {
		if _, err := os.Stat(strings.TrimSuffix(n, "/")); err != nil {
			t.Errorf(layoutDoc+" layout table names %s, which does not exist: remove or rename the row", n)
		}
		covered[strings.SplitN(n, "/", 2)[0]] = true
	}
	for _, dir := range layoutDirs(t) {
		if !covered[dir] {
			t.Errorf(layoutDoc+" layout table does not name %s/: add a row saying what it owns", dir)
		}
	}
}

// layoutNames returns the backquoted names in the first column of the
// layout table.
func layoutNames(t *testing.T, text string) []string {
	t.Helper()
	var names []string
	in := false
	for line := range strings.SplitSeq(text, "\n") {
		cells := strings.Split(strings.TrimSpace(line), "|")
		switch {
		case len(cells) >= 3 && strings.TrimSpace(cells[1]) == "package" && strings.TrimSpace(cells[2]) == "what it owns":
			in = true
		case !in || strings.HasPrefix(line, "|---"):
		case len(cells) < 3:
			return names
		default:
			for _, m := range codeSpan.FindAllStringSubmatch(cells[1], -1) {
				names = append(names, m[1])
			}
		}
	}
	return names
}

// layoutDirs are the top-level directories the layout must name: every one
// but hidden ones and what .gitignore lists (build output).
func layoutDirs(t *testing.T) []string {
	t.Helper()
	ignored := gitignored()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && !ignored[e.Name()] {
			dirs = append(dirs, e.Name())
		}
	}
	return dirs
}

// TestDocReferences checks every file path, link, make target, test name and
// hookback identifier the docs mention.
func TestDocReferences(t *testing.T) {
	idx := newRepoIndex(t)
	for _, doc := range checkedDocs(t) {
		t.Run(doc, func(t *testing.T) {
			for _, problem := range idx.check(doc, readFile(t, doc)) {
				t.Errorf("%s: %s", doc, problem)
			}
		})
	}
}

var (
	codeSpan = regexp.MustCompile("`([^`\n]+)`")
	mdLink   = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// A make invocation in a shell line or code span: `make e2e`, `X=1 make unit`.
	// projectMakeTargets are a kubebuilder or Operator SDK project's own
	// (its scaffolded Makefile), which the operator docs tell you to run
	// there: not hookback's.
	projectMakeTargets = map[string]bool{"install": true, "uninstall": true, "manifests": true, "generate": true, "deploy": true, "build-installer": true}
	makeCall           = regexp.MustCompile(`(?:^|[\s;&|(])make\s+([a-z][\w-]*)`)
	testName           = regexp.MustCompile(`\b((?:Test|Benchmark|Fuzz)[A-Z]\w*)`)
	// pkg.Name or pkg.Type.Member, not part of a longer dotted or slashed name.
	goIdent = regexp.MustCompile(`(?:^|[^\w./])([a-z][a-z0-9]*)\.([A-Z]\w*)(?:\.([A-Z]\w*))?`)
	// A document and a section of it: docs/NAME.md, "Its heading".
	sectionRef = regexp.MustCompile(`([\w./-]+\.md)\)?,\s+"([^"]{1,120})"`)
	// A path segment in capitals stands for a name: NAME.yaml, NS.
	placeholder = regexp.MustCompile(`(?:^|/)[A-Z_]{2,}(?:\.|/|$)`)
)

// TestGoCommentPaths checks the repository paths named in Go comments
// ("run by test/e2e/cli_test.go").
func TestGoCommentPaths(t *testing.T) {
	idx := newRepoIndex(t)
	eachGoFile(t, true, parser.ParseComments, func(path string, _ *token.FileSet, f *ast.File) {
		for _, c := range f.Comments {
			for _, p := range idx.paths(c.Text()) {
				if _, err := os.Stat(p); err != nil {
					t.Errorf("%s: a comment names %s, which does not exist", path, p)
				}
			}
			for _, problem := range sectionProblems("", c.Text()) {
				t.Errorf("%s: a comment %s", path, problem)
			}
		}
	})
}

// TestPackageComments checks that every package says what it is in a
// comment that starts "Package <name>", naming the package it sits on.
func TestPackageComments(t *testing.T) {
	docs := map[string]string{} // directory -> package comment
	pkgs := map[string]string{} // directory -> package name
	eachGoFile(t, false, parser.ParseComments|parser.PackageClauseOnly, func(path string, _ *token.FileSet, f *ast.File) {
		dir := filepath.Dir(path)
		pkgs[dir] = f.Name.Name
		if f.Doc != nil {
			docs[dir] += f.Doc.Text()
		}
	})
	for dir, name := range pkgs {
		want := "Package " + name + " "
		if name == "main" {
			want = "Command "
		}
		switch doc := docs[dir]; {
		case doc == "":
			t.Errorf("%s: package %s has no package comment: say what it is for, starting %q", dir, name, want)
		case !strings.HasPrefix(doc, want) && !strings.Contains(doc, "\n"+want):
			t.Errorf("%s: the package comment does not start %q: %.60q", dir, want, doc)
		}
	}
}

// check returns one line per reference in text (the contents of doc) that
// does not resolve.
func (idx *repoIndex) check(doc, text string) []string {
	var problems []string
	prose, code, goCode := splitMarkdown(text)
	all := prose + "\n" + code
	for _, p := range idx.paths(all) {
		if _, err := os.Stat(p); err != nil {
			problems = append(problems, "names "+p+", which does not exist")
		}
	}
	for _, m := range mdLink.FindAllStringSubmatch(all, -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		target, anchor, _ := strings.Cut(target, "#")
		path := filepath.Join(filepath.Dir(doc), target)
		if target == "" {
			path = doc
		}
		if _, err := os.Stat(path); err != nil {
			problems = append(problems, "links to "+m[1]+", which does not exist")
		} else if anchor != "" && strings.HasSuffix(path, ".md") && !slices.Contains(slugs(path), anchor) {
			problems = append(problems, "links to "+m[1]+", but "+path+" has no such heading")
		}
	}
	problems = append(problems, sectionProblems(doc, all)...)
	for _, m := range makeCall.FindAllStringSubmatch(code, -1) {
		if !idx.makeTargets[m[1]] && !projectMakeTargets[m[1]] {
			problems = append(problems, "names `make "+m[1]+"`, which is not a Makefile target")
		}
	}
	for _, m := range testName.FindAllStringSubmatch(all, -1) {
		if !idx.tests[m[1]] {
			problems = append(problems, "names "+m[1]+", which no _test.go file defines")
		}
	}
	for _, m := range goIdent.FindAllStringSubmatch(code+"\n"+goCode, -1) {
		if problem := idx.ident(m[1], m[2], m[3]); problem != "" {
			problems = append(problems, problem)
		}
	}
	slices.Sort(problems)
	return slices.Compact(problems)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// gitignored are the names .gitignore lists: build output (bin/, dist/),
// which neither the layout nor the docs' paths answer for.
func gitignored() map[string]bool {
	ignored := map[string]bool{}
	if b, err := os.ReadFile(".gitignore"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			ignored[strings.Trim(strings.TrimSpace(line), "/")] = true
		}
	}
	return ignored
}
