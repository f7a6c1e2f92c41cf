package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultMaxBodyBytes caps an AdmissionReview body. The apiserver limits an
// object to 3 MiB, and a review can carry object and oldObject, so 7 MiB
// admits every real review while bounding memory per request.
const DefaultMaxBodyBytes = 7 << 20

// Observer is told the outcome of every request a webhook serves, for
// metrics. decision is allowed, denied, errored or bad_request (a request
// that was not a decodable review; took is then zero).
//
// Contract: Observe must be safe for concurrent use and must not block: it
// runs on the request's goroutine, or with HTTPOptions.Afterwards on the
// goroutine that every admission's bookkeeping shares.
type Observer interface {
	Observe(webhook, decision string, took time.Duration)
}

// HTTPOptions configure NewHTTPHandler.
type HTTPOptions struct {
	// Log receives one line per admission (never the object) and one per
	// rejected request; nil discards them.
	Log *slog.Logger
	// Observer, when set, is told the outcome of every request.
	Observer Observer
	// MaxBodyBytes caps a request body; zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Recorder, when set, is given every review as received and the answer
	// as sent.
	Recorder Recorder
	// Afterwards, when set, does each admission's log line, observation and
	// recording after the answer has left; nil does them on the request's
	// goroutine before its handler returns.
	Afterwards *Afterwards
}

// Recorder keeps reviews and answers (hookback start --record-dir).
//
// Contract: Record runs after the answer was written (on the request's
// goroutine, or on Afterwards' one goroutine, which every admission's
// bookkeeping waits for); it must be safe for concurrent use, must not block
// for long, must not keep review or answer past its return (their buffers
// are reused), and must never fail the admission.
type Recorder interface {
	Record(webhook, path string, review, answer []byte)
}

// Served is one admission as the transport served it, for a
// ServedRecorder. Review and Answer are only valid during RecordServed.
type Served struct {
	// Webhook and Path are the webhook that answered and where it is served.
	Webhook, Path string
	// Review is the AdmissionReview as received.
	Review []byte
	// Answer is the AdmissionReview sent back; nil when the call failed.
	Answer []byte
	// Failure is the message of a failed call (HTTP 500, see CallFailed).
	Failure string
	// Start is when the request arrived; Took is how long hookback took to
	// decide, Upstream the part of it spent waiting on an upstream server.
	Start          time.Time
	Took, Upstream time.Duration
	// Late, when set, marks an answer that came after the apiserver had
	// stopped waiting, and says what the apiserver did instead.
	Late string
	// UID is the review's request uid: it joins what the inspector learns
	// about a review later (start --shadow) to its entry.
	UID string
}

// ServedRecorder is a Recorder that also wants the timing of each
// admission and the calls that failed (the inspector). When
// HTTPOptions.Recorder implements it, the transport calls RecordServed
// instead of Record, for every answer sent and every failed call.
//
// Contract: as Record's: RecordServed runs where Record would, must not
// block for long, must not keep s.Review or s.Answer past its return, and
// must never fail the admission.
type ServedRecorder interface {
	RecordServed(s Served)
}

// admissionHTTP is the transport for one webhook: method, content type, body
// cap, decoding either review version, the typed reply, logging and metrics.
type admissionHTTP struct {
	name    string
	path    string
	handler Handler
	log     *slog.Logger
	obs     Observer
	rec     Recorder
	served  ServedRecorder
	after   *Afterwards
	maxBody int64
}

var _ http.Handler = (*admissionHTTP)(nil)

// NewHTTPHandler serves w over HTTP: w.Handler decides each request, w.Name
// labels its log lines and observations.
func NewHTTPHandler(w Webhook, opts HTTPOptions) http.Handler {
	a := &admissionHTTP{name: w.Name, path: w.Path, handler: w.Handler, log: opts.Log, obs: opts.Observer, rec: opts.Recorder, after: opts.Afterwards, maxBody: opts.MaxBodyBytes}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.maxBody <= 0 {
		a.maxBody = DefaultMaxBodyBytes
	}
	a.served, _ = a.rec.(ServedRecorder)
	return a
}

func (a *admissionHTTP) observe(decision string, took time.Duration) {
	if a.obs != nil {
		a.obs.Observe(a.name, decision, took)
	}
}

