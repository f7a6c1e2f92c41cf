package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckSeesThePlatformsFiles: a module that builds on linux but whose
// windows file does not compile fails for windows only, with the compiler's
// message at the file and line, and a dependency's bodies are not checked.
func TestCheckSeesThePlatformsFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/m\n\ngo 1.26\n")
	write("main.go", "package main\n\nimport \"example.com/m/lib\"\n\nfunc main() { lib.Hold() }\n")
	write("lib/hold_unix.go", "//go:build !windows\n\npackage lib\n\nfunc Hold() {}\n")
	write("lib/hold_windows.go", "package lib\n\nimport \"strconv\"\n\nfunc Hold() { missing() }\n")
	t.Chdir(dir)

	for _, tc := range []struct {
		goos  string
		wants []string
	}{
		{"linux", nil},
		{"darwin", nil},
		{"windows", []string{"hold_windows.go:5:15: undefined: missing", `hold_windows.go:3:8: "strconv" imported and not used`}},
	} {
		t.Run(tc.goos, func(t *testing.T) {
			var out bytes.Buffer
			n, err := check(context.Background(), tc.goos, "amd64", []string{"./..."}, &out)
			if n != 2 {
				t.Errorf("checked %d named packages, want 2 (main and lib)", n)
			}
			if (err != nil) != (tc.wants != nil) {
				t.Fatalf("check: %v, want an error: %t; printed:\n%s", err, tc.wants != nil, &out)
			}
			for _, w := range tc.wants {
				if !strings.Contains(out.String(), w) {
					t.Errorf("printed:\n%s\nwant a line with %q", &out, w)
				}
			}
		})
	}
}
