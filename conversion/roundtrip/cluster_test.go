package roundtrip

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

func storedGadget(name, ns, schedule string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.hookback.dev/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": name, "namespace": ns, "resourceVersion": "7", "labels": map[string]any{"from": "cluster"}},
		"spec":     map[string]any{"size": int64(4), "schedule": schedule},
	}}
}

// TestClusterSeeds: the cluster's objects are listed in the storage
// version, across namespaces, with the limit, and the fuzzer starts from
// them: each version's first objects are the seeds (converted for v2),
// the rest variations of them within the schema.
func TestClusterSeeds(t *testing.T) {
	conv, crd := gadgets(t, &gadgetServer{})
	gvr := schema.GroupVersionResource{Group: "test.hookback.dev", Version: "v1", Resource: "gadgets"}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "GadgetList"},
		storedGadget("a", "team-a", "*/1 * * * *"), storedGadget("b", "team-b", "*/2 * * * *"), storedGadget("c", "team-b", "*/3 * * * *"))
	// The fake client passes no ListOptions to its reactors and ignores
	// Limit: the two seeds of three show ClusterSeeds' own bound.
	var versions []string
	client.PrependReactor("list", "gadgets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		versions = append(versions, a.GetResource().Version)
		return false, nil, nil
	})
	seeds, err := ClusterSeeds(context.Background(), client, crd, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(seeds) != 2 || len(versions) != 1 || versions[0] != "v1" {
		t.Fatalf("%d seeds, lists in %v: want 2 seeds from one list of v1 (the storage version)", len(seeds), versions)
	}
	r, err := newRunner(Options{CRD: crd, Converter: conv, N: 12, Seed: 3, Seeds: seeds})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := r.objects(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	schedules := map[string]int{}
	for i, m := range objs {
		meta, _ := m.obj["metadata"].(map[string]any)
		if labels, _ := meta["labels"].(map[string]any); labels["from"] != "cluster" {
			t.Errorf("%s %v: want the cluster object's labels kept", m.version, meta)
		}
		if meta["resourceVersion"] != nil {
			t.Errorf("%s %v: the stored object's resourceVersion is kept", m.version, meta)
		}
		spec, _ := m.obj["spec"].(map[string]any)
		schedules[m.version+" "+strings.TrimSpace(spec["schedule"].(string))]++
		if i == 12 && spec["count"] == nil {
			t.Errorf("first v2 object %v: want the cluster's first object converted to v2", m.obj)
		}
	}
	if schedules["v1 */1 * * * *"] == 0 || schedules["v1 */2 * * * *"] == 0 || schedules["v1 */3 * * * *"] != 0 {
		t.Errorf("v1 schedules %v: want the two listed objects' (and not the third's)", schedules)
	}
	if len(schedules) < 4 {
		t.Errorf("schedules %v: want variations beyond the seeds'", schedules)
	}
}

// TestClusterSeedsNotServed: a CRD the cluster does not serve is a clear
// error that says what to do.
func TestClusterSeedsNotServed(t *testing.T) {
	_, crd := gadgets(t, &gadgetServer{})
	gvr := schema.GroupVersionResource{Group: "test.hookback.dev", Version: "v1", Resource: "gadgets"}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "GadgetList"})
	client.PrependReactor("list", "gadgets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(gvr.GroupResource(), "")
	})
	_, err := ClusterSeeds(context.Background(), client, crd, 5)
	if err == nil || !strings.Contains(err.Error(), "install the CRD, or start from no objects of the cluster") {
		t.Errorf("err = %v", err)
	}
}
