// Package crdvalidate judges custom resources as the kube-apiserver would,
// without one: a CRD is checked as the apiserver checks it on create (its
// own validation, CEL compilation and cost limits included), then compiled
// into the apiextensions-apiserver's own strategy for each version, whose
// Validate and ValidateUpdate run the structural schema, OpenAPI
// validation, list-type and embedded-object checks and the CEL validator
// with ratcheting. Objects are pruned and defaulted on the way in as the
// apiserver's decoder does, and judged through k8s.io/apiserver's
// rest.BeforeCreate and rest.BeforeUpdate, so the errors are the
// apiserver's own, text for text. Nothing here rewrites that code: the
// only glue is the decoder's coercion (coerce.go), which is unexported
// upstream.
package crdvalidate

import (
	"context"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/crdserverscheme"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresourcedefinition"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// CRD is a CustomResourceDefinition the apiserver would accept, compiled
// once: each version's strategies are built as the apiserver's CRD
// handler builds them (CEL programs compiled there), and reused for every
// object.
type CRD struct {
	// Name is metadata.name; Source names where it was read, for messages.
	Name, Source string
	// Warnings are what the apiserver would return on creating it.
	Warnings []string

	crd             *apiextensionsv1.CustomResourceDefinition
	native          bool // a built-in kind, judged by its OpenAPI schema (native.go)
	preserveUnknown bool
	schemas         map[string]*structuralschema.Structural
	versions        map[string]*version
}

// version is one version's strategies.
type version struct {
	served bool
	main   strategy
	// status is nil when the version has no status subresource.
	status rest.RESTUpdateStrategy
}

// strategy is what the apiserver's CustomResource strategy is to
// rest.BeforeCreate and rest.BeforeUpdate.
type strategy interface {
	rest.RESTCreateStrategy
	rest.RESTUpdateStrategy
}

// InvalidCRDError is a CRD the apiserver would refuse, with its reason:
// the apiserver's own message (`CustomResourceDefinition.apiextensions.k8s.io
// "x" is invalid: ...`).
type InvalidCRDError struct {
	Source string
	Err    error
}

func (e *InvalidCRDError) Error() string {
	return fmt.Sprintf("%s: the apiserver would refuse this CRD: %v", e.Source, e.Err)
}

func (e *InvalidCRDError) Unwrap() error { return e.Err }

// crdScheme types the internal CRD for the CRD strategy, as the
// apiextensions-apiserver's own scheme does.
func crdScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}

// Compile checks crd (an apiextensions.k8s.io/v1 CustomResourceDefinition
// as read from a manifest) as the apiserver does on create, then compiles
// it. A CRD the apiserver would refuse is an *InvalidCRDError.
func Compile(u *unstructured.Unstructured, source string) (*CRD, error) {
	v1crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, v1crd); err != nil {
		return nil, &InvalidCRDError{Source: source, Err: fmt.Errorf("decode CustomResourceDefinition: %w", err)}
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(v1crd)
	warnings, err := admitCRD(v1crd)
	if err != nil {
		return nil, &InvalidCRDError{Source: source, Err: err}
	}
	c := &CRD{Name: v1crd.Name, Source: source, Warnings: warnings, crd: v1crd,
		preserveUnknown: v1crd.Spec.PreserveUnknownFields,
		schemas:         map[string]*structuralschema.Structural{}, versions: map[string]*version{}}
	if err := c.compileSchemas(); err != nil {
		return nil, &InvalidCRDError{Source: source, Err: err}
	}
	for _, v := range v1crd.Spec.Versions {
		ver, err := c.compileVersion(v)
		if err != nil {
			return nil, &InvalidCRDError{Source: source, Err: fmt.Errorf("version %s: %w", v.Name, err)}
		}
		c.versions[v.Name] = ver
	}
	return c, nil
}

// admitCRD runs the apiserver's CRD create path (the CRD strategy through
// rest.BeforeCreate) on the internal version of crd, which it leaves
// alone, and returns the warnings it would send.
func admitCRD(v1crd *apiextensionsv1.CustomResourceDefinition) ([]string, error) {
	internal := &apiextensions.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(v1crd.DeepCopy(), internal, nil); err != nil {
		return nil, fmt.Errorf("convert CustomResourceDefinition: %w", err)
	}
	rest.FillObjectMetaSystemFields(internal)
	ctx, warnings := withWarnings(genericapirequest.WithNamespace(context.Background(), metav1.NamespaceNone))
	if err := rest.BeforeCreate(customresourcedefinition.NewStrategy(crdScheme()), ctx, internal); err != nil {
		return nil, err
	}
	return warnings.list, nil
}

