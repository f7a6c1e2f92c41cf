package policy

import (
	"context"
	"os"
	"testing"

	"github.com/hookback/hookback/admission"
)

// BenchmarkEvaluate: the docs' example policy on the shared pod fixture
// (not matched: a Deployment policy) and the actions policy (matched).
func BenchmarkEvaluate(b *testing.B) {
	raw, err := os.ReadFile("../testdata/admission/pod-create.v1.json")
	if err != nil {
		b.Fatal(err)
	}
	req, err := admission.NewRequest(raw)
	if err != nil {
		b.Fatal(err)
	}
	set, err := Load([]string{"testdata/actions/policy.yaml"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	e, err := New(context.Background(), set, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Evaluate(context.Background(), &req.AdmissionRequest); err != nil {
			b.Fatal(err)
		}
	}
}
