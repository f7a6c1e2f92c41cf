package admission

import (
	"bytes"
	"errors"
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
)

// DecodeReview decodes an AdmissionReview of admission.k8s.io/v1 or
// v1beta1: their JSON shapes are the same, so one decode serves both and
// TypeMeta remembers which to answer. It refuses what the apiserver never
// sends and a webhook cannot answer: another kind or version, no request,
// no uid.
//
// The decoder is github.com/go-json-experiment/json (the prototype of Go's
// encoding/json/v2, already in the apiserver's dependencies through
// kube-openapi): it validates while it decodes, in one pass over the body,
// where encoding/json scans the whole body to validate it and then again to
// decode it, object and oldObject included. That was most of hookback's time
// per call through the apiserver (test/bench/JOURNAL.md). It is also
// stricter, as the apiserver's own decoder is: field names match
// case-sensitively, and duplicate names or invalid UTF-8 are a malformed
// review, never guessed at. When encoding/json/v2 leaves GOEXPERIMENT, the
// decoder moves to it and the dependency goes.
func DecodeReview(body []byte) (*admissionv1.AdmissionReview, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, errors.New("empty body: expected an AdmissionReview")
	}
	var review admissionv1.AdmissionReview
	if err := jsonv2.Unmarshal(body, &review); err != nil {
		return nil, fmt.Errorf("decode AdmissionReview: %w", err)
	}
	switch review.APIVersion {
	case admissionv1.SchemeGroupVersion.String(), admissionv1beta1.SchemeGroupVersion.String():
	default:
		return nil, fmt.Errorf("unsupported apiVersion %q: want admission.k8s.io/v1 or admission.k8s.io/v1beta1", review.APIVersion)
	}
	if review.Kind != "AdmissionReview" {
		return nil, fmt.Errorf("unsupported kind %q: want AdmissionReview", review.Kind)
	}
	if review.Request == nil {
		return nil, errors.New("AdmissionReview has no request")
	}
	if review.Request.UID == "" {
		// The apiserver refuses an answer whose uid does not match.
		return nil, errors.New("AdmissionReview request has no uid: the answer must echo it")
	}
	return &review, nil
}
