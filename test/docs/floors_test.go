package docs

// The floors table of docs/development.md says which package may import
// which: a package imports only packages on lower floors. These tests read
// the table and every non-test Go file's imports (go/parser, no compile), so
// the drawing stays true and a package that climbs or has no floor is named.

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// knownClimbs are the imports that do not go down today, each with the
// change of issue 51 that removes it. The table only shrinks: a row whose
// import is gone fails, so that it is removed with the import.
var knownClimbs = map[[2]string]string{}

// TestFloors checks every import of the module's packages against the
// floors table.
func TestFloors(t *testing.T) {
	floors, err := parseFloors(readFile(t, layoutDoc))
	if err != nil {
		t.Fatal(err)
	}
	for _, problem := range floorProblems(floors, moduleImports(t), knownClimbs) {
		t.Error(problem)
	}
}

// parseFloors reads the table whose header is "| floor | packages | ...":
// package directory ("." for main.go) -> floor.
func parseFloors(text string) (map[string]int, error) {
	floors := map[string]int{}
	in := false
	for line := range strings.SplitSeq(text, "\n") {
		cells := strings.Split(strings.TrimSpace(line), "|")
		switch {
		case len(cells) >= 4 && strings.TrimSpace(cells[1]) == "floor" && strings.TrimSpace(cells[2]) == "packages":
			in = true
		case !in || strings.HasPrefix(line, "|---"):
		case len(cells) < 4:
			in = false
		default:
			floor, err := strconv.Atoi(strings.TrimSpace(cells[1]))
			if err != nil {
				return nil, fmt.Errorf("%s floors table: %q is not a floor number: %w", layoutDoc, cells[1], err)
			}
			for _, m := range codeSpan.FindAllStringSubmatch(cells[2], -1) {
				dir := pkgDir(m[1])
				if f, dup := floors[dir]; dup {
					return nil, fmt.Errorf("%s floors table names %s on floors %d and %d: keep one", layoutDoc, m[1], f, floor)
				}
				floors[dir] = floor
			}
		}
	}
	if len(floors) == 0 {
		return nil, fmt.Errorf("%s has no floors table: a table whose header is `| floor | packages | what sits there |`", layoutDoc)
	}
	return floors, nil
}

// pkgDir turns a name as the table writes it (`cli/`, `main.go`) into a
// package directory; pkgName is its inverse.
func pkgDir(name string) string {
	if name == "main.go" {
		return "."
	}
	return strings.TrimSuffix(name, "/")
}

func pkgName(dir string) string {
	if dir == "." {
		return "main.go"
	}
	return dir + "/"
}

// floorProblems returns one line per import that does not go down, package
// without a floor, floor row naming no package, and known climb that no
// longer occurs. imports maps each package directory to the module's
// packages it imports.
func floorProblems(floors map[string]int, imports map[string][]string, known map[[2]string]string) []string {
	var problems []string
	used := map[[2]string]bool{}
	for _, pkg := range slices.Sorted(maps.Keys(imports)) {
		floor, ok := floors[pkg]
		if !ok {
			problems = append(problems, missingFloor(pkg, floors, imports))
			continue
		}
		for _, imp := range imports[pkg] {
			impFloor, ok := floors[imp]
			switch {
			case !ok || impFloor < floor:
			case known[[2]string{pkg, imp}] != "":
				used[[2]string{pkg, imp}] = true
			default:
				problems = append(problems, fmt.Sprintf("%s (floor %d) imports %s (floor %d): a package imports only packages on lower floors (%s, floors table): move what it uses down, or the importer up",
					pkgName(pkg), floor, pkgName(imp), impFloor, layoutDoc))
			}
		}
	}
	for _, dir := range slices.Sorted(maps.Keys(floors)) {
		if _, ok := imports[dir]; !ok {
			problems = append(problems, fmt.Sprintf("%s floors table names %s, which is no package of the module: remove it from floor %d", layoutDoc, pkgName(dir), floors[dir]))
		}
	}
	for _, climb := range slices.SortedFunc(maps.Keys(known), func(a, b [2]string) int { return cmp.Compare(a[0]+" "+a[1], b[0]+" "+b[1]) }) {
		if !used[climb] {
			problems = append(problems, fmt.Sprintf("knownClimbs lists %s -> %s (%s), which no longer climbs: remove its row", pkgName(climb[0]), pkgName(climb[1]), known[climb]))
		}
	}
	return problems
}

