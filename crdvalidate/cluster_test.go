package crdvalidate

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/hookback/hookback/manifests"
)

// clusterWith is a fake cluster serving the CRDs of the manifests given,
// as the apiserver stores them (with a uid, resourceVersion and status).
func clusterWith(t *testing.T, paths ...string) *fake.FakeDynamicClient {
	t.Helper()
	var objs []runtime.Object
	if len(paths) > 0 {
		docs, err := manifests.Load(paths, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			u := d.Object.DeepCopy()
			u.SetUID("0b6cbd36-0d1a-4f4e-9d8e-1c1c5a3f2d10")
			u.SetResourceVersion("42")
			u.Object["status"] = map[string]any{"acceptedNames": map[string]any{"kind": "Widget", "plural": "widgets"}}
			objs = append(objs, u)
		}
	}
	return fake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{CRDResource: "CustomResourceDefinitionList"}, objs...)
}

// TestFromCluster: the CRDs read from the cluster judge as the same CRDs
// read from files; a kind the cluster has no CRD for, and a list it
// forbids, are errors that say what to do.
func TestFromCluster(t *testing.T) {
	crd := filepath.Join(corpus, "widgets-crd.yaml")
	objects := []string{filepath.Join(corpus, "create")}
	want, err := Run(context.Background(), Options{CRDs: []string{crd}, Objects: objects}, nil)
	if err != nil {
		t.Fatal(err)
	}
	forbidden := clusterWith(t, crd)
	forbidden.PrependReactor("list", "customresourcedefinitions", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(CRDResource.GroupResource(), "", nil)
	})
	for _, tc := range []struct {
		name    string
		opts    Options
		wantErr []string
	}{
		{name: "the cluster's CRD", opts: Options{Objects: objects, FromCluster: clusterWith(t, crd)}},
		{name: "files win", opts: Options{CRDs: []string{crd}, Objects: objects, FromCluster: clusterWith(t, filepath.Join(corpus, "widgets-crd-v0.yaml"))}},
		{name: "missing kind", opts: Options{Objects: objects, FromCluster: clusterWith(t)},
			wantErr: []string{"the cluster has no CustomResourceDefinition of Widget.crdvalidate.hookback.dev", "install it there", "give it with crdvalidate.Options.CRDs"}},
		{name: "forbidden", opts: Options{Objects: objects, FromCluster: forbidden},
			wantErr: []string{"forbidden", "needs the RBAC verb list on customresourcedefinitions (apiGroup apiextensions.k8s.io"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Run(context.Background(), tc.opts, nil)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error; want one saying %q", tc.wantErr)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d results, want %d", len(got), len(want))
			}
			for i := range want {
				g, w := canonical(t, got[i]), canonical(t, want[i])
				if g.Allowed != w.Allowed || g.Message != w.Message || strings.Join(g.Warnings, "|") != strings.Join(w.Warnings, "|") {
					t.Errorf("%s: from the cluster %v %q %q; from the file %v %q %q", w.Name, g.Allowed, g.Message, g.Warnings, w.Allowed, w.Message, w.Warnings)
				}
			}
		})
	}
}
