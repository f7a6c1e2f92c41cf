package roundtrip

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	fielderr "github.com/hookback/hookback/field"
	"github.com/hookback/hookback/internal/jsondiff"
)

// TestRunLeadsWithLostValues fuzzes a Go-typed conversion of the
// tutorial's CronJob (cronconv_test.go), which writes an absent job spec
// back as empty structures at whatever level it starts: compared as the
// apiserver stores objects, that is one Emptied finding per version pair,
// at the topmost absent field, and no loss; the status.conditions the
// tutorial's conversion drops are the only losses. Strict finds the empty
// structures as losses, one per level, as the answers have them.
func TestRunLeadsWithLostValues(t *testing.T) {
	emptied := []string{"v1->v2 spec.jobTemplate.spec", "v2->v1 spec.jobTemplate.spec"}
	tests := []struct {
		name        string
		server      *cronServer
		strict      bool
		wantLosses  []string // from->via path; nil with strict: see below
		wantEmptied []string
	}{
		{name: "lossless", server: &cronServer{}, wantEmptied: emptied},
		{name: "drops status.conditions", server: &cronServer{dropConditions: true},
			wantLosses: []string{"v1->v2 status.conditions", "v2->v1 status.conditions"}, wantEmptied: emptied},
		{name: "strict", server: &cronServer{}, strict: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conv, crd := cronJobs(t, tc.server)
			rep, err := Run(context.Background(), Options{CRD: crd, Converter: conv, N: 40, Seed: 9, Strict: tc.strict})
			if err != nil {
				t.Fatal(err)
			}
			if got := tc.server.reviews.Load(); got < 160 {
				t.Errorf("the webhook answered %d reviews, want at least 160", got)
			}
			losses, empties := pairPaths(rep.Losses), pairPaths(rep.Emptied)
			for _, l := range rep.Emptied {
				if l.Before != jsondiff.Missing || !strings.HasPrefix(l.After, "{") || l.Count < 1 || l.Object == nil {
					t.Errorf("emptied %+v: want an absent field come back as an object", l)
				}
			}
			if rep.Strict != tc.strict || !slices.Equal(empties, tc.wantEmptied) {
				t.Errorf("strict %v, emptied %v: want %v, %v", rep.Strict, empties, tc.strict, tc.wantEmptied)
			}
			if !tc.strict {
				if !slices.Equal(losses, tc.wantLosses) || rep.Clean() != (len(tc.wantLosses) == 0) {
					t.Errorf("losses %v: want %v", losses, tc.wantLosses)
				}
				return
			}
			levels := map[string]bool{}
			for _, l := range rep.Losses {
				if strings.HasPrefix(l.Path, "spec.jobTemplate.") {
					levels[l.Path] = true
				}
			}
			if len(levels) < 3 || !levels["spec.jobTemplate.spec"] {
				t.Errorf("strict losses %v: want the empty structures at spec.jobTemplate.spec and the levels below", losses)
			}
		})
	}
}

func pairPaths(ls []Loss) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.From+"->"+l.Via+" "+l.Path)
	}
	return out
}

// TestCompareAsStored compares a made CronJob with what a round trip gave
// back, as trip does unless strict: both stored as the apiserver would
// (the v1 schema of conversion/roundtrip/testdata/cronjobs-crd.yaml), the
// absent fields that came back as empty structures split from the losses.
func TestCompareAsStored(t *testing.T) {
	_, crd := cronJobs(t, &cronServer{})
	vs, err := served(crd)
	if err != nil {
		t.Fatal(err)
	}
	s, err := structural(crd.Name, vs[0])
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, before, after   string
		wantLost, wantEmptied []string // path: before -> after
	}{
		{name: "nested empty structs and nulls",
			before:      `{"spec":{"schedule":"0 * * * *","jobTemplate":{}}}`,
			after:       `{"spec":{"schedule":"0 * * * *","jobTemplate":{"metadata":{"creationTimestamp":null},"spec":{"template":{"metadata":{"creationTimestamp":null},"spec":{"containers":null}}}}}}`,
			wantEmptied: []string{`spec.jobTemplate.spec: <missing> -> {"template":{"metadata":{},"spec":{}}}`}},
		{name: "a lone empty object or zero reads as absent",
			before: `{"spec":{"jobTemplate":{"spec":{"template":{"spec":{"containers":[{"name":"a"}]}}}}}}`,
			after:  `{"spec":{"suspend":false,"jobTemplate":{"metadata":{},"spec":{"template":{"metadata":{},"spec":{"containers":[{"name":"a","image":""}]}}}}},"status":{}}`},
		{name: "a set value lost is a loss",
			before:   `{"status":{"active":["a"],"conditions":[{"type":"Ready","status":"True"}]}}`,
			after:    `{"status":{"active":["a"]}}`,
			wantLost: []string{`status.conditions: [{"status":"True","type":"Ready"}] -> <missing>`}},
		{name: "fields the schema does not declare are pruned",
			before: `{"spec":{"schedule":"0 * * * *","jobTemplate":{"spec":{}}}}`,
			after:  `{"spec":{"schedule":"0 * * * *","legacyField":"x","jobTemplate":{"spec":{"extra":{"a":1}}}}}`},
		{name: "the topmost absent field is the one reported",
			before:      `{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`,
			after:       `{"status":{"conditions":[{"type":"Ready","status":"True"}]},"spec":{"jobTemplate":{"spec":{"template":{"metadata":{}}}}}}`,
			wantEmptied: []string{`spec: <missing> -> {"jobTemplate":{"spec":{"template":{"metadata":{}}}}}`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var before, after map[string]any
			if err := json.Unmarshal([]byte(tc.before), &before); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.after), &after); err != nil {
				t.Fatal(err)
			}
			asStored(before, s)
			asStored(after, s)
			emptied := changesText(splitEmptied(before, after))
			lost := changesText(meaningful(jsondiff.Fields(before, after)))
			if !slices.Equal(lost, tc.wantLost) || !slices.Equal(emptied, tc.wantEmptied) {
				t.Errorf("lost %q, emptied %q\nwant %q, %q", lost, emptied, tc.wantLost, tc.wantEmptied)
			}
		})
	}
}

func changesText(cs []jsondiff.FieldChange) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Path+": "+c.Before+" -> "+c.After)
	}
	return out
}

// TestRunRefusesASchemaTheApiserverCannotRead: a schema the apiserver's
// structural reading refuses stops the run with advice, unless strict.
func TestRunRefusesASchemaTheApiserverCannotRead(t *testing.T) {
	conv, crd := gadgets(t, &gadgetServer{})
	bad := crd.Spec.Versions[1].Schema.OpenAPIV3Schema
	bad.Properties["spec"] = apiextensionsv1.JSONSchemaProps{Type: "object", Ref: ptr("#/definitions/x")}
	_, err := Run(context.Background(), Options{CRD: crd, Converter: conv, N: 1, Seed: 1})
	fe := fielderr.All(err)
	if len(fe) != 1 || fe[0].Field != "roundtrip.Options.Strict" || !strings.Contains(err.Error(), "$ref") {
		t.Errorf("Run: %v, want the schema refused with advice naming roundtrip.Options.Strict", err)
	}
}

func ptr[T any](v T) *T { return &v }
