package roundtrip

import (
	"context"
	"math/rand/v2"
	"regexp"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
)

// TestObjectsMeetTheSchema checks every object made, fresh and varied,
// with the apiserver's own validator of custom resources
// (apiextensions-apiserver's validation.ValidateCustomResource).
func TestObjectsMeetTheSchema(t *testing.T) {
	conv, crd := gadgets(t, &gadgetServer{})
	seeds, err := ReadObjects("testdata/sample.yaml")
	if err != nil {
		t.Fatal(err)
	}
	validators := map[string]validation.SchemaValidator{}
	for _, v := range crd.Spec.Versions {
		var internal apiextensions.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
			t.Fatal(err)
		}
		sv, _, err := validation.NewSchemaValidator(&internal)
		if err != nil {
			t.Fatal(err)
		}
		validators[v.Name] = sv
	}
	for _, tc := range []struct {
		name  string
		seeds []map[string]any
	}{{"from the schema", nil}, {"varied samples", seeds}} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := range uint64(5) {
				r, err := newRunner(Options{CRD: crd, Converter: conv, N: 40, Seed: seed, Seeds: tc.seeds})
				if err != nil {
					t.Fatal(err)
				}
				objs, err := r.objects(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				set := map[string]int{}
				for _, m := range objs {
					if errs := validation.ValidateCustomResource(nil, m.obj, validators[m.version]); len(errs) > 0 {
						t.Errorf("seed %d, %s object %v: %v", seed, m.version, m.obj, errs.ToAggregate())
					}
					spec, _ := m.obj["spec"].(map[string]any)
					for k := range spec {
						set[k]++
					}
				}
				// Optional fields are set in some objects, not all.
				for _, k := range []string{"color", "code", "label", "since", "ports", "settings"} {
					if set[k] == 0 || set[k] == len(objs) {
						t.Errorf("seed %d: spec.%s set in %d of %d objects", seed, k, set[k], len(objs))
					}
				}
			}
		})
	}
}

func TestPatternValues(t *testing.T) {
	g := &generator{rnd: rand.New(rand.NewPCG(1, 2))}
	for _, p := range []string{`^[a-z]{3}-[0-9]{2,4}$`, `^(@(annually|yearly|monthly|weekly|daily|hourly))$`, `^\d+(ms|s|m|h)$`,
		`^[A-Z][a-zA-Z0-9_]*$`, `^([0-9]{1,3}\.){3}[0-9]{1,3}$`, `v[0-9]+(alpha|beta)?`, `^[^/]+/[^/]+$`} {
		t.Run(p, func(t *testing.T) {
			re := regexp.MustCompile(p)
			for range 50 {
				s, ok := g.pattern(p, 12)
				if !ok || !re.MatchString(s) {
					t.Fatalf("pattern %s: %q, %v", p, s, ok)
				}
			}
		})
	}
	if _, ok := g.pattern(`(?<!x)a`, 5); ok {
		t.Error("a pattern Go cannot compile: want ok false")
	}
}
