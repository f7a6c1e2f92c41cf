package crdvalidate

import (
	"encoding/json"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/openapi"
	"k8s.io/kube-openapi/pkg/spec3"
)

// OpenAPI is the CRDs' schemas as the apiserver publishes them at
// /openapi/v3/apis/GROUP/VERSION (apiextensions' own builder, every
// version of each CRD), for what needs a custom resource's types without
// a cluster: the policy engine's ApplyConfiguration merges
// (policy.Options.OpenAPI), which refuse a kind with no schema.
func OpenAPI(crds []*CRD) (openapi.Client, error) {
	byGV := map[schema.GroupVersion][]*spec3.OpenAPI{}
	for _, c := range crds {
		if c.native {
			continue // a built-in kind: the policy engine has its types
		}
		for _, v := range c.crd.Spec.Versions {
			doc, err := builder.BuildOpenAPIV3(c.crd, v.Name, builder.Options{})
			if err != nil {
				return nil, fmt.Errorf("the OpenAPI schema of CRD %s version %s: %w", c.Name, v.Name, err)
			}
			gv := schema.GroupVersion{Group: c.crd.Spec.Group, Version: v.Name}
			byGV[gv] = append(byGV[gv], doc)
		}
	}
	paths := offlineOpenAPI{}
	for gv, docs := range byGV {
		merged, err := builder.MergeSpecsV3(docs...)
		if err != nil {
			return nil, fmt.Errorf("the OpenAPI schemas of %s: %w", gv, err)
		}
		b, err := json.Marshal(merged)
		if err != nil {
			return nil, err
		}
		path := "apis/" + gv.String()
		paths[path] = offlineGroupVersion{path: path, doc: b}
	}
	return paths, nil
}

// offlineOpenAPI is an openapi.Client over documents at hand.
type offlineOpenAPI map[string]openapi.GroupVersion

func (o offlineOpenAPI) Paths() (map[string]openapi.GroupVersion, error) { return o, nil }

type offlineGroupVersion struct {
	path string
	doc  []byte
}

func (g offlineGroupVersion) Schema(contentType string) ([]byte, error) {
	if contentType != "application/json" {
		return nil, fmt.Errorf("crdvalidate: OpenAPI of %s: only application/json, not %s", g.path, contentType)
	}
	return g.doc, nil
}

func (g offlineGroupVersion) ServerRelativeURL() string { return "/openapi/v3/" + g.path }
