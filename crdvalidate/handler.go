package crdvalidate

import (
	"context"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hookback/hookback/admission"
)

// Admit answers an admission request for c's objects as the apiserver's
// registry would, so that a suite (`hookback test --crd`) can send its
// cases to the CRD's rules as to a webhook: allowed with the apiserver's
// warnings, or denied with its message and code (422 Invalid, 400 for a
// body it cannot decode). stored, when allowed, is the object as the
// registry would store it (pruned, defaulted, prepared by the strategy):
// what validating admission sees after it. admitted: the object is as
// mutating admission left it, decoded already (Request.Admitted).
func (c *CRD) Admit(ctx context.Context, req admission.Request, admitted bool) (resp admission.Response, stored []byte) {
	r := Request{Namespace: req.Namespace, Subresource: req.SubResource, Admitted: admitted}
	var err error
	if r.Object, err = objectOf(req.Object.Raw); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("object: %w", err)), nil
	}
	if req.Operation == admissionv1.Update {
		if r.Old, err = objectOf(req.OldObject.Raw); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("oldObject: %w", err)), nil
		}
	}
	v, err := c.Judge(ctx, r)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err), nil
	}
	if v.Allowed {
		if stored, err = v.Object.MarshalJSON(); err != nil {
			return admission.Errored(http.StatusInternalServerError, fmt.Errorf("the stored object: %w", err)), nil
		}
		return admission.Allowed("").WithWarnings(v.Warnings...), stored
	}
	code, reason := int32(http.StatusUnprocessableEntity), metav1.StatusReasonInvalid
	if v.BadRequest {
		code, reason = http.StatusBadRequest, metav1.StatusReasonBadRequest
	}
	return admission.Response{Result: &metav1.Status{Code: code, Reason: reason, Message: v.Message}, Warnings: v.Warnings}, nil
}

// Serves: gvk is c's kind in a version c serves.
func (c *CRD) Serves(gvk schema.GroupVersionKind) bool {
	ver, ok := c.versions[gvk.Version]
	return gvk.GroupKind() == c.GroupKind() && ok && ver.served
}

// Decode does to raw, an object of c's kinds, what the CRD handler's
// decoder does before any admission: to a request body (stored false),
// unknown fields pruned and the version's defaults applied; to an object
// read from storage (stored true), the same without warnings. warnings
// are the apiserver's for a request body's unknown fields
// (fieldValidation Warn, its default). An error: raw is not of a version
// c serves, or the apiserver would refuse it as a bad request (Judge says
// why).
func (c *CRD) Decode(raw []byte, stored bool) (out []byte, warnings []string, err error) {
	u, err := c.served(raw)
	if err != nil {
		return nil, nil, err
	}
	unknown, err := c.decode(u, coercion{fromStorage: stored})
	if err != nil {
		return nil, nil, err
	}
	rec := &recorder{}
	if err := c.unknownFields(u.GroupVersionKind(), unknown, FieldValidationWarn, rec); err != nil {
		return nil, nil, err
	}
	if out, err = u.MarshalJSON(); err != nil {
		return nil, nil, err
	}
	return out, rec.list, nil
}

// Default applies the version's defaults to raw, an object of c's kinds
// that a mutating webhook patched, as the mutating dispatcher does before
// the next webhook; it prunes nothing (the apiserver prunes only on the
// way to storage).
func (c *CRD) Default(raw []byte) ([]byte, error) {
	u, err := c.served(raw)
	if err != nil {
		return nil, err
	}
	if s := c.schemas[u.GroupVersionKind().Version]; s != nil {
		structuraldefaulting.Default(u.Object, s)
	}
	return u.MarshalJSON()
}

// served is raw decoded, when it is of a version c serves.
func (c *CRD) served(raw []byte) (*unstructured.Unstructured, error) {
	u, err := objectOf(raw)
	if err != nil {
		return nil, err
	}
	if gvk := u.GroupVersionKind(); !c.Serves(gvk) {
		return nil, fmt.Errorf("%s is not a version that CRD %s serves", gvk.GroupVersion(), c.Name)
	}
	return u, nil
}

func objectOf(raw []byte) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		return nil, err
	}
	return u, nil
}

// Rules are the requests the apiserver judges with c's rules: creates and
// updates of every served version, and updates of its status where the
// version has a status subresource.
func (c *CRD) Rules() []admissionregistrationv1.RuleWithOperations {
	var versions []string
	status := false
	for _, v := range c.crd.Spec.Versions {
		if ver := c.versions[v.Name]; ver != nil && ver.served {
			versions = append(versions, v.Name)
			status = status || ver.status != nil
		}
	}
	resources := []string{c.crd.Spec.Names.Plural}
	if status {
		resources = append(resources, c.crd.Spec.Names.Plural+"/status")
	}
	scope := admissionregistrationv1.ClusterScope
	if c.NamespaceScoped() {
		scope = admissionregistrationv1.NamespacedScope
	}
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{c.crd.Spec.Group}, APIVersions: versions,
			Resources: resources, Scope: &scope},
	}}
}
