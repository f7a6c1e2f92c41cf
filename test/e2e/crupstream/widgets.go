package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Widget webhooks, for a suite that runs a custom resource through
// webhooks and its CRD's rules in the apiserver's order.
// /mutate-widgets notes what it saw of spec.protocol (the CRD defaults
// it) in the annotation crupstream.example.com/saw-protocol, adds
// spec.colour (a field the CRD's schema prunes) and, for a widget named
// big-*, sets spec.maxReplicas over the schema's maximum.
// /validate-widgets denies widgets named deny-*, and any widget not seen
// as the registry prepared it: without its defaults, with the request
// body's unknown field, or without the uid and generation a create sets.
// (It does see spec.colour: the apiserver prunes a field a mutating
// webhook added only on the way to storage.)

// sawProtocol is the annotation /mutate-widgets writes.
const sawProtocol = "crupstream.example.com/saw-protocol"

func mutateWidget(_ context.Context, req admission.Request) admission.Response {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(req.Object.Raw); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	protocol, found, _ := unstructured.NestedString(u.Object, "spec", "protocol")
	if !found {
		protocol = "none"
	}
	ops := []jsonpatch.JsonPatchOperation{{Operation: "add", Path: "/spec/colour", Value: "blue"}}
	if len(u.GetAnnotations()) == 0 {
		ops = append(ops, jsonpatch.JsonPatchOperation{Operation: "add", Path: "/metadata/annotations", Value: map[string]string{sawProtocol: protocol}})
	} else {
		ops = append(ops, jsonpatch.JsonPatchOperation{Operation: "add", Path: "/metadata/annotations/crupstream.example.com~1saw-protocol", Value: protocol})
	}
	if strings.HasPrefix(u.GetName(), "big-") {
		ops = append(ops, jsonpatch.JsonPatchOperation{Operation: "add", Path: "/spec/maxReplicas", Value: 101})
	}
	return admission.Patched("", ops...)
}

func validateWidget(_ context.Context, req admission.Request) admission.Response {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(req.Object.Raw); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if strings.HasPrefix(u.GetName(), "deny-") {
		return admission.Denied("controller-runtime says no to widget " + u.GetName())
	}
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	var wrong []string
	if _, ok := spec["shade"]; ok {
		wrong = append(wrong, "saw spec.shade, which the apiserver prunes from the request body")
	}
	if _, ok := spec["protocol"]; !ok {
		wrong = append(wrong, "spec.protocol is not defaulted")
	}
	if g := u.GetGeneration(); g != 1 {
		wrong = append(wrong, fmt.Sprintf("generation %d, not the 1 a create sets", g))
	}
	if u.GetUID() == "" {
		wrong = append(wrong, "no uid")
	}
	if len(wrong) > 0 {
		return admission.Denied(strings.Join(wrong, "; "))
	}
	return admission.Allowed("")
}
