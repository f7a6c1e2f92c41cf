package chain

import (
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiadmission "k8s.io/apiserver/pkg/admission"

	"github.com/hookback/hookback/internal/admitmatch"
)

// views are the request at each view of c as the apiserver's admission
// attributes, for matchConditions: the object as each call saw it, with
// the oldObject and the requester's groups your webhook's first call got
// (they do not change along the chain). A view that cannot be read is
// left out.
func views(c *Chain) []apiadmission.Attributes {
	y := c.Yours[0]
	gvk := kindOf(y.Kind)
	id := c.Identity
	name := id.Name
	if strings.HasPrefix(name, "generateName:") {
		name = ""
	}
	var out []apiadmission.Attributes
	add := func(o *Observation) {
		if o == nil {
			return
		}
		req := &admissionv1.AdmissionRequest{Kind: metav1.GroupVersionKind(gvk), Namespace: id.Namespace, Name: name,
			Resource:    metav1.GroupVersionResource{Group: id.Group, Version: gvk.Version, Resource: id.Resource},
			SubResource: id.Subresource, Operation: admissionv1.Operation(id.Operation), DryRun: &id.DryRun,
			Object: runtime.RawExtension{Raw: o.Object}, OldObject: runtime.RawExtension{Raw: y.OldObject}}
		req.UserInfo.Username, req.UserInfo.UID, req.UserInfo.Groups = id.User, id.UserUID, y.Groups
		if attr, err := admitmatch.Attributes(req); err == nil {
			out = append(out, attr)
		}
	}
	add(c.Submitted)
	for i := range c.Yours {
		add(&c.Yours[i])
	}
	for i := range c.After {
		add(&c.After[i])
	}
	add(c.Final)
	return out
}

// kindOf reads metav1.GroupVersionKind's String ("apps/v1, Kind=Deployment",
// "/v1, Kind=Pod").
func kindOf(s string) schema.GroupVersionKind {
	gv, kind, _ := strings.Cut(s, ", Kind=")
	group, version, ok := strings.Cut(gv, "/")
	if !ok {
		version, group = group, ""
	}
	return schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
}
