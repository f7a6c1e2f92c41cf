package crdvalidate

import (
	"context"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hookback/hookback/admission"
)

// Handler answers an admission request for c's objects with c's verdict,
// so that a suite (`hookback test --crd`) can send its cases to the CRD's
// rules as to a webhook: allowed with the apiserver's warnings, or denied
// with its message and code (422 Invalid, 400 for a body it cannot
// decode).
func (c *CRD) Handler() admission.Handler {
	return admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		r := Request{Namespace: req.Namespace, Subresource: req.SubResource}
		var err error
		if r.Object, err = objectOf(req.Object.Raw); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("object: %w", err))
		}
		if req.Operation == admissionv1.Update {
			if r.Old, err = objectOf(req.OldObject.Raw); err != nil {
				return admission.Errored(http.StatusBadRequest, fmt.Errorf("oldObject: %w", err))
			}
		}
		v, err := c.Judge(ctx, r)
		if err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if v.Allowed {
			return admission.Allowed("").WithWarnings(v.Warnings...)
		}
		code, reason := int32(http.StatusUnprocessableEntity), metav1.StatusReasonInvalid
		if v.BadRequest {
			code, reason = http.StatusBadRequest, metav1.StatusReasonBadRequest
		}
		return admission.Response{Result: &metav1.Status{Code: code, Reason: reason, Message: v.Message}, Warnings: v.Warnings}
	})
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
