package crdvalidate

import (
	"fmt"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// coercion is how an object enters: as a request body (unknown fields
// tracked, malformed metadata an error) or as read from storage
// (malformed metadata dropped, a missing generation repaired).
type coercion struct {
	fromStorage bool
}

// decode does to u what the CRD handler's decoder does to a request body
// or a stored object before anything judges it: the unexported
// unstructuredSchemaCoercer.apply of k8s.io/apiextensions-apiserver
// pkg/apiserver/customresource_handler.go (v0.36.3), step for step, with
// the exported pieces it calls, followed by the codec's defaulting
// (unstructuredDefaulter). It returns the unknown fields' paths, which
// the apiserver returns as warnings under fieldValidation=Warn (its
// default) and refuses under Strict.
func (c *CRD) decode(u *unstructured.Unstructured, how coercion) (unknown []string, err error) {
	kind, foundKind, err := unstructured.NestedString(u.Object, "kind")
	if err != nil {
		return nil, err
	}
	apiVersion, foundAPIVersion, err := unstructured.NestedString(u.Object, "apiVersion")
	if err != nil {
		return nil, err
	}
	objectMeta, foundObjectMeta, metaUnknown, err := schemaobjectmeta.GetObjectMetaWithOptions(u.Object, schemaobjectmeta.ObjectMetaOptions{
		DropMalformedFields:     how.fromStorage,
		ReturnUnknownFieldPaths: !how.fromStorage,
	})
	if err != nil {
		return nil, err
	}
	unknown = append(unknown, metaUnknown...)
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, err
	}
	s := c.schemas[gv.Version]
	if gv.Group != c.crd.Spec.Group || kind != c.crd.Spec.Names.Kind {
		return nil, fmt.Errorf("%s %s is not a kind of CRD %s", apiVersion, kind, c.Name)
	}
	if !c.preserveUnknown {
		opts := structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: !how.fromStorage}
		unknown = append(unknown, structuralpruning.PruneWithOptions(u.Object, s, true, opts)...)
		structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, s)
	}
	ferr, paths := schemaobjectmeta.CoerceWithOptions(nil, u.Object, s, false, schemaobjectmeta.CoerceOptions{
		DropInvalidFields:       how.fromStorage,
		ReturnUnknownFieldPaths: !how.fromStorage,
	})
	if ferr != nil {
		return nil, ferr
	}
	unknown = append(unknown, paths...)
	if how.fromStorage && objectMeta.Generation == 0 {
		objectMeta.Generation = 1
	}
	if foundKind {
		u.SetKind(kind)
	}
	if foundAPIVersion {
		u.SetAPIVersion(apiVersion)
	}
	if foundObjectMeta {
		if err := schemaobjectmeta.SetObjectMeta(u.Object, objectMeta); err != nil {
			return nil, err
		}
	}
	if s != nil {
		structuraldefaulting.Default(u.Object, s)
	}
	return unknown, nil
}
