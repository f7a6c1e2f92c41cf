// Command crdvalidate measures `hookback validate` beside the apiserver
// it imitates, in the same run: N objects of an HTTPRoute-sized CRD
// (schema.go: about 400 KB of schema, CEL rules under bounded lists)
// judged as creates in process (the CRD compiled once, then each object
// through the apiserver's customresource strategy), and, as the
// reference, the same objects sent to the local control plane as
// server-side dry-run creates with the CRD installed (KUBECONFIG;
// without it only the offline figures are printed). Rounds alternate.
// Each round prints the load average, the offline path on one core with
// its CPU per object, and the whole of `hookback validate` on the same
// objects read from YAML files (objects judged on every core), which the
// reference is compared with. Target: 1,000 objects in under 2 s.
// The benchmarks beside (go test -bench .) give the same path's ns/op.
//
// Run from test/bench/: KUBECONFIG=$(../../hack/cluster/up | tail -1) go run ./crdvalidate -objects 1000 -rounds 3
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hookback/hookback/crdvalidate"
)

func main() {
	objects := flag.Int("objects", 1000, "objects judged per round")
	rounds := flag.Int("rounds", 3, "rounds, offline and reference alternating")
	flag.Parse()
	if err := run(*objects, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "crdvalidate:", err)
		os.Exit(1)
	}
}

var (
	crdGVR   = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	routeGVR = schema.GroupVersionResource{Group: group, Version: "v1", Resource: "routes"}
)

func run(n, rounds int) error {
	crd := &unstructured.Unstructured{Object: routeCRD()}
	raw, err := json.Marshal(crd.Object)
	if err != nil {
		return err
	}
	fmt.Printf("CRD %s: %d KB of JSON; %d objects per round\n", crd.GetName(), len(raw)/1024, n)
	objs := make([]*unstructured.Unstructured, n)
	for i := range objs {
		objs[i] = &unstructured.Unstructured{Object: route(i)}
	}
	var dyn dynamic.Interface
	if kc := os.Getenv("KUBECONFIG"); kc != "" {
		if dyn, err = install(kc, crd); err != nil {
			return err
		}
		defer func() { _ = dyn.Resource(crdGVR).Delete(context.Background(), crd.GetName(), metav1.DeleteOptions{}) }()
	}
	files, err := writeFiles(crd, objs)
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(files.dir) }()
	for r := 1; r <= rounds; r++ {
		fmt.Printf("round %d: load average %s\n", r, loadavg())
		cpu0 := cpuTime()
		compile, judge, err := offline(crd, objs)
		if err != nil {
			return err
		}
		cpu := cpuTime() - cpu0
		fmt.Printf("round %d: hookback, one core: compile %s, %d creates judged in %s (%s each, %s of CPU each)\n",
			r, compile.Round(time.Millisecond), n, judge.Round(time.Millisecond), (judge / time.Duration(n)).Round(time.Microsecond),
			((cpu - compile) / time.Duration(n)).Round(time.Microsecond))
		whole, err := files.validate(n)
		if err != nil {
			return err
		}
		fmt.Printf("round %d: hookback validate (YAML read, CRD compiled, objects judged on %d cores): %s (target under 2s)\n",
			r, runtime.GOMAXPROCS(0), whole.Round(time.Millisecond))
		if dyn == nil {
			continue
		}
		ref, err := dryRuns(dyn, objs)
		if err != nil {
			return err
		}
		fmt.Printf("round %d: apiserver dry-run creates, one at a time: %s (%s each); hookback %.1fx faster\n",
			r, ref.Round(time.Millisecond), (ref / time.Duration(n)).Round(time.Microsecond), float64(ref)/float64(whole))
	}
	return nil
}

// offline compiles the CRD and judges every object, as validate does.
func offline(crd *unstructured.Unstructured, objs []*unstructured.Unstructured) (compile, judge time.Duration, err error) {
	start := time.Now()
	c, err := crdvalidate.Compile(crd, "bench")
	if err != nil {
		return 0, 0, err
	}
	compile = time.Since(start)
	start = time.Now()
	for _, o := range objs {
		v, err := c.Judge(context.Background(), crdvalidate.Request{Object: o})
		if err != nil {
			return 0, 0, err
		}
		if !v.Allowed {
			return 0, 0, fmt.Errorf("%s: %s", o.GetName(), v.Message)
		}
	}
	return compile, time.Since(start), nil
}

// install creates the CRD and waits until its objects are served.
func install(kubeconfig string, crd *unstructured.Unstructured) (dynamic.Interface, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = 1000, 1000
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	if _, err := dyn.Resource(crdGVR).Create(ctx, crd.DeepCopy(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create CRD: %w", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := dyn.Resource(routeGVR).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil {
			return dyn, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("CRD not served after 30s: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// dryRuns sends every object as a dry-run create, one after the other.
func dryRuns(dyn dynamic.Interface, objs []*unstructured.Unstructured) (time.Duration, error) {
	r := dyn.Resource(routeGVR).Namespace("default")
	start := time.Now()
	for _, o := range objs {
		if _, err := r.Create(context.Background(), o, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			return 0, fmt.Errorf("dry-run %s: %w", o.GetName(), err)
		}
	}
	return time.Since(start), nil
}
