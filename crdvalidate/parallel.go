package crdvalidate

import (
	"context"
	"runtime"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hookback/hookback/manifests"
)

// judgeAll judges docs on every core, results in the order of docs. A
// compiled CRD is read-only, as the apiserver's strategies are, which
// judge concurrent requests with one validator: each object is a
// request of its own. The CPU per object is the apiserver's own
// (its CEL and OpenAPI validators), so what is left to win on a large
// run is the cores.
func (s Set) judgeAll(ctx context.Context, docs []manifests.Document, olds map[objectKey]*unstructured.Unstructured, o Options) Report {
	report := make(Report, len(docs))
	workers := min(runtime.GOMAXPROCS(0), len(docs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				report[i] = s.judgeDoc(ctx, docs[i], olds, o)
			}
		})
	}
	for i := range docs {
		next <- i
	}
	close(next)
	wg.Wait()
	return report
}
