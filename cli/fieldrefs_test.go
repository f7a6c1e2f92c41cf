package cli

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hookback/hookback/field"
)

// TestEveryFieldTheLibraryNamesIsBound reads the library's sources: every
// field a field.Error shows (the first argument of field.New, Clause and
// Errorf) and every field its text refers to ({pkg.Type.Field}) must be one
// a flag sets, or the CLI would show a user a Go field name where a flag
// belongs. TestEveryLibraryFieldErrorNamesABoundFlag calls the library;
// this covers the errors no table case reaches (listeners, certificate
// files, the tunnel).
func TestEveryFieldTheLibraryNamesIsBound(t *testing.T) {
	shown := regexp.MustCompile(`field\.(?:New|Clause|Errorf)\(\s*"([^"]+)"`)
	ref := regexp.MustCompile(`\{([a-z][a-z0-9]*\.[A-Z][A-Za-z0-9]*(?:\.[A-Z][A-Za-z0-9]*)+)\}`)
	bound := libraryFieldFlags()
	found := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "cli", "test", "examples", "hack", "testdata", "field":
				return filepath.SkipDir
			}
			if strings.HasPrefix(d.Name(), ".") && path != ".." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		names := shown.FindAllSubmatch(src, -1)
		for _, lit := range stringLiterals(src) {
			names = append(names, ref.FindAllSubmatch([]byte(lit), -1)...)
		}
		for _, m := range names {
			found++
			if _, ok := bound[string(m[1])]; !ok {
				t.Errorf("%s names %s, which no flag sets: add sets(%q) to the bind call of its flag", path, m[1], m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 20 {
		t.Fatalf("found %d field names in the library's sources, want at least 20: is the walk reading them?", found)
	}
}

// TestNoErrorLosesItsFields: no command ends with cli.Exit(err.Error(),
// code), which keeps only the error's text: Run could then not find the
// library's field errors in it, and the user would read a Go field name
// ("plan.UserWebhooks.Upstream needs plan.UserWebhooks.Manifests",
// as test did) where a flag belongs. TestEveryLibraryFieldErrorNamesABoundFlag
// proves each field has a flag; this proves every path out of a command
// keeps the error that names it (exit, usage).
func TestNoErrorLosesItsFields(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || !isSelector(call.Fun, "cli", "Exit") || len(call.Args) == 0 {
				return true
			}
			checked++
			ast.Inspect(call.Args[0], func(n ast.Node) bool {
				text, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := text.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Error" {
					return true
				}
				if inner, ok := sel.X.(*ast.CallExpr); ok && isIdent(inner.Fun, "withFlagNames") {
					return false
				}
				t.Errorf("%s: cli.Exit of an error's text loses its field errors: return exit(err, code)", path)
				return false
			})
			return true
		})
	}
	if checked == 0 {
		t.Fatal("found no cli.Exit call: is the scan reading the sources?")
	}
}

func isSelector(e ast.Expr, pkg, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == name && isIdent(sel.X, pkg)
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// stringLiterals are the string literals of a Go source file, as written.
func stringLiterals(src []byte) []string {
	fset := token.NewFileSet()
	var sc scanner.Scanner
	sc.Init(fset.AddFile("", fset.Base(), len(src)), src, nil, 0)
	var out []string
	for {
		_, tok, lit := sc.Scan()
		if tok == token.EOF {
			return out
		}
		if tok == token.STRING {
			out = append(out, lit)
		}
	}
}

// TestLoggedErrorsShowFlags: an error the library logs (not returns) reads
// with flag names too, in both log formats.
func TestLoggedErrorsShowFlags(t *testing.T) {
	err := fmt.Errorf("reload: %w", field.Advise("certs.Options.CertFile", "read {certs.Options.CertFile}: %w", os.ErrNotExist))
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			var out strings.Builder
			GlobalOptions{LogLevel: "info", LogFormat: format}.logger(&out).Error("certificate", "error", err, "count", 3)
			if !strings.Contains(out.String(), "read --tls-cert-file: file does not exist") || strings.Contains(out.String(), "certs.Options") {
				t.Errorf("logged %q, want the error with --tls-cert-file and no field name", out.String())
			}
		})
	}
}
