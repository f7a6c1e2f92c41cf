package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// slogCalls are the log/slog functions and methods whose string arguments
// are keys, with the index of the first argument that may be one (after the
// message, or the context and the message).
var slogCalls = map[string]int{
	"Debug": 1, "Info": 1, "Warn": 1, "Error": 1, "Log": 3, "With": 0,
	"DebugContext": 2, "InfoContext": 2, "WarnContext": 2, "ErrorContext": 2,
	"Any": 0, "String": 0, "Group": 0,
}

// TestLogErrorKey keeps one key for errors in log lines: "error", never
// "err", so a query over the logs finds every failure.
func TestLogErrorKey(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && skipDir(path):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go"):
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			first, ok := slogCalls[sel.Sel.Name]
			if !ok {
				return true
			}
			for _, arg := range call.Args[min(first, len(call.Args)):] {
				if lit, ok := arg.(*ast.BasicLit); ok && lit.Kind == token.STRING && lit.Value == `"err"` {
					t.Errorf(`%s: log key "err": use "error", the one key for errors`, fset.Position(lit.Pos()))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
