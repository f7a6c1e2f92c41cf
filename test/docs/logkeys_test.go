package docs

import (
	"go/ast"
	"go/token"
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
	eachGoFile(t, false, 0, func(_ string, fset *token.FileSet, f *ast.File) {
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
	})
}