// missingFloor says which row of the table a package without a floor goes
// in: the lowest floor above everything it imports, if that is below
// everything that imports it.
func missingFloor(pkg string, floors map[string]int, imports map[string][]string) string {
	msg := fmt.Sprintf("%s has no floor in %s's floors table: ", pkgName(pkg), layoutDoc)
	lo, below := 0, ""
	for _, imp := range imports[pkg] {
		if f, ok := floors[imp]; ok && f+1 > lo {
			lo, below = f+1, fmt.Sprintf(" (it imports %s, on floor %d)", pkgName(imp), f)
		}
	}
	hi, above := -1, ""
	for _, importer := range slices.Sorted(maps.Keys(imports)) {
		if f, ok := floors[importer]; ok && slices.Contains(imports[importer], pkg) && (hi < 0 || f < hi) {
			hi, above = f, fmt.Sprintf("%s, on floor %d, imports it", pkgName(importer), f)
		}
	}
	row := fmt.Sprintf("add `%s` to the row of floor %d", pkgName(pkg), lo)
	if !slices.Contains(slices.Collect(maps.Values(floors)), lo) {
		row = fmt.Sprintf("add a row for floor %d with `%s`", lo, pkgName(pkg))
	}
	if hi < 0 || lo < hi {
		return msg + row + ", the lowest above everything it imports" + below
	}
	return msg + fmt.Sprintf("it must sit above floor %d%s and below floor %d (%s): insert a floor %d for it and renumber the rows above", lo-1, below, hi, above, lo)
}

// moduleImports parses the imports of every non-test Go file of the main
// module (other modules, such as test/e2e's, left out) and returns each
// package directory with the module's packages it imports. Every file
// counts, whatever its build constraints.
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	module := modulePath(t)
	nested := map[string]bool{} // directory -> inside another module
	imports := map[string][]string{}
	eachGoFile(t, false, parser.ImportsOnly, func(path string, _ *token.FileSet, f *ast.File) {
		dir := filepath.ToSlash(filepath.Dir(path))
		if inNestedModule(dir, nested) {
			return
		}
		deps := imports[dir]
		for _, spec := range f.Imports {
			p, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				t.Fatalf("%s: import %s: %v", path, spec.Path.Value, err)
			}
			if rest, ok := strings.CutPrefix(p, module+"/"); ok && !slices.Contains(deps, rest) {
				deps = append(deps, rest)
			}
		}
		imports[dir] = deps
	})
	return imports
}

// inNestedModule says whether dir lies in a module of its own below the
// root (a go.mod between it and the root).
func inNestedModule(dir string, memo map[string]bool) bool {
	if dir == "." {
		return false
	}
	if v, ok := memo[dir]; ok {
		return v
	}
	_, err := os.Stat(filepath.Join(dir, "go.mod"))
	v := err == nil || inNestedModule(filepath.ToSlash(filepath.Dir(dir)), memo)
	memo[dir] = v
	return v
}

