// Package conversion serves CRD conversion webhooks: it decodes the
// apiserver's ConversionReview (apiextensions.k8s.io v1 or v1beta1, whose
// JSON shapes are the same), has a Converter answer it, and sends the answer
// back, with one log line per review (never the objects), metrics and
// recording. It knows only the few fields it checks: objects pass through
// as the upstream wrote them.
package conversion

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	jsontext "github.com/go-json-experiment/json/jsontext"
)

// Review versions the apiserver sends.
const (
	V1      = "apiextensions.k8s.io/v1"
	V1beta1 = "apiextensions.k8s.io/v1beta1"
	Kind    = "ConversionReview"
)

// Object is who an object is: what a converter must keep (identity) and
// what it must set (apiVersion).
type Object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		UID       string `json:"uid"`
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

// Ref is namespace/name, or name for a cluster-scoped object.
func (o Object) Ref() string {
	if o.Metadata.Namespace == "" {
		return o.Metadata.Name
	}
	return o.Metadata.Namespace + "/" + o.Metadata.Name
}

// Status is a ConversionReview response's result: Success or Failure.
type Status struct {
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
}

// Review is a ConversionReview as far as hookback reads it.
type Review struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Request    *Request  `json:"request,omitempty"`
	Response   *Response `json:"response,omitempty"`
}

// Request is the review's request. Raw, ReviewVersion and Timeout are not
// part of the JSON: the body as received, its apiVersion and the
// apiserver's ?timeout=.
type Request struct {
	UID               string   `json:"uid"`
	DesiredAPIVersion string   `json:"desiredAPIVersion"`
	Objects           []Object `json:"objects"`

	Raw           []byte        `json:"-"`
	ReviewVersion string        `json:"-"`
	Timeout       time.Duration `json:"-"`
}

// Response is the review's response.
type Response struct {
	UID              string   `json:"uid"`
	Result           Status   `json:"result"`
	ConvertedObjects []Object `json:"convertedObjects"`
}

// Answer is a Converter's answer: the ConversionReview to send as is, or
// the reason the conversion failed, which hookback sends as a Failure.
type Answer struct {
	// Body is the whole ConversionReview answer, already checked.
	Body []byte
	// Failure, when set, is why there is no Body: the apiserver gets a
	// Failure result with this message.
	Failure string
	// Upstream is the time spent waiting on an upstream server.
	Upstream time.Duration
}

// Converter answers ConversionReviews.
//
// Contract: Convert must be safe for concurrent use, must not keep
// req.Raw past its return, and returns either a Body or a Failure; ctx ends
// when the apiserver stops waiting.
type Converter interface {
	Convert(ctx context.Context, req Request) Answer
}

// Decode reads a ConversionReview request, either version.
func Decode(body []byte) (Request, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return Request{}, errors.New("empty body: expected a ConversionReview")
	}
	var r Review
	if err := jsonv2.Unmarshal(body, &r); err != nil {
		return Request{}, fmt.Errorf("decode ConversionReview: %w", err)
	}
	if r.APIVersion != V1 && r.APIVersion != V1beta1 {
		return Request{}, fmt.Errorf("unsupported apiVersion %q: want %s or %s", r.APIVersion, V1, V1beta1)
	}
	if r.Kind != Kind {
		return Request{}, fmt.Errorf("unsupported kind %q: want ConversionReview", r.Kind)
	}
	if r.Request == nil {
		return Request{}, errors.New("ConversionReview has no request")
	}
	if r.Request.UID == "" {
		return Request{}, errors.New("ConversionReview request has no uid: the answer must echo it")
	}
	if r.Request.DesiredAPIVersion == "" {
		return Request{}, errors.New("ConversionReview request has no desiredAPIVersion")
	}
	req := *r.Request
	req.Raw, req.ReviewVersion = body, r.APIVersion
	return req, nil
}

// DecodeAnswer reads a ConversionReview answer, case-sensitively as the
// apiserver does.
func DecodeAnswer(body []byte) (Review, error) {
	var r Review
	if err := jsonv2.Unmarshal(body, &r, jsontext.AllowDuplicateNames(false)); err != nil {
		return Review{}, err
	}
	return r, nil
}

// FailureBody is the ConversionReview that tells the apiserver the
// conversion failed, with msg.
func FailureBody(req Request, msg string) []byte {
	type failed struct {
		UID    string `json:"uid"`
		Result Status `json:"result"`
	}
	b, _ := json.Marshal(struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Response   failed `json:"response"`
	}{req.ReviewVersion, Kind, failed{UID: req.UID, Result: Status{Status: "Failure", Message: msg}}})
	return b
}
