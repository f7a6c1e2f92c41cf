package load

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestInputsRead(t *testing.T) {
	tests := []struct {
		name  string
		in    Inputs
		names []string
		err   string
	}{
		{name: "manifest", in: Inputs{Objects: []string{"testdata/pod.yaml"}}, names: []string{"web"}},
		{name: "a suite's CREATE cases only", in: Inputs{Suites: []string{"testdata/suite.yaml"}}, names: []string{"created"}},
		{name: "a recording's CREATE reviews only", in: Inputs{Records: []string{"testdata/record-create.json", "testdata/record-delete.json"}}, names: []string{"recorded"}},
		{name: "all three, in turn", in: Inputs{Objects: []string{"testdata/pod.yaml"}, Suites: []string{"testdata/suite.yaml"}, Records: []string{"testdata/record-create.json"}},
			names: []string{"web", "created", "recorded"}},
		{name: "nothing", in: Inputs{}, err: "nothing to send: give manifests (load.Inputs.Objects)"},
		{name: "a suite without a create", in: Inputs{Suites: []string{"testdata/update-only.yaml"}}, err: "load.Inputs.Suites [testdata/update-only.yaml] has no CREATE case"},
		{name: "a recording without a create", in: Inputs{Records: []string{"testdata/record-delete.json"}}, err: "holds no CREATE review"},
		{name: "a missing file", in: Inputs{Objects: []string{"testdata/none.yaml"}}, err: "none.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := tt.in.Read()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Read() = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, o := range objs {
				names = append(names, o.Object.GetName())
			}
			if strings.Join(names, ",") != strings.Join(tt.names, ",") {
				t.Errorf("objects %v, want %v", names, tt.names)
			}
		})
	}
}

func mapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	return m
}

// Every object goes to the load's namespace as a dry-run, with what the
// apiserver sets itself removed.
func TestResolve(t *testing.T) {
	objs, err := Inputs{Objects: []string{"testdata/pod.yaml"}, Records: []string{"testdata/record-create.json"}}.Read()
	if err != nil {
		t.Fatal(err)
	}
	got, err := resolve(objs, mapper(), "load-ns", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range got {
		t.Run(tg.source, func(t *testing.T) {
			if tg.path != "/api/v1/namespaces/load-ns/pods?dryRun=All&timeout=10s" || tg.resource != "pods" {
				t.Errorf("path %s, resource %s", tg.path, tg.resource)
			}
			var o struct {
				Metadata map[string]any `json:"metadata"`
			}
			if err := json.Unmarshal(tg.body, &o); err != nil {
				t.Fatal(err)
			}
			if o.Metadata["namespace"] != "load-ns" || o.Metadata["uid"] != nil || o.Metadata["creationTimestamp"] != nil {
				t.Errorf("metadata %v: want the load's namespace, no uid, no creationTimestamp", o.Metadata)
			}
		})
	}
}

func TestResolveRefuses(t *testing.T) {
	tests := []struct {
		name, manifest, err string
	}{
		{name: "cluster-scoped", manifest: "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n", err: "Namespace is cluster-scoped: load sends only namespaced creates, each in load.Options.Namespace"},
		{name: "not served", manifest: "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: x}\n", err: "example.com/v1, Kind=Widget is not served by this cluster"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Inputs{Objects: []string{"-"}, Stdin: strings.NewReader(tt.manifest)}.Read()
			if err != nil {
				t.Fatal(err)
			}
			_, err = resolve(objs, mapper(), "ns", time.Second)
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("resolve() = %v, want %q", err, tt.err)
			}
		})
	}
}
