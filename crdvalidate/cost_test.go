package crdvalidate

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookback/hookback/manifests"
)

// TestCosts: each rule's estimated cost, named by path; a CRD over the
// per-rule budget is shown over it, as the apiserver's refusal says.
func TestCosts(t *testing.T) {
	for _, tc := range []struct {
		file      string
		wantRules int
		over      bool
		want      []string
	}{
		{file: "widgets-crd.yaml", wantRules: 7, want: []string{
			"spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].messageExpression",
			"spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[class].x-kubernetes-validations[0].rule",
			"of the CRD budget (100000000)"}},
		{file: "invalid/crd-too-costly.yaml", wantRules: 1, over: true, want: []string{"OVER"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			docs, err := manifests.Load([]string{filepath.Join(corpus, tc.file)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			costs, err := Costs(docs[0].Object)
			if err != nil {
				t.Fatal(err)
			}
			if len(costs) != 1 || len(costs[0].Rules) != tc.wantRules || costs[0].OverBudget() != tc.over {
				t.Fatalf("costs = %+v, want one version, %d rules, over budget %v", costs, tc.wantRules, tc.over)
			}
			var b bytes.Buffer
			if err := WriteCosts(&b, costs); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("cost table lacks %q:\n%s", w, b.String())
				}
			}
			t.Log("\n" + b.String())
		})
	}
}
