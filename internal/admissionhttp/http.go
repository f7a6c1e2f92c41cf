// Package admissionhttp is hookback's HTTP transport for admission
// webhooks: it serves an admission.Handler for both AdmissionReview
// versions (method, content type, body cap, decoding, the typed reply, a
// handler's panic) and owns each admission's bookkeeping (the log line, the
// metrics through an Observer, the --record-dir and inspector copies
// through a Recorder, done after the answer has left by Afterwards).
//
// It is internal, and apart from package admission, because that
// bookkeeping is hookback's own: a handler author writes against admission
// and hands Webhooks to hookback (cli.Extension), and no user program
// serves a Handler itself (examples/custom-webhook does not), so the
// transport can change with hookback's server, inspector and recorder
// without changing the API handlers are written against. Each served
// request's review is read into a buffer of its own, which its
// admission.Request keeps (Review stays valid after Handle) and the
// bookkeeping reads after the answer has left.
package admissionhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hookback/hookback/admission"
)

// DefaultMaxBodyBytes caps an AdmissionReview body. The apiserver limits an
// object to 3 MiB, and a review can carry object and oldObject, so 7 MiB
// admits every real review while bounding memory per request.
const DefaultMaxBodyBytes = 7 << 20

// Options configure NewHandler.
type Options struct {
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

// admissionHTTP is the transport for one webhook: method, content type, body
// cap, decoding either review version, the typed reply, logging and metrics.
type admissionHTTP struct {
	name    string
	path    string
	handler admission.Handler
	log     *slog.Logger
	obs     Observer
	upObs   UpstreamObserver
	rec     Recorder
	served  ServedRecorder
	after   *Afterwards
	maxBody int64
}

var _ http.Handler = (*admissionHTTP)(nil)

// NewHandler serves w over HTTP: w.Handler decides each request, w.Name
// labels its log lines and observations.
func NewHandler(w admission.Webhook, opts Options) http.Handler {
	a := &admissionHTTP{name: w.Name, path: w.Path, handler: w.Handler, log: opts.Log, obs: opts.Observer, rec: opts.Recorder, after: opts.Afterwards, maxBody: opts.MaxBodyBytes}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.maxBody <= 0 {
		a.maxBody = DefaultMaxBodyBytes
	}
	a.served, _ = a.rec.(ServedRecorder)
	a.upObs, _ = a.obs.(UpstreamObserver)
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
	body, err := readBody(w, r, a.maxBody)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			a.fail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", a.maxBody))
			return
		}
		a.fail(w, http.StatusBadRequest, "read request body: "+err.Error())
		return
	}
	req, err := admission.NewRequest(body)
	if err != nil {
		a.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	waits := new(admission.Waits)
	ctx := admission.WithWaits(r.Context(), waits)
	if t := timeoutParam(r.URL.RawQuery); t > 0 {
		// The apiserver gives up then: no handler should outlive it.
		req.Timeout = t
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	resp := a.call(ctx, req)
	a.reply(w, r, req, resp, start, waits.Total())
}

// readBody reads the review into a buffer of its own, at most max bytes:
// of the declared length at once when the client declared one (the
// apiserver does), else grown as it comes.
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	in := http.MaxBytesReader(w, r.Body, max)
	if n := r.ContentLength; n > 0 && n <= max {
		body := make([]byte, n)
		if _, err := io.ReadFull(in, body); err != nil {
			return nil, err
		}
		return body, nil
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(in); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
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

// call runs the handler, turning a panic into an internal error.
func (a *admissionHTTP) call(ctx context.Context, req admission.Request) (resp admission.Response) {
	defer func() {
		if p := recover(); p != nil {
			a.log.Error("webhook panicked", "webhook", a.name, "uid", req.UID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			resp = admission.Errored(http.StatusInternalServerError, fmt.Errorf("internal error in webhook %s", a.name))
		}
	}()
	return a.handler.Handle(ctx, req)
}

// reply writes the answer, then hands the bookkeeping to
// a.after.
func (a *admissionHTTP) reply(w http.ResponseWriter, r *http.Request, req admission.Request, resp admission.Response, start time.Time, waited time.Duration) {
	job := afterJob{a: a, req: req, resp: resp, start: start, took: time.Since(start), waited: waited}
	if resp.Refused() {
		a.after.do(job)
		refuse(w, r, resp.Result.Message)
		return
	}
	if resp.Failed() {
		http.Error(w, resp.Result.Message, http.StatusInternalServerError)
		a.after.do(job)
		return
	}
	out := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: req.ReviewVersion, Kind: "AdmissionReview"}, Response: &admissionv1.AdmissionResponse{
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
		a.fail(w, http.StatusInternalServerError, "encode AdmissionResponse: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(answer)
	job.answer = answer
	a.after.do(job)
}

// logAdmission writes the one line per request: never the object body.
func (a *admissionHTTP) logAdmission(req admission.Request, resp admission.Response, took, waited time.Duration) {
	decision := "allowed"
	if !resp.Allowed {
		decision = "denied"
		if resp.Result != nil && resp.Result.Code >= 500 {
			decision = "errored"
		}
	}
	a.observe(decision, took)
	if waited > 0 && a.upObs != nil {
		// A handler reports its wait itself: never more than it took, but
		// a histogram must not be handed a negative share if it does.
		a.upObs.ObserveUpstream(a.name, waited, max(took-waited, 0))
	}
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
