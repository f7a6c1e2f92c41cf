// Package admission is the API an admission webhook is written against: a
// Handler decides one Request and returns a Response built with Allowed,
// Denied, Errored, Patched or CallFailed; a Webhook names a Handler and the
// path it is served at. Hand Webhooks to hookback (cli.Extension in a
// program of your own, see examples/custom-webhook), which serves them over
// HTTPS for both AdmissionReview versions; NewRequest builds a Request from
// a review a program holds, to call a Handler directly (a test, a replay).
//
// Handlers never see HTTP, review versions or JSON encoding. Mutating
// handlers return the JSON patch operations they mean (see PatchOp) against
// the raw request object. The package is a leaf: it depends only on
// k8s.io/api, k8s.io/apimachinery, the standard library and, for its review
// decoder (DecodeReview, which hookback's transport uses too),
// github.com/go-json-experiment/json (no dependencies of its own; already in
// client-go's module graph through kube-openapi), so a Go program can import
// it to write its own webhook and serve it through hookback.
package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Request is one admission request, whichever AdmissionReview version carried
// it (v1 and v1beta1 share their request fields).
type Request struct {
	admissionv1.AdmissionRequest
	// ReviewVersion is the apiVersion of the AdmissionReview that carried
	// the request: admission.k8s.io/v1 or admission.k8s.io/v1beta1.
	ReviewVersion string
	// Timeout is how long the apiserver waits for the answer (its timeout
	// query), zero when it did not say; the handler's context ends then.
	Timeout time.Duration
	// review is the AdmissionReview as received, the Request's own.
	review []byte
}

// NewRequest decodes an AdmissionReview (v1 or v1beta1) into a Request
// whose Review is b itself, kept for as long as the Request: what
// hookback's transport builds each served request with, and what a
// program that sends reviews through a Handler (an audit, a replay, a
// test) calls. b must not be modified afterwards.
func NewRequest(b []byte) (Request, error) {
	r, err := DecodeReview(b)
	if err != nil {
		return Request{}, err
	}
	// A review carries no timeout (the apiserver sends it as a query
	// parameter): set Timeout when the caller has one.
	return Request{AdmissionRequest: *r.Request, ReviewVersion: r.APIVersion, review: b}, nil
}

// Review returns the AdmissionReview exactly as received, for a handler
// that forwards it unchanged. The bytes are the Request's own: they stay
// valid after Handle returns, in every copy of the Request, and must not
// be modified.
func (r *Request) Review() []byte { return r.review }

// IsDryRun reports whether the apiserver will not persist the object, so a
// handler with side effects must skip them.
func (r *Request) IsDryRun() bool { return r.DryRun != nil && *r.DryRun }

// ErrNoObject is returned by DecodeObject and DecodeOldObject when the
// request carries no such object (oldObject on CREATE, object on DELETE).
var ErrNoObject = errors.New("admission: the request carries no such object")

// DecodeObject decodes the request's object (JSON) into into, typically a
// pointer to a k8s.io/api type. Fields the type does not know are dropped
// from the decoded value only: patches go against the raw object.
func (r *Request) DecodeObject(into any) error { return decodeRaw(r.Object.Raw, into, "object") }

// DecodeOldObject decodes the request's oldObject (UPDATE, DELETE).
func (r *Request) DecodeOldObject(into any) error {
	return decodeRaw(r.OldObject.Raw, into, "oldObject")
}

func decodeRaw(raw []byte, into any, what string) error {
	if len(raw) == 0 {
		return ErrNoObject
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("decode %s: %w", what, err)
	}
	return nil
}

// Response is a handler's decision. Build it with Allowed, Denied, Errored or
// Patched.
type Response struct {
	Allowed bool
	// Result carries the message and code shown to the API client.
	Result *metav1.Status
	// Patch is a JSON patch (RFC 6902) against the request's object.
	Patch []byte
	// Warnings are shown to the API client (kubectl prints them).
	Warnings []string
	// AuditAnnotations are added to the apiserver's audit event.
	AuditAnnotations map[string]string
	// callFailed makes the transport fail the call (HTTP 500) instead of
	// answering a review: see CallFailed.
	callFailed bool
	// refused makes the transport close the connection without an answer:
	// see CallRefused.
	refused bool
}

// CallFailed fails the webhook call itself: the transport answers HTTP 500
// with err's message, so the apiserver applies the webhook's failurePolicy
// (Ignore admits the object, Fail rejects it showing the message), as it
// would for a webhook that could not be reached. Use it when the handler
// could not decide at all, such as an upstream that answered wrongly;
// Errored, in contrast, is a decision: the request is rejected whatever the
// failurePolicy.
func CallFailed(err error) Response {
	r := Errored(http.StatusInternalServerError, err)
	r.callFailed = true
	return r
}

// Failed reports whether r fails the call (CallFailed or CallRefused)
// rather than decide.
func (r Response) Failed() bool { return r.callFailed }

// CallRefused fails the call as a webhook that went away does: the
// transport closes the connection (HTTP/1) or resets the stream (HTTP/2)
// without an answer, and the apiserver applies the failurePolicy showing
// its own message ("connection reset", "EOF"); err is what hookback logs.
// hookback's faults use it (fault.Refuse).
func CallRefused(err error) Response {
	r := CallFailed(err)
	r.refused = true
	return r
}

// Refused reports whether r closes the connection (CallRefused).
func (r Response) Refused() bool { return r.refused }

// Handler decides one admission request.
//
// Contract: Handle must be safe for concurrent use, must not block past ctx,
// must not modify req, and should return Errored rather than panic; a panic is
// recovered by the transport and answered as an internal error.
type Handler interface {
	Handle(ctx context.Context, req Request) Response
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, req Request) Response

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, req Request) Response { return f(ctx, req) }

var _ Handler = HandlerFunc(nil)

// Allowed admits the request; msg may be empty.
func Allowed(msg string) Response {
	return Response{Allowed: true, Result: &metav1.Status{Code: http.StatusOK, Message: msg}}
}

// Denied rejects the request with a reason the API client sees.
func Denied(msg string) Response {
	return Response{Allowed: false, Result: &metav1.Status{Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden, Message: msg}}
}

// Errored rejects the request because the handler could not decide; code is
// an HTTP status such as 400 (bad object) or 500 (internal).
func Errored(code int32, err error) Response {
	return Response{Allowed: false, Result: &metav1.Status{Code: code, Message: err.Error()}}
}

// Patched admits the request with ops applied to the request's object. No
// operations means a plain Allowed.
func Patched(msg string, ops ...PatchOp) Response {
	resp := Allowed(msg)
	if len(ops) == 0 {
		return resp
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return Errored(http.StatusInternalServerError, fmt.Errorf("marshal patch: %w", err))
	}
	resp.Patch = patch
	return resp
}

// WithWarnings returns r with warnings added. r is left as it was: the
// result never shares its warnings' array with r, so a base Response kept
// and extended per request cannot mix two requests' warnings.
func (r Response) WithWarnings(w ...string) Response {
	r.Warnings = append(slices.Clip(r.Warnings), w...)
	return r
}

// Webhook is a Handler served at Path. Name labels its log lines and metrics
// and is what --webhooks selects.
type Webhook struct {
	Name    string
	Path    string
	Handler Handler
}