func (a *admissionHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	growStack()
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		a.fail(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed: admission reviews are POSTed", r.Method))
		return
	}
	if ct := r.Header.Get("Content-Type"); !isJSON(ct) {
		a.fail(w, http.StatusUnsupportedMediaType, fmt.Sprintf("content type %q not supported: send application/json", ct))
		return
	}
	// The buffer holds the review until its bookkeeping is done (reply).
	buf := getBody()
	if _, err := buf.buf.ReadFrom(http.MaxBytesReader(w, r.Body, a.maxBody)); err != nil {
		bodyPool.Put(buf)
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			a.fail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", a.maxBody))
			return
		}
		a.fail(w, http.StatusBadRequest, "read request body: "+err.Error())
		return
	}
	review, err := decodeReview(buf.buf.Bytes())
	if err != nil {
		bodyPool.Put(buf)
		a.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	req := Request{AdmissionRequest: *review.Request, ReviewVersion: review.APIVersion, body: buf, gen: buf.gen.Load()}
	ctx := r.Context()
	if t := timeoutParam(r.URL.RawQuery); t > 0 {
		// The apiserver gives up then: no handler should outlive it.
		req.Timeout = t
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	resp := a.call(ctx, req)
	buf.expire()
	a.reply(w, review.TypeMeta, req, resp, start, buf)
}

// isJSON reports whether a request's content type is application/json. The
// apiserver sends exactly that, so it is matched before the media type is
// parsed: ParseMediaType allocates, on every request.
func isJSON(contentType string) bool {
	if contentType == "application/json" {
		return true
	}
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// timeoutParam is the apiserver's ?timeout= (it sends e.g. "10s"), zero when
// absent or not a positive duration. It scans the raw query for that one
// parameter rather than building url.Values, on every request.
func timeoutParam(rawQuery string) time.Duration {
	for rawQuery != "" {
		var pair string
		pair, rawQuery, _ = strings.Cut(rawQuery, "&")
		v, ok := strings.CutPrefix(pair, "timeout=")
		if !ok {
			continue
		}
		if strings.ContainsAny(v, "%+") {
			var err error
			if v, err = url.QueryUnescape(v); err != nil {
				return 0
			}
		}
		if t, err := time.ParseDuration(v); err == nil && t > 0 {
			return t
		}
		return 0
	}
	return 0
}

// decodeReview accepts admission.k8s.io/v1 and v1beta1: their JSON shapes are
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
// guessed at.
func decodeReview(body []byte) (*admissionv1.AdmissionReview, error) {
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

// call runs the handler, turning a panic into an internal error.
func (a *admissionHTTP) call(ctx context.Context, req Request) (resp Response) {
	defer func() {
		if p := recover(); p != nil {
			a.log.Error("webhook panicked", "webhook", a.name, "uid", req.UID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			resp = Errored(http.StatusInternalServerError, fmt.Errorf("internal error in webhook %s", a.name))
		}
	}()
	return a.handler.Handle(ctx, req)
}

// reply writes the answer, then hands the bookkeeping, and buf with it, to
// a.after.
func (a *admissionHTTP) reply(w http.ResponseWriter, tm metav1.TypeMeta, req Request, resp Response, start time.Time, buf *body) {
	job := afterJob{a: a, req: req, resp: resp, start: start, took: time.Since(start), buf: buf, waited: time.Duration(buf.wait.Load())}
	if resp.callFailed {
		http.Error(w, resp.Result.Message, http.StatusInternalServerError)
		a.after.do(job)
		return
	}
	out := admissionv1.AdmissionReview{TypeMeta: tm, Response: &admissionv1.AdmissionResponse{
		UID:              req.UID,
		Allowed:          resp.Allowed,
		Result:           resp.Result,
		Warnings:         resp.Warnings,
		AuditAnnotations: resp.AuditAnnotations,
	}}
	if len(resp.Patch) > 0 {
		pt := admissionv1.PatchTypeJSONPatch
		out.Response.Patch = resp.Patch
		out.Response.PatchType = &pt
	}
	answer, err := json.Marshal(out)
	if err != nil {
		bodyPool.Put(buf)
		a.fail(w, http.StatusInternalServerError, "encode AdmissionResponse: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(answer)
	job.answer = answer
	a.after.do(job)
}

// logAdmission writes the one line per request: never the object body.
func (a *admissionHTTP) logAdmission(req Request, resp Response, took, waited time.Duration) {
	decision := "allowed"
	if !resp.Allowed {
		decision = "denied"
		if resp.Result != nil && resp.Result.Code >= 500 {
			decision = "errored"
		}
	}
	a.observe(decision, took)
	res := req.Resource.Resource
	if req.SubResource != "" {
		res += "/" + req.SubResource
	}
	attrs := []slog.Attr{
		slog.String("webhook", a.name),
		slog.String("resource", res),
		slog.String("operation", string(req.Operation)),
		slog.String("namespace", req.Namespace),
		slog.String("name", req.Name),
		slog.String("decision", decision),
		slog.Int("patch_ops", countOps(resp.Patch)),
		slog.Duration("latency", took),
	}
	if waited > 0 {
		// hookback's own share, apart from the upstream's.
		attrs = append(attrs, slog.Duration("upstream", waited), slog.Duration("own", took-waited))
	}
	if req.IsDryRun() {
		attrs = append(attrs, slog.Bool("dry_run", true))
	}
	if !resp.Allowed && resp.Result != nil {
		attrs = append(attrs, slog.String("reason", resp.Result.Message))
	}
	a.log.LogAttrs(context.Background(), slog.LevelInfo, "admission", attrs...)
}

// fail answers a request that is not a decodable review: a plain status and
// message, since there is no UID to echo.
func (a *admissionHTTP) fail(w http.ResponseWriter, code int, msg string) {
	a.observe("bad_request", 0)
	a.log.Warn("rejected admission request", "webhook", a.name, "status", code, "error", msg)
	http.Error(w, msg, code)
}
