package crdvalidate

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/crdserverscheme"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/spec3"

	"github.com/hookback/hookback/manifests"
)

// Native kinds (Deployment, Pod, ConfigMap...) have no CRD: they are
// judged against the OpenAPI v3 schema of their group-version, from the
// cluster or the bundle, the way kubectl-validate judges them. Their
// schema is turned into a structural schema and run through the same
// apiextensions-apiserver strategy as a custom resource's: types,
// formats, enums, required fields, list types and unknown fields are the
// schema's checks, with the apiserver's messages. What the apiserver
// runs for native kinds beyond the schema (the hand-written validation of
// k8s.io/kubernetes pkg/apis/.../validation: a DNS-1123 container name, a
// selector that matches the template's labels) is not run.

// nativeKinds compiles native kinds from one source of schemas, each
// group-version's document read once per run.
type nativeKinds struct {
	src  NativeSchemas
	docs map[string]*nativeDoc
}

// nativeDoc is one group-version's OpenAPI document, decoded.
type nativeDoc struct {
	defs       map[string]*specSchema
	namespaced map[schema.GroupVersionKind]bool
	err        error
}

// openAPIPath is where the apiserver serves gv's OpenAPI v3 document,
// under /openapi/v3/.
func openAPIPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}

// addNative compiles the native kinds of objs that s has no CRD for and
// src has a schema for; kinds src does not know are left out (judgeDoc
// says so).
func (s Set) addNative(src NativeSchemas, objs []*unstructured.Unstructured) error {
	if src == nil {
		return nil
	}
	n := &nativeKinds{src: src, docs: map[string]*nativeDoc{}}
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		c, ok := s[gvk.GroupKind()]
		if ok && (!c.native || c.versions[gvk.Version] != nil) {
			continue
		}
		if gvk.Kind == "" || gvk.Version == "" {
			continue
		}
		doc := n.doc(gvk.GroupVersion())
		if doc.err != nil {
			return doc.err
		}
		if doc.defs == nil {
			continue
		}
		c, err := doc.compile(gvk, c, src.Name())
		if err != nil {
			return err
		}
		if c != nil {
			s.Add(c)
		}
	}
	return nil
}

func (n *nativeKinds) doc(gv schema.GroupVersion) *nativeDoc {
	p := openAPIPath(gv)
	if d, ok := n.docs[p]; ok {
		return d
	}
	d := &nativeDoc{}
	n.docs[p] = d
	raw, err := n.src.Document(p)
	if err != nil || raw == nil {
		d.err = err
		return d
	}
	d.defs, d.namespaced, d.err = decodeOpenAPI(raw)
	if d.err != nil {
		d.err = fmt.Errorf("the OpenAPI schema of %s from %s: %w", gv, n.src.Name(), d.err)
	}
	return d
}

// decodeOpenAPI reads a group-version's document: its schemas, and which
// kinds are namespaced (those served under namespaces/{namespace}).
func decodeOpenAPI(raw []byte) (map[string]*specSchema, map[schema.GroupVersionKind]bool, error) {
	var doc spec3.OpenAPI
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, nil, err
	}
	if doc.Components == nil || doc.Components.Schemas == nil {
		return nil, nil, fmt.Errorf("no components.schemas")
	}
	namespaced := map[schema.GroupVersionKind]bool{}
	if doc.Paths != nil {
		for p, item := range doc.Paths.Paths {
			if item == nil || !strings.Contains(p, "/namespaces/{namespace}/") {
				continue
			}
			for _, op := range []*spec3.Operation{item.Get, item.Post, item.Put} {
				if op == nil {
					continue
				}
				for _, gvk := range gvksOf(op.Extensions["x-kubernetes-group-version-kind"]) {
					namespaced[gvk] = true
				}
			}
		}
	}
	return doc.Components.Schemas, namespaced, nil
}

// gvksOf reads an x-kubernetes-group-version-kind extension: one GVK or
// a list of them.
func gvksOf(ext any) []schema.GroupVersionKind {
	var list []any
	switch v := ext.(type) {
	case []any:
		list = v
	case map[string]any:
		list = []any{v}
	}
	var out []schema.GroupVersionKind
	for _, e := range list {
		m, _ := e.(map[string]any)
		g, _ := m["group"].(string)
		v, _ := m["version"].(string)
		k, _ := m["kind"].(string)
		out = append(out, schema.GroupVersionKind{Group: g, Version: v, Kind: k})
	}
	return out
}

