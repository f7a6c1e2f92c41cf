package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repoIndex is what the docs may refer to: the tree's top-level entries,
// the Makefile's targets, every test, benchmark and fuzz function, and the
// declarations of hookback's own packages.
type repoIndex struct {
	pathRE      *regexp.Regexp
	makeTargets map[string]bool
	tests       map[string]bool
	// packages maps a package name to its declarations; members maps
	// "pkg.Type" to its methods and fields.
	packages map[string]map[string]bool
	members  map[string]map[string]bool
}

var makeTarget = regexp.MustCompile(`(?m)^([A-Za-z][\w-]*)\s*:([^=]|$)`)

// skipDir says which directories hold nothing the docs refer to as code:
// caches, VCS data and fixtures.
func skipDir(path string) bool {
	base := filepath.Base(path)
	return path != "." && (strings.HasPrefix(base, ".") || base == "testdata" || base == "bin")
}

func newRepoIndex(t *testing.T) *repoIndex {
	t.Helper()
	idx := &repoIndex{makeTargets: map[string]bool{}, tests: map[string]bool{},
		packages: map[string]map[string]bool{}, members: map[string]map[string]bool{}}
	for _, m := range makeTarget.FindAllStringSubmatch(readFile(t, "Makefile"), -1) {
		idx.makeTargets[m[1]] = true
	}
	idx.pathRE = topLevelPathRE(t)
	eachGoFile(t, true, 0, func(path string, _ *token.FileSet, f *ast.File) {
		if !strings.HasSuffix(path, "_test.go") {
			idx.addDecls(f)
			return
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && testName.MatchString(fn.Name.Name) {
				idx.tests[fn.Name.Name] = true
			}
		}
	})
	return idx
}

// eachGoFile parses every Go file of the repository (hidden directories and
// fixtures left out, test files only when tests is set) and calls fn on it.
func eachGoFile(t *testing.T, tests bool, mode parser.Mode, fn func(path string, fset *token.FileSet, f *ast.File)) {
	t.Helper()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && skipDir(path):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".go") || !tests && strings.HasSuffix(path, "_test.go"):
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, mode|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		fn(path, fset, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// topLevelPathRE matches a path that begins with one of the repository's
// top-level directories (hidden ones included, what .gitignore lists
// excepted: .cache, dist and bin are build output), after a
// space, quote, bracket or the start of a line: not the tail of a URL or a
// Go import path.
func topLevelPathRE(t *testing.T) *regexp.Regexp {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	ignored := gitignored()
	var dirs []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != ".git" && !ignored[e.Name()] {
			dirs = append(dirs, regexp.QuoteMeta(e.Name()))
		}
	}
	return regexp.MustCompile("(?m)(?:^|[\\s(\\[`\"'=])(?:\\./)?((?:" + strings.Join(dirs, "|") + ")/[^\\s`)\"',;|\\]]*)")
}

// addDecls records the top-level declarations of one non-test Go file of a
// hookback package (not a command: package main is nobody's pkg.Name).
func (idx *repoIndex) addDecls(f *ast.File) {
	pkg := f.Name.Name
	if pkg == "main" {
		return
	}
	if idx.packages[pkg] == nil {
		idx.packages[pkg] = map[string]bool{}
	}
	add := func(typ, name string) {
		key := pkg + "." + typ
		if idx.members[key] == nil {
			idx.members[key] = map[string]bool{}
		}
		idx.members[key][name] = true
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				idx.packages[pkg][d.Name.Name] = true
			} else {
				add(receiverType(d.Recv.List[0].Type), d.Name.Name)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					idx.packages[pkg][s.Name.Name] = true
					for _, m := range typeMembers(s.Type) {
						add(s.Name.Name, m)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						idx.packages[pkg][n.Name] = true
					}
				}
			}
		}
	}
}

// receiverType is T for a receiver T, *T, T[K] or *T[K].
func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// typeMembers are the field names of a struct type (embedded ones by their
// type's name) and the methods of an interface type.
func typeMembers(e ast.Expr) []string {
	var list *ast.FieldList
	switch x := e.(type) {
	case *ast.StructType:
		list = x.Fields
	case *ast.InterfaceType:
		list = x.Methods
	default:
		return nil
	}
	var names []string
	for _, f := range list.List {
		for _, n := range f.Names {
			names = append(names, n.Name)
		}
		if len(f.Names) == 0 {
			names = append(names, receiverType(f.Type))
		}
	}
	return names
}

// external are names of other modules' packages that share a name with one
// of hookback's, as the docs quote them.
var external = map[string]string{
	"cli.Context":    "github.com/urfave/cli/v2",
	"webhook.Server": "sigs.k8s.io/controller-runtime/pkg/webhook",
}

// ident checks pkg.Name (and pkg.Name.Member) when pkg is one of hookback's
// packages; other packages' names are not this test's business.
func (idx *repoIndex) ident(pkg, name, member string) string {
	decls, ok := idx.packages[pkg]
	if _, ext := external[pkg+"."+name]; !ok || ext {
		return ""
	}
	if !decls[name] {
		return "names " + pkg + "." + name + ", which package " + pkg + " does not declare"
	}
	members, isType := idx.members[pkg+"."+name]
	if member != "" && isType && !members[member] {
		return "names " + pkg + "." + name + "." + member + ", which " + pkg + "." + name + " does not have"
	}
	return ""
}
