package suite

import (
	"context"
	"encoding/json"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	apiadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/webhook"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules"

	"github.com/hookback/hookback/conversion"
)

// equivalent is the resource, and its kind, that a webhook's rules name
// in place of the request's under matchPolicy Equivalent.
type equivalent struct {
	resource schema.GroupVersionResource
	kind     schema.GroupVersionKind
}

// equivalentMatch is what the apiserver's ShouldCallHook
// (k8s.io/apiserver pkg/admission/plugin/webhook/generic/webhook.go) does
// when no rule matches the request's own resource and the matchPolicy is
// Equivalent: the rules in order, each against the equivalent resources,
// the first that matches wins. The apiserver takes the equivalents from
// its resource mapping; offline, they are the request's group and
// resource in each version a rule names explicitly (a * version matched
// the request's own already), with the same kind.
func equivalentMatch(h webhook.WebhookAccessor, attr apiadmission.Attributes) *equivalent {
	if p := h.GetMatchPolicy(); p == nil || *p != admissionregistrationv1.Equivalent {
		return nil
	}
	res := attr.GetResource()
	for _, r := range h.GetRules() {
		for _, v := range r.APIVersions {
			if v == "*" || v == res.Version {
				continue
			}
			alt := res
			alt.Version = v
			if (&rules.Matcher{Rule: r, Attr: &resourceOverride{Attributes: attr, resource: alt}}).Matches() {
				kind := attr.GetKind()
				kind.Version = v
				return &equivalent{resource: alt, kind: kind}
			}
		}
	}
	return nil
}

// resourceOverride is the request with another resource, as the
// apiserver's attrWithResourceOverride.
type resourceOverride struct {
	apiadmission.Attributes
	resource schema.GroupVersionResource
}

func (a *resourceOverride) GetResource() schema.GroupVersionResource { return a.resource }

// inVersion is the request as the apiserver sends it to a webhook that
// matched through an equivalent resource: kind, resource and objects in
// the webhook's version, requestKind and requestResource the request's.
// The objects are converted by the CRD's conversion webhook.
func (in *input) inVersion(ctx context.Context, eq *equivalent, convs []ConversionWebhook) (*input, error) {
	out := *in
	out.review = nil
	if out.req.RequestKind == nil {
		k, r := in.req.Kind, in.req.Resource
		out.req.RequestKind, out.req.RequestResource = &k, &r
	}
	out.req.Kind = metav1.GroupVersionKind(eq.kind)
	out.req.Resource = metav1.GroupVersionResource(eq.resource)
	for _, raw := range []*runtime.RawExtension{&out.req.Object, &out.req.OldObject} {
		if len(raw.Raw) == 0 {
			continue
		}
		b, err := convertObject(ctx, eq.resource, convs, raw.Raw, eq.kind.Group, eq.kind.Version)
		if err != nil {
			return nil, err
		}
		*raw = runtime.RawExtension{Raw: b}
	}
	return &out, nil
}

// convertObject converts obj to group/version through the conversion
// webhook of resource's CRD, as the apiserver would before calling a
// webhook of another version.
func convertObject(ctx context.Context, resource schema.GroupVersionResource, convs []ConversionWebhook, obj []byte, group, version string) ([]byte, error) {
	target := schema.GroupVersion{Group: group, Version: version}.String()
	crd := resource.GroupResource().String()
	var h *ConversionWebhook
	for i := range convs {
		if convs[i].CRD == crd {
			h = &convs[i]
		}
	}
	if h == nil {
		return nil, fmt.Errorf("the object must be converted to %s: under matchPolicy Equivalent the apiserver sends this webhook the object in the version its rules name, "+
			"and no conversion webhook of %s is among the manifests: add the CRD with its conversion webhook to the manifests, write the case's object in %s, "+
			"or set the webhook's matchPolicy to Exact", target, crd, target)
	}
	review, err := json.Marshal(map[string]any{
		"apiVersion": conversion.V1, "kind": conversion.Kind,
		"request": map[string]any{"uid": string(uuid.NewUUID()), "desiredAPIVersion": target, "objects": []json.RawMessage{obj}},
	})
	if err != nil {
		return nil, err
	}
	o, err := convert(ctx, *h, review)
	if err != nil {
		return nil, fmt.Errorf("convert the object to %s (matchPolicy Equivalent) through the conversion webhook of %s: %w", target, crd, err)
	}
	if o.Result != Converted || len(o.Object) == 0 {
		return nil, fmt.Errorf("convert the object to %s (matchPolicy Equivalent) through the conversion webhook of %s: it failed: %s", target, crd, o.Message)
	}
	return o.Object, nil
}
