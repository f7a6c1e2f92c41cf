package main

import (
	"context"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hookback/hookback/crdvalidate"
)

// BenchmarkJudge is the per-object CPU of the offline path: the
// HTTPRoute-sized CRD compiled once, then one create judged per
// iteration (ns/op is the cost of one object; 1,000 of them must take
// under 2 s). main's program times the same path beside dry-run creates.
func BenchmarkJudge(b *testing.B) {
	c, err := crdvalidate.Compile(&unstructured.Unstructured{Object: routeCRD()}, "bench")
	if err != nil {
		b.Fatal(err)
	}
	objs := make([]*unstructured.Unstructured, 64)
	for i := range objs {
		objs[i] = &unstructured.Unstructured{Object: route(i)}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		v, err := c.Judge(context.Background(), crdvalidate.Request{Object: objs[i%len(objs)]})
		if err != nil || !v.Allowed {
			b.Fatalf("%v %s", err, v.Message)
		}
		i++
	}
}

// BenchmarkCompile is the once-per-CRD cost, for comparison.
func BenchmarkCompile(b *testing.B) {
	crd := &unstructured.Unstructured{Object: routeCRD()}
	for b.Loop() {
		if _, err := crdvalidate.Compile(crd, "bench"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRun is `hookback validate --crd crd.yaml routes.yaml`
// without the process: the CRD and 1,000 objects read from YAML files,
// the CRD compiled, every object judged (one op is the whole run).
func BenchmarkRun(b *testing.B) {
	objs := make([]*unstructured.Unstructured, 1000)
	for i := range objs {
		objs[i] = &unstructured.Unstructured{Object: route(i)}
	}
	f, err := writeFiles(&unstructured.Unstructured{Object: routeCRD()}, objs)
	b.Cleanup(func() { _ = os.RemoveAll(f.dir) })
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := f.validate(len(objs)); err != nil {
			b.Fatal(err)
		}
	}
}
