package chain

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/hookback/hookback/admission"
)

// observerHandler is one observer as served: it reads the bounded review,
// takes its apiVersion and uid (reviewHead), writes the allowed answer,
// and queues the review for Run. Nothing else happens before the answer:
// the apiserver waits for it.
type observerHandler struct {
	c     *Collector
	stage Stage
	name  string
	calls *atomic.Int64
	obs   admission.Observer
}

func (c *Collector) observer(stage Stage, name string, calls *atomic.Int64, obs admission.Observer) http.Handler {
	return &observerHandler{c: c, stage: stage, name: name, calls: calls, obs: obs}
}

// jsonContentType is shared by every answer: the header map keeps the
// slice, and the server only reads it.
var jsonContentType = []string{"application/json"}

func (h *observerHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.fail(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed: admission reviews are POSTed", r.Method))
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			h.fail(w, http.StatusUnsupportedMediaType, fmt.Sprintf("content type %q not supported: send application/json", ct))
			return
		}
	}
	rb := reviewPool.Get().(*reviewBuf)
	rb.body.Reset()
	if _, err := rb.body.ReadFrom(http.MaxBytesReader(w, r.Body, h.c.maxBody)); err != nil {
		reviewPool.Put(rb)
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			h.fail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", h.c.maxBody))
			return
		}
		h.fail(w, http.StatusBadRequest, "read request body: "+err.Error())
		return
	}
	reply, err := allowedAnswer(rb.reply[:0], rb.body.Bytes())
	if err != nil {
		reviewPool.Put(rb)
		h.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	rb.reply = reply
	w.Header()["Content-Type"] = jsonContentType
	_, _ = w.Write(reply)
	h.calls.Add(1)
	if h.obs != nil {
		h.obs.Observe(h.name, "allowed", time.Since(start))
	}
	h.c.q.put(h.c, pending{stage: h.stage, webhook: h.name, at: start, review: rb})
}

// fail answers a request that is not a review, as the admission transport
// does: a plain status and message, since there is no uid to echo.
func (h *observerHandler) fail(w http.ResponseWriter, code int, msg string) {
	if h.obs != nil {
		h.obs.Observe(h.name, "bad_request", 0)
	}
	h.c.log.Warn("rejected admission request", "webhook", h.name, "status", code, "error", msg)
	http.Error(w, msg, code)
}

// The review versions an observer answers, as JSON strings.
var (
	reviewV1      = []byte(`"admission.k8s.io/v1"`)
	reviewV1beta1 = []byte(`"admission.k8s.io/v1beta1"`)
	reviewKind    = []byte(`"AdmissionReview"`)
)

// allowedAnswer appends to dst the AdmissionReview that allows review's
// request with no patch, in review's version. It reads review only as far
// as its apiVersion, kind and request.uid: the apiserver writes them
// first, before the objects (k8s.io/api admission/v1's field order), so
// the objects are neither scanned nor decoded here. What it does not read
// is decoded by Run, whose error is logged; the answer stands, since an
// observer allows every request anyway.
func allowedAnswer(dst, review []byte) ([]byte, error) {
	version, uid, err := reviewHead(review)
	if err != nil {
		return nil, err
	}
	dst = append(dst, `{"kind":"AdmissionReview","apiVersion":`...)
	dst = append(dst, version...)
	dst = append(dst, `,"response":{"uid":`...)
	dst = append(dst, uid...)
	return append(dst, `,"allowed":true}}`...), nil
}

var decoders = sync.Pool{New: func() any { return &headDecoder{d: jsontext.NewDecoder(bytes.NewReader(nil))} }}

type headDecoder struct {
	r bytes.Reader
	d *jsontext.Decoder
}

// reviewHead is review's apiVersion and request.uid as the JSON strings
// they were sent as (valid to copy into the answer as they are), read
// until both and the kind are known. The errors are the admission
// transport's for the same faults.
func reviewHead(review []byte) (version, uid jsontext.Value, err error) {
	hd := decoders.Get().(*headDecoder)
	defer decoders.Put(hd)
	hd.r.Reset(review)
	hd.d.Reset(&hd.r)
	d := hd.d
	if len(bytes.TrimSpace(review)) == 0 {
		return nil, nil, errors.New("empty body: expected an AdmissionReview")
	}
	var kind jsontext.Value
	if err := expect(d, '{'); err != nil {
		return nil, nil, badReview(err)
	}
	for d.PeekKind() == '"' && (version == nil || kind == nil || uid == nil) {
		name, err := d.ReadValue()
		if err != nil {
			return nil, nil, badReview(err)
		}
		switch string(name) {
		case `"apiVersion"`:
			version, err = readString(d)
		case `"kind"`:
			kind, err = readString(d)
		case `"request"`:
			uid, err = requestUID(d, version != nil && kind != nil)
		default:
			err = d.SkipValue()
		}
		if err != nil {
			return nil, nil, badReview(err)
		}
	}
	switch {
	case !bytes.Equal(version, reviewV1) && !bytes.Equal(version, reviewV1beta1):
		return nil, nil, fmt.Errorf("unsupported apiVersion %s: want admission.k8s.io/v1 or admission.k8s.io/v1beta1", orNone(version))
	case !bytes.Equal(kind, reviewKind):
		return nil, nil, fmt.Errorf("unsupported kind %s: want AdmissionReview", orNone(kind))
	case uid == nil:
		return nil, nil, errors.New("AdmissionReview request has no uid: the answer must echo it")
	}
	return version, uid, nil
}

// requestUID reads the request object as far as its uid (the rest of it
// only when done is false: other members of the review follow).
func requestUID(d *jsontext.Decoder, done bool) (jsontext.Value, error) {
	if d.PeekKind() == 'n' {
		return nil, errors.New("AdmissionReview has no request")
	}
	if err := expect(d, '{'); err != nil {
		return nil, err
	}
	var uid jsontext.Value
	for d.PeekKind() == '"' {
		name, err := d.ReadValue()
		if err != nil {
			return nil, err
		}
		if string(name) != `"uid"` {
			if err := d.SkipValue(); err != nil {
				return nil, err
			}
			continue
		}
		if uid, err = readString(d); err != nil {
			return nil, err
		}
		if len(uid) <= 2 {
			return nil, errors.New("AdmissionReview request has no uid: the answer must echo it")
		}
		if done {
			return uid, nil
		}
	}
	return uid, expect(d, '}')
}

func readString(d *jsontext.Decoder) (jsontext.Value, error) {
	if k := d.PeekKind(); k != '"' {
		return nil, fmt.Errorf("want a string, got %v", k)
	}
	// The value is the decoder's until its next read: a copy is kept.
	v, err := d.ReadValue()
	return bytes.Clone(v), err
}

func expect(d *jsontext.Decoder, k jsontext.Kind) error {
	t, err := d.ReadToken()
	if err != nil {
		return err
	}
	if t.Kind() != k {
		return fmt.Errorf("want %v, got %v", k, t.Kind())
	}
	return nil
}

func badReview(err error) error { return fmt.Errorf("decode AdmissionReview: %w", err) }

func orNone(v jsontext.Value) string {
	if v == nil {
		return "(none)"
	}
	return string(v)
}