// compile makes gvk's strategy from its definition, as a version of into
// (the kind's other versions), or of a new CRD-less *CRD. It is nil when
// the document has no such kind.
func (d *nativeDoc) compile(gvk schema.GroupVersionKind, into *CRD, source string) (*CRD, error) {
	name := ""
	for n, def := range d.defs {
		for _, g := range gvksOf(def.Extensions["x-kubernetes-group-version-kind"]) {
			if g == gvk {
				name = n
			}
		}
	}
	if name == "" {
		return nil, nil
	}
	props, err := d.structural(name)
	if err != nil {
		return nil, fmt.Errorf("the schema of %s from %s: %w", gvk, source, err)
	}
	s, err := structuralschema.NewStructural(props)
	if err != nil {
		return nil, fmt.Errorf("the schema of %s from %s: %w", gvk, source, err)
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(props)
	if err != nil {
		return nil, fmt.Errorf("the schema of %s from %s: %w", gvk, source, err)
	}
	if into == nil {
		scope := apiextensionsv1.ClusterScoped
		if d.namespaced[gvk] {
			scope = apiextensionsv1.NamespaceScoped
		}
		into = &CRD{Name: gvk.GroupKind().String() + " (built-in)", Source: source, native: true,
			crd: &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: gvk.Group, Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: gvk.Kind}, Scope: scope}},
			schemas: map[string]*structuralschema.Structural{}, versions: map[string]*version{}}
	}
	into.schemas[gvk.Version] = s
	strategyKind := gvk
	if strategyKind.Group == "" {
		strategyKind.Group = coreGroup
	}
	into.versions[gvk.Version] = &version{served: true, main: customresource.NewStrategy(crdserverscheme.NewUnstructuredObjectTyper(),
		into.NamespaceScoped(), strategyKind, validator, nil, s, nil, nil, nil)}
	return into, nil
}

// structural is the definition name with every reference resolved, as
// the apiextensions types a CRD's schema is read into.
func (d *nativeDoc) structural(name string) (*apiextensions.JSONSchemaProps, error) {
	r := &resolver{defs: d.defs, done: map[string]*specSchema{}, stack: map[string]bool{}}
	resolved, err := r.ref(name, nil)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(resolved)
	if err != nil {
		return nil, err
	}
	v1 := &apiextensionsv1.JSONSchemaProps{}
	if err := json.Unmarshal(raw, v1); err != nil {
		return nil, err
	}
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v1, internal, nil); err != nil {
		return nil, err
	}
	return internal, nil
}

func (o Options) schemas() NativeSchemas {
	if o.Schemas == nil {
		return Bundled{}
	}
	return o.Schemas
}

func objectsOf(docs []manifests.Document) []*unstructured.Unstructured {
	objs := make([]*unstructured.Unstructured, len(docs))
	for i, d := range docs {
		objs[i] = d.Object
	}
	return objs
}

// noSchema says why an object of gvk was not judged: a custom kind needs
// its CRD; a built-in one a schema src lacks.
func noSchema(gvk schema.GroupVersionKind, src NativeSchemas) string {
	if builtinGroup(gvk.Group) {
		if _, bundled := src.(Bundled); bundled {
			return fmt.Sprintf("%s has no schema for %s among %s: judge it against the cluster's schemas instead", gvk.GroupVersion(), gvk.Kind, src.Name())
		}
		return fmt.Sprintf("%s has no schema for %s among %s: is it served there?", gvk.GroupVersion(), gvk.Kind, src.Name())
	}
	return fmt.Sprintf("%s: give the CustomResourceDefinition of %s", ErrNoCRD, gvk.GroupKind())
}

// builtinGroup reports a group of Kubernetes itself: the core group, and
// the *.k8s.io and unsuffixed ones (apps, batch, policy, autoscaling).
func builtinGroup(g string) bool {
	return g == "" || strings.HasSuffix(g, ".k8s.io") || !strings.Contains(g, ".")
}

// coreGroup stands for the core group in the strategy of a core kind: the
// custom resource strategy wants an apiVersion of group/version (as
// kubectl-validate does too).
const coreGroup = "core"

// asCore readies obj, of a core kind, for its strategy, and returns what
// turns the strategy's error back into the apiserver's (`Pod "p" is
// invalid`, not `Pod.core "p"`) and obj back to v1. Other kinds are left
// alone.
func (c *CRD) asCore(obj *unstructured.Unstructured) func(error) error {
	if !c.native || c.crd.Spec.Group != "" {
		return func(err error) error { return err }
	}
	apiVersion := obj.GetAPIVersion()
	obj.SetAPIVersion(coreGroup + "/" + apiVersion)
	return func(err error) error {
		obj.SetAPIVersion(apiVersion)
		var se *apierrors.StatusError
		if !errors.As(err, &se) || se.ErrStatus.Details == nil || se.ErrStatus.Details.Group != coreGroup {
			return err
		}
		st := se.ErrStatus
		d := *st.Details
		d.Group = ""
		st.Details = &d
		st.Message = strings.Replace(st.Message, d.Kind+"."+coreGroup+" ", d.Kind+" ", 1)
		return &apierrors.StatusError{ErrStatus: st}
	}
}