// compileSchemas makes each version's structural schema as the CRD
// handler does: defaults pruned, unless the CRD preserves unknown fields.
func (c *CRD) compileSchemas() error {
	for _, v := range c.crd.Spec.Versions {
		val, err := apihelpers.GetSchemaForVersion(c.crd, v.Name)
		if err != nil {
			return err
		}
		if val == nil {
			continue
		}
		internal := &apiextensions.CustomResourceValidation{}
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(val, internal, nil); err != nil {
			return fmt.Errorf("convert the schema of version %s: %w", v.Name, err)
		}
		s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
		if c.preserveUnknown {
			if err == nil {
				c.schemas[v.Name] = s
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("the schema of version %s is not structural: %w", v.Name, err)
		}
		s = s.DeepCopy()
		if err := structuraldefaulting.PruneDefaults(s); err != nil {
			return fmt.Errorf("prune the defaults of version %s: %w", v.Name, err)
		}
		c.schemas[v.Name] = s
	}
	return nil
}

// compileVersion builds v's strategies as the CRD handler's
// getOrCreateServingInfoFor does.
func (c *CRD) compileVersion(v apiextensionsv1.CustomResourceDefinitionVersion) (*version, error) {
	val, err := apihelpers.GetSchemaForVersion(c.crd, v.Name)
	if err != nil {
		return nil, err
	}
	var props *apiextensions.JSONSchemaProps
	if val != nil {
		internal := &apiextensions.CustomResourceValidation{}
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(val, internal, nil); err != nil {
			return nil, fmt.Errorf("convert the schema: %w", err)
		}
		props = internal.OpenAPIV3Schema
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(props)
	if err != nil {
		return nil, fmt.Errorf("schema validator: %w", err)
	}
	subresources, err := apihelpers.GetSubresourcesForVersion(c.crd, v.Name)
	if err != nil {
		return nil, err
	}
	var statusSpec *apiextensions.CustomResourceSubresourceStatus
	var statusValidator apiservervalidation.SchemaValidator
	if subresources != nil && subresources.Status != nil {
		statusSpec = &apiextensions.CustomResourceSubresourceStatus{}
		if props != nil && props.Properties != nil {
			if statusSchema, ok := props.Properties["status"]; ok {
				if statusValidator, _, err = apiservervalidation.NewSchemaValidator(&statusSchema); err != nil {
					return nil, fmt.Errorf("status schema validator: %w", err)
				}
			}
		}
	}
	var scaleSpec *apiextensions.CustomResourceSubresourceScale
	if subresources != nil && subresources.Scale != nil {
		scaleSpec = &apiextensions.CustomResourceSubresourceScale{}
		if err := apiextensionsv1.Convert_v1_CustomResourceSubresourceScale_To_apiextensions_CustomResourceSubresourceScale(subresources.Scale, scaleSpec, nil); err != nil {
			return nil, fmt.Errorf("convert the scale subresource: %w", err)
		}
	}
	kind := schema.GroupVersionKind{Group: c.crd.Spec.Group, Version: v.Name, Kind: c.crd.Spec.Names.Kind}
	s := customresource.NewStrategy(crdserverscheme.NewUnstructuredObjectTyper(),
		c.crd.Spec.Scope == apiextensionsv1.NamespaceScoped, kind, validator, statusValidator,
		c.schemas[v.Name], statusSpec, scaleSpec, v.SelectableFields)
	ver := &version{served: v.Served, main: s}
	if statusSpec != nil {
		ver.status = customresource.NewStatusStrategy(s)
	}
	return ver, nil
}

// GroupKind is the kind of the CRD's objects.
func (c *CRD) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: c.crd.Spec.Group, Kind: c.crd.Spec.Names.Kind}
}

// NamespaceScoped reports whether its objects live in namespaces.
func (c *CRD) NamespaceScoped() bool {
	return c.crd.Spec.Scope == apiextensionsv1.NamespaceScoped
}
