package suite

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"
)

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validateYAML(t *testing.T, s *jsonschema.Schema, path string) error {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(v)
}

// TestExampleSuitesMatchTheSchema: every suite file in the repository (the
// examples the docs show, what test init writes) is valid for editors,
// and the bad files the loader refuses for their fields are refused too.
func TestExampleSuitesMatchTheSchema(t *testing.T) {
	s := compileSchema(t)
	good, _ := filepath.Glob(filepath.Join("..", "testdata", "suite", "*.yaml"))
	good = slices.DeleteFunc(good, func(p string) bool { return strings.HasSuffix(p, "pod-offensive.yaml") })
	good = append(good, filepath.Join("testdata", "case-from-entry.golden.yaml"))
	for _, p := range good {
		t.Run(filepath.Base(p), func(t *testing.T) {
			if err := validateYAML(t, s, p); err != nil {
				t.Errorf("%s: %v", p, err)
			}
		})
	}
	for _, p := range []string{"unknown-field.yaml", "bad-result.yaml", "wrong-type.yaml", "bad-kind.yaml"} {
		t.Run("refuses "+p, func(t *testing.T) {
			if err := validateYAML(t, s, filepath.Join("testdata", "bad", p)); err == nil {
				t.Errorf("%s passes the schema", p)
			}
		})
	}
}

// TestSchemaFollowsTheGoTypes: the schema names exactly the fields the
// loader decodes, so a field added to the Go types is added to the schema.
func TestSchemaFollowsTheGoTypes(t *testing.T) {
	var doc struct {
		Defs map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(Schema, &doc); err != nil {
		t.Fatal(err)
	}
	conv := doc.Defs["caseFields"].Properties["conversion"]
	var convDef struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(conv, &convDef); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		typ    reflect.Type
		schema map[string]json.RawMessage
	}{
		{"case", reflect.TypeFor[Case](), doc.Defs["caseFields"].Properties},
		{"expect", reflect.TypeFor[Expect](), doc.Defs["expect"].Properties},
		{"conversion", reflect.TypeFor[Conversion](), convDef.Properties},
		{"suite", reflect.TypeFor[Suite](), doc.Defs["suite"].Properties},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fields, props []string
			for f := range tc.typ.Fields() {
				fields = append(fields, strings.Split(f.Tag.Get("json"), ",")[0])
			}
			for p := range tc.schema {
				props = append(props, p)
			}
			slices.Sort(fields)
			slices.Sort(props)
			if !slices.Equal(fields, props) {
				t.Errorf("Go fields %v, schema properties %v", fields, props)
			}
		})
	}
}