// modulePath is the main module's path, from go.mod's module line.
func modulePath(t *testing.T) string {
	t.Helper()
	for line := range strings.SplitSeq(readFile(t, "go.mod"), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	t.Fatal("go.mod has no module line")
	return ""
}

// TestFloorRules runs the floor checks on small drawings: what each must
// flag, and what it must let through.
func TestFloorRules(t *testing.T) {
	floors := map[string]int{".": 3, "cli": 2, "session": 1, "field": 0, "rbac": 0}
	cases := []struct {
		name    string
		imports map[string][]string
		known   map[[2]string]string
		want    []string // substrings of the problems, one each, in order
	}{
		{"imports go down", map[string][]string{".": {"cli"}, "cli": {"session", "field"}, "session": {"rbac"}, "field": nil, "rbac": nil}, nil, nil},
		{"same floor", map[string][]string{".": nil, "cli": nil, "session": nil, "field": {"rbac"}, "rbac": nil}, nil,
			[]string{"field/ (floor 0) imports rbac/ (floor 0)"}},
		{"upwards", map[string][]string{".": nil, "cli": nil, "session": {"cli"}, "field": nil, "rbac": nil}, nil,
			[]string{"session/ (floor 1) imports cli/ (floor 2)"}},
		{"known climb", map[string][]string{".": nil, "cli": nil, "session": {"cli"}, "field": nil, "rbac": nil},
			map[[2]string]string{{"session", "cli"}: "to be removed"}, nil},
		{"known climb gone", map[string][]string{".": nil, "cli": nil, "session": nil, "field": nil, "rbac": nil},
			map[[2]string]string{{"session", "cli"}: "to be removed"}, []string{"knownClimbs lists session/ -> cli/ (to be removed), which no longer climbs: remove its row"}},
		{"new package", map[string][]string{".": nil, "cli": {"lint"}, "session": nil, "field": nil, "rbac": nil, "lint": {"field"}}, nil,
			[]string{"lint/ has no floor in docs/development.md's floors table: add `lint/` to the row of floor 1, the lowest above everything it imports (it imports field/, on floor 0)"}},
		{"new package on top", map[string][]string{".": nil, "cli": nil, "session": nil, "field": nil, "rbac": nil, "tool": {"."}}, nil,
			[]string{"tool/ has no floor in docs/development.md's floors table: add a row for floor 4 with `tool/`, the lowest above everything it imports (it imports main.go, on floor 3)"}},
		{"new package between adjacent floors", map[string][]string{".": nil, "cli": nil, "session": {"lint"}, "field": nil, "rbac": nil, "lint": {"field"}}, nil,
			[]string{"lint/ has no floor in docs/development.md's floors table: it must sit above floor 0 (it imports field/, on floor 0) and below floor 1 (session/, on floor 1, imports it): insert a floor 1 for it and renumber the rows above"}},
		{"row without a package", map[string][]string{".": nil, "cli": nil, "session": nil, "field": nil}, nil,
			[]string{"names rbac/, which is no package of the module: remove it from floor 0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := floorProblems(floors, c.imports, c.known)
			if len(got) != len(c.want) {
				t.Fatalf("floorProblems = %q, want %d problems: %q", got, len(c.want), c.want)
			}
			for i := range got {
				if !strings.Contains(got[i], c.want[i]) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got[i], c.want[i])
				}
			}
		})
	}
}

// TestParseFloors reads the floors table as development.md writes it, and
// refuses what it cannot read.
func TestParseFloors(t *testing.T) {
	const head = "| floor | packages | what sits there |\n|---|---|---|\n"
	cases := []struct {
		name, text string
		want       map[string]int
		err        string
	}{
		{"table", "intro\n\n" + head + "| 1 | `main.go`, `cli/` | top |\n| 0 | `internal/review/` | leaves |\n\nafter | a | b |\n",
			map[string]int{".": 1, "cli": 1, "internal/review": 0}, ""},
		{"no table", "| package | what it owns |\n|---|---|\n| `cli/` | commands |\n", nil, "has no floors table"},
		{"twice", head + "| 1 | `cli/` | a |\n| 0 | `cli/` | b |\n", nil, "names cli/ on floors 1 and 0"},
		{"not a number", head + "| top | `cli/` | a |\n", nil, "is not a floor number"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseFloors(c.text)
			switch {
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("parseFloors error = %v, want one containing %q", err, c.err)
			case c.err == "" && err != nil:
				t.Fatal(err)
			case !maps.Equal(got, c.want):
				t.Errorf("parseFloors = %v, want %v", got, c.want)
			}
		})
	}
}
