package roundtrip

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// maxManifestBytes bounds one manifest file read for CRDs or seeds.
const maxManifestBytes = 16 << 20

// ErrNoSchema is returned for a served version without a structural
// schema: there is nothing to generate from.
var ErrNoSchema = errors.New("roundtrip: served version has no openAPIV3Schema")

// ReadCRDs reads every CustomResourceDefinition (apiextensions.k8s.io/v1)
// in a YAML or JSON file, or in the .yaml, .yml and .json files of a
// directory (not recursive), multi-document files included; other kinds
// are skipped. It is an error to find none.
func ReadCRDs(path string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	objs, err := ReadObjects(path)
	if err != nil {
		return nil, err
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, o := range objs {
		if o["kind"] != "CustomResourceDefinition" {
			continue
		}
		if v := o["apiVersion"]; v != "apiextensions.k8s.io/v1" {
			return nil, fmt.Errorf("%s: CustomResourceDefinition of apiVersion %v: want apiextensions.k8s.io/v1", path, v)
		}
		b, err := yaml.Marshal(o)
		if err != nil {
			return nil, err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(b, &crd); err != nil {
			return nil, fmt.Errorf("%s: read CustomResourceDefinition: %w", path, err)
		}
		out = append(out, &crd)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no CustomResourceDefinition found: give a CRD manifest (such as config/crd/bases/*.yaml)", path)
	}
	return out, nil
}

// ReadObjects reads every object of a YAML or JSON file, or of the .yaml,
// .yml and .json files of a directory (not recursive): seed objects such
// as a project's config/samples.
func ReadObjects(path string) ([]map[string]any, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	files := []string{path}
	if info.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		files = files[:0]
		for _, e := range entries {
			ext := strings.ToLower(filepath.Ext(e.Name()))
			if !e.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
	}
	var out []map[string]any
	for _, f := range files {
		objs, err := readFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

func readFile(path string) ([]map[string]any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > maxManifestBytes {
		return nil, fmt.Errorf("read %s: larger than %d bytes", path, maxManifestBytes)
	}
	var out []map[string]any
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		if len(obj) > 0 {
			out = append(out, obj)
		}
	}
}

// version is one served version of a CRD with its schema.
type version struct {
	name   string
	schema *apiextensionsv1.JSONSchemaProps
}

// served lists crd's served versions, the storage version first.
func served(crd *apiextensionsv1.CustomResourceDefinition) ([]version, error) {
	var out []version
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			return nil, fmt.Errorf("%s %s: %w", crd.Name, v.Name, ErrNoSchema)
		}
		out = append(out, version{name: v.Name, schema: v.Schema.OpenAPIV3Schema})
		if v.Storage {
			out[0], out[len(out)-1] = out[len(out)-1], out[0]
		}
	}
	if len(out) < 2 {
		return nil, fmt.Errorf("%s serves %d version(s): a round trip needs two", crd.Name, len(out))
	}
	slices.SortStableFunc(out[1:], func(a, b version) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// FromUnstructured reads a CRD as the manifests' intake gives it.
func FromUnstructured(obj map[string]any) (*apiextensionsv1.CustomResourceDefinition, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &crd); err != nil {
		return nil, fmt.Errorf("read CustomResourceDefinition: %w", err)
	}
	return &crd, nil
}
