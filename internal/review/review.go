// Package review holds what the admission package and hookback's HTTP
// transport (internal/admissionhttp) share about an AdmissionReview's bytes:
// Decode, for either review version, and Body, the pooled buffer a served
// request's review is read into and that admission.Request reads it back
// from until its Handle returns.
//
// It is internal so that the pool stays out of the handler author's API:
// admission.Request keeps a Ref in an unexported field, and the transport
// builds Requests over a Body through the hook admission registers with
// SetNewRequest. It depends only on k8s.io/api, the standard library and
// github.com/go-json-experiment/json, like admission itself.
package review

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
)

// Body is a served request's pooled buffer. Its generation moves on when the
// request's Handle returns (Expire), so a Request kept past that finds no
// bytes through its Ref rather than a later request's review.
type Body struct {
	buf  bytes.Buffer
	gen  atomic.Uint64
	wait atomic.Int64
}

var bodyPool = sync.Pool{New: func() any { return new(Body) }}

// Get takes a pooled Body for a new request, empty and with no wait.
func Get() *Body {
	b := bodyPool.Get().(*Body)
	b.buf.Reset()
	b.wait.Store(0)
	return b
}

// Put returns b to the pool: its owner is done with its bytes.
func (b *Body) Put() { bodyPool.Put(b) }

// ReadFrom reads the request body into b.
func (b *Body) ReadFrom(r io.Reader) (int64, error) { return b.buf.ReadFrom(r) }

// Bytes is the review as received, for b's owner (the transport) until Put,
// whatever the generation.
func (b *Body) Bytes() []byte { return b.buf.Bytes() }

// Ref is a view of b's current generation, for the Request served over it.
func (b *Body) Ref() Ref { return Ref{b: b, gen: b.gen.Load()} }

// Expire ends every Ref's access to b: the request's Handle has returned.
func (b *Body) Expire() { b.gen.Add(1) }

// Waited is the total the request's handler reported waiting (ReportWait).
func (b *Body) Waited() time.Duration { return time.Duration(b.wait.Load()) }

// Ref is a Request's access to the Body its review was read into, valid
// for one generation. The zero Ref has no bytes.
type Ref struct {
	b   *Body
	gen uint64
}

// Bytes is the review, or nil once the Body's generation moved on.
func (r Ref) Bytes() []byte {
	if r.b == nil || r.b.gen.Load() != r.gen {
		return nil
	}
	return r.b.buf.Bytes()
}

// ReportWait adds d to the Body's wait while r is current; later calls are
// ignored.
func (r Ref) ReportWait(d time.Duration) {
	if r.b != nil && r.b.gen.Load() == r.gen {
		r.b.wait.Add(int64(d))
	}
}

// newRequest is admission's constructor of a Request over a Ref, as a
// func(*admissionv1.AdmissionReview, Ref) admission.Request: typed any
// because this package cannot name admission's type (admission imports it).
var newRequest any

// SetNewRequest is called once, by package admission's init, with its
// constructor of a Request over a Ref.
func SetNewRequest[R any](f func(*admissionv1.AdmissionReview, Ref) R) { newRequest = f }

// NewRequestFunc returns the constructor SetNewRequest registered, for the
// transport to keep (R is admission.Request). It returns an error if none of
// that type was registered, which means admission was not linked in.
func NewRequestFunc[R any]() (func(*admissionv1.AdmissionReview, Ref) R, error) {
	f, ok := newRequest.(func(*admissionv1.AdmissionReview, Ref) R)
	if !ok {
		return nil, fmt.Errorf("review: no Request constructor of type %T registered", f)
	}
	return f, nil
}

// Decode accepts admission.k8s.io/v1 and v1beta1: their JSON shapes are
// the same, so one decode serves both and TypeMeta remembers which to answer.
//
// The decoder is github.com/go-json-experiment/json (the prototype of Go's
// encoding/json/v2, already in the apiserver's dependencies through
// kube-openapi): it validates while it decodes, in one pass over the body,
// where encoding/json scans the whole body to validate it and then again to
// decode it, object and oldObject included. That was most of hookback's time
// per call through the apiserver (bench/JOURNAL.md). It is also stricter,
// as the apiserver's own decoder is: field names match case-sensitively, and
// duplicate names or invalid UTF-8 are a malformed review (400), never
// guessed at. When encoding/json/v2 leaves GOEXPERIMENT, Decode moves to
// it and the dependency goes.
func Decode(body []byte) (*admissionv1.AdmissionReview, error) {
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
