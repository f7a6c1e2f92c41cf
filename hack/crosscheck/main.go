// Command crosscheck type-checks Go packages for another platform (by default
// windows/amd64) from source, without compiling anything, and exits non-zero
// with the compiler's kind of message when they would not build there.
//
// Why not GOOS=windows go vet: vet needs every dependency compiled for that
// platform first, a build configuration of its own that costs six minutes of
// a fresh machine's two cores for the one thing a cross-platform check is
// for, the files behind build constraints (holder_windows.go and its kin).
// Type-checking the dependencies' declarations and skipping their function
// bodies takes seconds; the named packages are checked in full.
//
// Usage: go run ./hack/crosscheck [-goos windows] [-goarch amd64] [packages]
// (default ./...; test files are not checked: they are not shipped).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// pkg is what go list -json says of a package, and what checking it made.
type pkg struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
	ImportMap  map[string]string
	DepOnly    bool
	Standard   bool
	Module     *struct{ GoVersion string }
	Error      *struct{ Err string }

	done  chan struct{}
	types *types.Package
	errs  []error
}

func main() {
	goos := flag.String("goos", "windows", "the platform's GOOS")
	goarch := flag.String("goarch", "amd64", "the platform's GOARCH")
	flag.Parse()
	patterns := flag.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	n, err := check(ctx, *goos, *goarch, patterns, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "crosscheck %s/%s: %v\n", *goos, *goarch, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "crosscheck: %d packages type-check for %s/%s\n", n, *goos, *goarch)
}

// check type-checks patterns and their dependencies for goos/goarch, prints
// each error to out, and returns how many of the named packages it checked.
func check(ctx context.Context, goos, goarch string, patterns []string, out io.Writer) (int, error) {
	pkgs, err := list(ctx, goos, goarch, patterns)
	if err != nil {
		return 0, err
	}
	byPath := make(map[string]*pkg, len(pkgs))
	for _, p := range pkgs {
		p.done = make(chan struct{})
		byPath[p.ImportPath] = p
	}
	sizes := types.SizesFor("gc", goarch)
	if sizes == nil {
		return 0, fmt.Errorf("unknown GOARCH %q", goarch)
	}
	fset := token.NewFileSet()
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for _, p := range pkgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(p.done)
			for _, imp := range p.Imports {
				if d := byPath[p.resolve(imp)]; d != nil {
					<-d.done
				}
			}
			sem <- struct{}{}
			defer func() { <-sem }()
			p.check(fset, sizes, byPath)
		}()
	}
	wg.Wait()
	roots, failed := 0, 0
	for _, p := range pkgs {
		if !p.DepOnly {
			roots++
		}
		for _, e := range p.errs {
			fmt.Fprintln(out, e)
			failed++
		}
	}
	if failed > 0 {
		return roots, fmt.Errorf("%d errors (above)", failed)
	}
	return roots, nil
}

// list runs go list for the platform: every package the patterns need, each
// after its dependencies.
func list(ctx context.Context, goos, goarch string, patterns []string) ([]*pkg, error) {
	args := append([]string{"list", "-e", "-deps",
		"-json=ImportPath,Dir,GoFiles,Imports,ImportMap,DepOnly,Standard,Module,Error"}, patterns...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	var pkgs []*pkg
	for dec := json.NewDecoder(bytes.NewReader(stdout)); ; {
		p := new(pkg)
		if err := dec.Decode(p); errors.Is(err, io.EOF) {
			return pkgs, nil
		} else if err != nil {
			return nil, fmt.Errorf("read go list's output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
}

// resolve maps an import as written to the package go list resolved it to
// (vendored standard-library packages).
func (p *pkg) resolve(imp string) string {
	if r, ok := p.ImportMap[imp]; ok {
		return r
	}
	return imp
}

// check type-checks p, whose imports are checked already. A dependency's
// function bodies are skipped: only its declarations reach the packages named.
func (p *pkg) check(fset *token.FileSet, sizes types.Sizes, byPath map[string]*pkg) {
	if p.ImportPath == "unsafe" {
		p.types = types.Unsafe
		return
	}
	if p.Error != nil {
		p.errs = append(p.errs, fmt.Errorf("%s: %s", p.ImportPath, p.Error.Err))
		return
	}
	mode := parser.SkipObjectResolution | parser.ParseComments
	files := make([]*ast.File, 0, len(p.GoFiles))
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, mode)
		if err != nil {
			p.errs = append(p.errs, err)
			return
		}
		files = append(files, f)
	}
	conf := types.Config{
		Importer:         importer(func(path string) (*types.Package, error) { return p.imported(path, byPath) }),
		Sizes:            sizes,
		IgnoreFuncBodies: p.DepOnly,
		GoVersion:        p.goVersion(),
		Error: func(err error) {
			if len(p.errs) < 10 {
				p.errs = append(p.errs, err)
			}
		},
	}
	p.types, _ = conf.Check(p.ImportPath, fset, files, nil)
}

// imported is an import of p, checked already.
func (p *pkg) imported(path string, byPath map[string]*pkg) (*types.Package, error) {
	d := byPath[p.resolve(path)]
	if d == nil || d.types == nil {
		return nil, fmt.Errorf("%s: import %q: not type-checked (see its own errors)", p.ImportPath, path)
	}
	return d.types, nil
}

// goVersion is the language version the compiler would use for p: its
// module's go line (go1.16 when it has none), the toolchain's for std.
func (p *pkg) goVersion() string {
	switch {
	case p.Standard:
		return ""
	case p.Module == nil || p.Module.GoVersion == "":
		return "go1.16"
	}
	return "go" + p.Module.GoVersion
}

// importer adapts a function to types.Importer.
type importer func(path string) (*types.Package, error)

func (f importer) Import(path string) (*types.Package, error) { return f(path) }
