package suite

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// ErrSuite marks a suite that cannot be read: a bad file, named with its
// line.
var ErrSuite = errors.New("suite")

// maxFileBytes bounds one suite file.
const maxFileBytes = 16 << 20

// File is one suite file as loaded.
type File struct {
	// Path is the file as named (directory walked, or given).
	Path string
	Kind string
	// Cases in file order.
	Cases []*Loaded
	src   []byte
}

// Loaded is a case with where it was read.
type Loaded struct {
	Case
	File *File
	// Line is the case's first line.
	Line int
	// ignore is the file's and the case's Ignore.
	ignore []string
	// expect is the expect value's node, for --update.
	expect, expectK, caseNode *yaml.Node
	// expectWK is expectWebhooks' key node, for --update.
	expectWK *yaml.Node
	// next is the line after the case (0: the end of the file).
	next int
}

// ID names the case in the output: file and case name.
func (l *Loaded) ID() string { return l.File.Path + ":" + l.Name }

// Dir is where the case's relative files are.
func (l *Loaded) Dir() string { return filepath.Dir(l.File.Path) }

// Load reads suite files and directories: a directory is walked for
// *.yaml and *.yml files whose apiVersion is hookback.dev's (other YAML
// there, such as the manifests cases name, is left alone); a file named
// explicitly must be a suite file. Every problem is reported at once,
// each as FILE:LINE: what is wrong.
func Load(paths []string) ([]*File, error) {
	var files []*File
	var errs []error
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: %w", ErrSuite, err))
			continue
		}
		if !info.IsDir() {
			f, err := loadFile(p, true)
			errs = append(errs, err)
			if f != nil {
				files = append(files, f)
			}
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
				return err
			}
			f, err := loadFile(path, false)
			errs = append(errs, err)
			if f != nil {
				files = append(files, f)
			}
			return nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: read %s: %w", ErrSuite, p, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: no suite files in %s: a suite file has apiVersion: %s and kind: Suite or Case (hookback test init writes them)",
			ErrSuite, strings.Join(paths, ", "), APIVersion)
	}
	return files, checkNames(files)
}

// posError is FILE:LINE: msg.
func posError(file string, line int, format string, args ...any) error {
	return fmt.Errorf("%w: %s:%d: %s", ErrSuite, file, line, fmt.Sprintf(format, args...))
}

// loadFile reads one file; a file that is not hookback's is nil, nil
// unless it was named explicitly.
func loadFile(path string, named bool) (*File, error) {
	src, err := readBounded(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSuite, err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("%w: %s: %s", ErrSuite, path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		if named {
			return nil, posError(path, max(doc.Line, 1), "want a mapping with apiVersion: %s and kind: Suite or Case", APIVersion)
		}
		return nil, nil
	}
	root := doc.Content[0]
	apiVersion, kind := scalar(root, "apiVersion"), scalar(root, "kind")
	if !strings.HasPrefix(apiVersion, "hookback.dev/") {
		if named {
			return nil, posError(path, root.Line, "apiVersion %q: want %s", apiVersion, APIVersion)
		}
		return nil, nil
	}
	if apiVersion != APIVersion {
		return nil, posError(path, keyLine(root, "apiVersion"), "apiVersion %q: want %s", apiVersion, APIVersion)
	}
	f := &File{Path: path, Kind: kind, src: src}
	switch kind {
	case KindSuite:
		return f, f.loadSuite(root)
	case KindCase:
		c, err := f.loadCase(root, nil, 0, strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
		if err != nil {
			return nil, err
		}
		f.Cases = []*Loaded{c}
		return f, nil
	}
	return nil, posError(path, keyLine(root, "kind"), "kind %q: want Suite (a list of cases) or Case (one case)", kind)
}

func (f *File) loadSuite(root *yaml.Node) error {
	var errs []error
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := root.Content[i].Value; !slices.Contains([]string{"apiVersion", "kind", "ignore", "cases"}, k) {
			errs = append(errs, posError(f.Path, root.Content[i].Line, "unknown field %q in a Suite (apiVersion, kind, ignore, cases)", k))
		}
	}
	var ignore []string
	if n := value(root, "ignore"); n != nil {
		if err := n.Decode(&ignore); err != nil {
			errs = append(errs, posError(f.Path, n.Line, "ignore: want a list of paths"))
		}
	}
	cases := value(root, "cases")
	if cases == nil || cases.Kind != yaml.SequenceNode || len(cases.Content) == 0 {
		return errors.Join(append(errs, posError(f.Path, root.Line, "a Suite needs cases: a list of at least one case"))...)
	}
	for i, n := range cases.Content {
		next := 0
		if i+1 < len(cases.Content) {
			next = cases.Content[i+1].Line
		}
		c, err := f.loadCase(n, ignore, next, "")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if c.Name == "" {
			errs = append(errs, posError(f.Path, n.Line, "case %d has no name", i+1))
		}
		f.Cases = append(f.Cases, c)
	}
	return errors.Join(errs...)
}

// loadCase decodes one case's mapping strictly, naming the line of what is
// wrong.
func (f *File) loadCase(n *yaml.Node, ignore []string, next int, name string) (*Loaded, error) {
	if n.Kind != yaml.MappingNode {
		return nil, posError(f.Path, n.Line, "a case is a mapping (name, input, expect)")
	}
	var v map[string]any
	if err := n.Decode(&v); err != nil {
		return nil, posError(f.Path, n.Line, "%v", err)
	}
	delete(v, "apiVersion")
	delete(v, "kind")
	b, err := json.Marshal(v)
	if err != nil {
		return nil, posError(f.Path, n.Line, "%v", err)
	}
	l := &Loaded{File: f, Line: n.Line, next: next}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l.Case); err != nil {
		return nil, decodeError(f.Path, n, err)
	}
	if l.Name == "" {
		l.Name = name
	}
	l.ignore = append(slices.Clone(ignore), l.Case.Ignore...)
	l.expectK, l.expect, l.caseNode = key(n, "expect"), value(n, "expect"), n
	l.expectWK = key(n, "expectWebhooks")
	if errs := validate(l, n); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return l, nil
}

// decodeError places a JSON decoding error on the line of the field.
func decodeError(file string, n *yaml.Node, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return posError(file, pathLine(n, te.Field), "%s: want %s, not %s", te.Field, te.Type, te.Value)
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return posError(file, findKeyLine(n, name), "unknown field %q (the schema, docs/testing.md, lists the fields)", name)
	}
	return posError(file, n.Line, "%s", strings.TrimPrefix(msg, "json: "))
}

func readBounded(path string) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	b := make([]byte, 0, 4096)
	buf := bytes.NewBuffer(b)
	if _, err := buf.ReadFrom(io.LimitReader(fh, maxFileBytes+1)); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if buf.Len() > maxFileBytes {
		return nil, fmt.Errorf("%s: larger than %d MiB", path, maxFileBytes>>20)
	}
	return buf.Bytes(), nil
}

// checkNames refuses two cases of one file with the same name: --update
// and the reports tell cases apart by it.
func checkNames(files []*File) error {
	var errs []error
	for _, f := range files {
		seen := map[string]int{}
		for _, c := range f.Cases {
			if prev, ok := seen[c.Name]; ok {
				errs = append(errs, posError(f.Path, c.Line, "case %q again (first at line %d): case names are unique in a file", c.Name, prev))
			}
			seen[c.Name] = c.Line
		}
	}
	return errors.Join(errs...)
}
