package crdvalidate

import (
	"bytes"
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/hookback/hookback/manifests"
)

// TestUpgrade: stored objects under a new CRD: valid, kept by ratcheting
// until the failing field changes, or refused on any update.
func TestUpgrade(t *testing.T) {
	docs, err := manifests.Load([]string{filepath.Join(corpus, "upgrade", "crd.yaml"), filepath.Join(corpus, "upgrade", "stored.yaml")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(docs[0].Object, docs[0].Location())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]UpgradeVerdict{
		"fine": {Class: UpgradeValid},
		"oversized": {Class: UpgradeFailsWhenChanged, Errors: []string{"spec.size: Invalid value: 50: spec.size in body should be less than or equal to 10"},
			Message: `Pool.crdvalidate.hookback.dev "oversized" is invalid: spec.size: Invalid value: 50: spec.size in body should be less than or equal to 10`},
		"negative": {Class: UpgradeFailsAnyUpdate, Errors: []string{".spec.replicas: Invalid value: -1: should be a non-negative integer"},
			Message: `Pool.crdvalidate.hookback.dev "negative" is invalid: .spec.replicas: Invalid value: -1: should be a non-negative integer`},
	}
	for _, d := range docs[1:] {
		t.Run(d.Object.GetName(), func(t *testing.T) {
			got, err := c.Upgrade(context.Background(), d.Object)
			if err != nil {
				t.Fatal(err)
			}
			if w := want[d.Object.GetName()]; !reflect.DeepEqual(got, w) {
				t.Errorf("got %+v\nwant %+v", got, w)
			}
		})
	}
}

// TestAuditStored: the stored objects listed from the cluster (client-go's
// fake dynamic client), each with its class, in every format.
func TestAuditStored(t *testing.T) {
	docs, err := manifests.Load([]string{filepath.Join(corpus, "upgrade", "crd.yaml"), filepath.Join(corpus, "upgrade", "stored.yaml")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(docs[0].Object, docs[0].Location())
	if err != nil {
		t.Fatal(err)
	}
	var objs []runtime.Object
	for _, d := range docs[1:] {
		objs = append(objs, d.Object)
	}
	gvr := schema.GroupVersionResource{Group: "crdvalidate.hookback.dev", Version: "v1", Resource: "pools"}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "PoolList"}, objs...)
	rep, err := AuditStored(context.Background(), client, c)
	if err != nil {
		t.Fatal(err)
	}
	classes := map[string]string{}
	for _, r := range rep {
		classes[r.Name] = r.Class
	}
	want := map[string]string{"default/fine": UpgradeValid, "default/oversized": UpgradeFailsWhenChanged, "default/negative": UpgradeFailsAnyUpdate}
	if !reflect.DeepEqual(classes, want) || rep.Failing() != 2 {
		t.Fatalf("classes %v, failing %d; want %v, 2", classes, rep.Failing(), want)
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"UNDER THE NEW CRD", "fails on any update", "    error: .spec.replicas: Invalid value: -1: should be a non-negative integer"} {
		if !strings.Contains(table.String(), w) {
			t.Errorf("table lacks %q:\n%s", w, table.String())
		}
	}
	if j := rep.JUnit(); j.Tests != 3 || j.Failures != 2 {
		t.Errorf("junit: %d tests, %d failures; want 3, 2", j.Tests, j.Failures)
	}
}
