package crdvalidate

import (
	"fmt"
	"path"

	"k8s.io/kube-openapi/pkg/validation/spec"
)

type specSchema = spec.Schema

// resolver inlines the references of an OpenAPI document's schemas, as
// kubectl-validate does before making a structural schema (which has no
// references): a property that is a reference, or an allOf of one
// reference (how the apiserver writes a reference with a default or a
// description beside it), becomes a copy of the definition with the
// property's own default, nullable and extensions laid over it.
type resolver struct {
	defs  map[string]*specSchema
	done  map[string]*specSchema
	stack map[string]bool
}

// ref is definition name resolved, with over's fields laid over it.
func (r *resolver) ref(name string, over *specSchema) (*specSchema, error) {
	resolved, ok := r.done[name]
	if !ok {
		def, found := r.defs[name]
		if !found {
			return nil, fmt.Errorf("reference to %s, which the document does not define", name)
		}
		if r.stack[name] {
			// A structural schema cannot be recursive (the
			// apiextensions.k8s.io types are).
			return nil, fmt.Errorf("%s refers to itself", name)
		}
		r.stack[name] = true
		var err error
		if resolved, err = r.schema(def); err != nil {
			return nil, err
		}
		delete(r.stack, name)
		r.done[name] = resolved
	}
	if over == nil {
		return resolved, nil
	}
	merged := *resolved
	if over.Default != nil {
		merged.Default = over.Default
	}
	merged.Nullable = merged.Nullable || over.Nullable
	if len(over.Extensions) > 0 {
		merged.Extensions = spec.Extensions{}
		for k, v := range resolved.Extensions {
			merged.Extensions.Add(k, v)
		}
		for k, v := range over.Extensions {
			merged.Extensions.Add(k, v)
		}
	}
	return &merged, nil
}

// schema is s with its references resolved, s left alone.
func (r *resolver) schema(s *specSchema) (*specSchema, error) {
	if s == nil {
		return nil, nil
	}
	if ref := s.Ref.String(); ref != "" {
		return r.ref(path.Base(ref), s)
	}
	if len(s.AllOf) == 1 && s.AllOf[0].Ref.String() != "" {
		return r.ref(path.Base(s.AllOf[0].Ref.String()), s)
	}
	out := *s
	emptyBytes(&out)
	if s.Properties != nil {
		out.Properties = make(map[string]spec.Schema, len(s.Properties))
		for k, p := range s.Properties {
			rp, err := r.schema(&p)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out.Properties[k] = *rp
		}
	}
	if s.Items != nil && s.Items.Schema != nil {
		item, err := r.schema(s.Items.Schema)
		if err != nil {
			return nil, fmt.Errorf("items: %w", err)
		}
		out.Items = &spec.SchemaOrArray{Schema: item}
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		ap, err := r.schema(s.AdditionalProperties.Schema)
		if err != nil {
			return nil, fmt.Errorf("additionalProperties: %w", err)
		}
		out.AdditionalProperties = &spec.SchemaOrBool{Allows: true, Schema: ap}
	}
	for _, list := range []*[]spec.Schema{&out.AllOf, &out.OneOf, &out.AnyOf} {
		if len(*list) == 0 {
			continue
		}
		resolved := make([]spec.Schema, len(*list))
		for i := range *list {
			rs, err := r.schema(&(*list)[i])
			if err != nil {
				return nil, err
			}
			resolved[i] = *rs
		}
		*list = resolved
	}
	return &out, nil
}

// emptyBytes lets a string of format byte be empty, as the native types'
// decoding does (a Secret's data value "" is an empty value) and a CRD's
// schema does not: the format becomes "either base64 or empty", as
// kubectl-validate's AllowEmptyByteFormat patch has it.
func emptyBytes(s *specSchema) {
	if s.Format != "byte" || len(s.Type) != 1 || s.Type[0] != "string" {
		return
	}
	var zero int64
	s.Format = ""
	s.AllOf = append(s.AllOf, spec.Schema{SchemaProps: spec.SchemaProps{AnyOf: []spec.Schema{
		{SchemaProps: spec.SchemaProps{Format: "byte"}},
		{SchemaProps: spec.SchemaProps{MaxLength: &zero}},
	}}})
}
