package chain

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/record"
)

// Paths the observers are served at.
const (
	PathFirst      = "/chain/first"
	PathLast       = "/chain/last"
	PathValidating = "/chain/validating"
)

// Collector is the observers' handlers and the wrapper of your webhooks
// (Wrap), feeding one Joiner. Every observer always allows with no patch:
// it only looks, so it answers as soon as it has read the review's uid and
// leaves the decoding, the identity and the join to Run, off the
// apiserver's wait (the cost is measured in docs/performance.md).
//
// Build it with NewCollector and run Run for as long as it is served.
type Collector struct {
	Joiner *Joiner
	log    *slog.Logger
	// maxBody caps an observer's review, as the admission transport caps
	// every other (admission.DefaultMaxBodyBytes).
	maxBody int64
	// yours are the paths of your mutating webhooks (SetYours): only their
	// answers are views.
	yours atomic.Pointer[map[string]bool]
	// calls count the observers' calls, by stage: what proves an observer
	// was (or was not) called.
	first, last, validating atomic.Int64
	// q holds the views taken but not yet joined, in the order they were
	// taken (queue.go).
	q queue
}

// CollectorOptions configure NewCollector.
type CollectorOptions struct {
	// Log receives the warnings of views that could not be joined (never
	// an object); nil discards them.
	Log *slog.Logger
	// MaxBodyBytes caps an observer's review; zero means
	// admission.DefaultMaxBodyBytes.
	MaxBodyBytes int64
}

// NewCollector returns a collector feeding j.
func NewCollector(j *Joiner, o CollectorOptions) *Collector {
	c := &Collector{Joiner: j, log: o.Log, maxBody: o.MaxBodyBytes}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.maxBody <= 0 {
		c.maxBody = admission.DefaultMaxBodyBytes
	}
	c.q.init()
	return c
}

// Handlers are the three observers by path, to be served beside your
// webhooks (not through the admission transport: they answer before they
// decode). obs, when set, is told each call's outcome under the
// observer's name (chain-first, chain-last, chain-validating), as the
// transport tells it of a webhook's.
func (c *Collector) Handlers(obs admission.Observer) map[string]http.Handler {
	return map[string]http.Handler{
		PathFirst:      c.observer(StageSubmitted, "chain-first", &c.first, obs),
		PathLast:       c.observer(StageAfter, "chain-last", &c.last, obs),
		PathValidating: c.observer(StageFinal, "chain-validating", &c.validating, obs),
	}
}

// Calls are how many calls each observer answered: first, last,
// validating.
func (c *Collector) Calls() (first, last, validating int64) {
	return c.first.Load(), c.last.Load(), c.validating.Load()
}

// observation is the view an observer's review gives, once decoded (Run).
func observation(stage Stage, name string, at time.Time, review []byte) (Observation, error) {
	req, err := admission.NewRequest(review)
	if err != nil {
		return Observation{}, err
	}
	return Observation{Stage: stage, Webhook: name, UID: string(req.UID), At: at,
		Identity: IdentityOf(&req.AdmissionRequest), Kind: req.Kind.String(), Object: redacted(req.Kind.Kind, req.Object.Raw)}, nil
}

// redacted is a copy of an object of the request (of kind), a Secret's
// data redacted (record.Redact) so that no view keeps it.
func redacted(kind string, raw []byte) json.RawMessage {
	obj := bytes.Clone(raw)
	if kind != "Secret" || len(obj) == 0 {
		return obj
	}
	review, err := json.Marshal(map[string]any{"request": map[string]json.RawMessage{"object": obj}})
	if err != nil {
		return nil
	}
	red, err := record.Redact(review)
	if err != nil {
		return nil
	}
	var back struct {
		Request struct {
			Object json.RawMessage `json:"object"`
		} `json:"request"`
	}
	if json.Unmarshal(red, &back) != nil {
		return nil
	}
	return back.Request.Object
}

// SetYours says which paths serve your mutating webhooks, as registered
// (the session learns them when it renders its configurations).
func (c *Collector) SetYours(paths map[string]bool) { c.yours.Store(&paths) }

func (c *Collector) isYours(path string) bool {
	p := c.yours.Load()
	return p != nil && (*p)[path]
}

// Wrap has w report each call it answers as your webhook's view, while its
// path is one of SetYours'. The view is made by Run, in the order of the
// observers' views: the first observer's of a request is queued before its
// answer leaves, and so before your webhook is called.
func (c *Collector) Wrap(w admission.Webhook) admission.Webhook {
	inner := w.Handler
	w.Handler = admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		start := time.Now()
		resp := inner.Handle(ctx, req)
		if resp.Failed() || !c.isYours(w.Path) {
			return resp
		}
		// The request's objects and the answer's patch are the call's own
		// (decoded copies, not the transport's buffer): they can wait.
		c.q.put(c, pending{yours: &yoursCall{name: w.Name, path: w.Path, at: start, req: req.AdmissionRequest, resp: resp}})
		return resp
	})
	return w
}

// yoursCall is one call your webhook answered, before it is a view.
type yoursCall struct {
	name, path string
	at         time.Time
	req        admissionv1.AdmissionRequest
	resp       admission.Response
}

func (y *yoursCall) observation() Observation {
	req, resp := &y.req, y.resp
	o := Observation{Stage: StageYours, Webhook: y.name, Path: y.path, UID: string(req.UID), At: y.at,
		Identity: IdentityOf(req), Kind: req.Kind.String(), Object: redacted(req.Kind.Kind, req.Object.Raw),
		OldObject: redacted(req.Kind.Kind, req.OldObject.Raw), Groups: req.UserInfo.Groups,
		Allowed: resp.Allowed, Patch: redactedPatch(req.Kind.Kind, resp.Patch)}
	if resp.Result != nil {
		o.Message = resp.Result.Message
	}
	return o
}

// redactedPatch is a copy of patch; a Secret's keeps its paths, not its
// values.
func redactedPatch(kind string, patch []byte) json.RawMessage {
	if kind != "Secret" || len(patch) == 0 {
		return bytes.Clone(patch)
	}
	var ops []map[string]any
	if json.Unmarshal(patch, &ops) != nil {
		return nil
	}
	for _, op := range ops {
		if _, ok := op["value"]; ok {
			op["value"] = record.Redacted
		}
	}
	b, _ := json.Marshal(ops)
	return b
}
