package chain

import (
	"bytes"
	"context"
	"encoding/json"
	"sync/atomic"
	"time"

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
// it only looks.
type Collector struct {
	Joiner *Joiner
	// yours are the paths of your mutating webhooks (SetYours): only their
	// answers are views.
	yours atomic.Pointer[map[string]bool]
	// calls count the observers' calls, by stage: what proves an observer
	// was (or was not) called.
	first, last, validating atomic.Int64
}

// Webhooks are the three observers, to be served beside your webhooks.
func (c *Collector) Webhooks() []admission.Webhook {
	return []admission.Webhook{
		{Name: "chain-first", Path: PathFirst, Handler: c.observer(StageSubmitted, "chain-first", &c.first)},
		{Name: "chain-last", Path: PathLast, Handler: c.observer(StageAfter, "chain-last", &c.last)},
		{Name: "chain-validating", Path: PathValidating, Handler: c.observer(StageFinal, "chain-validating", &c.validating)},
	}
}

// Calls are how many calls each observer answered: first, last,
// validating.
func (c *Collector) Calls() (first, last, validating int64) {
	return c.first.Load(), c.last.Load(), c.validating.Load()
}

func (c *Collector) observer(stage Stage, name string, n *atomic.Int64) admission.Handler {
	return admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
		n.Add(1)
		c.Joiner.Observe(Observation{Stage: stage, Webhook: name, UID: string(req.UID), At: time.Now(),
			Identity: IdentityOf(&req.AdmissionRequest), Kind: req.Kind.String(), Object: redacted(req.Kind.Kind, req.Object.Raw)})
		return admission.Allowed("")
	})
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
// path is one of SetYours'.
func (c *Collector) Wrap(w admission.Webhook) admission.Webhook {
	inner := w.Handler
	w.Handler = admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		start := time.Now()
		resp := inner.Handle(ctx, req)
		if resp.Failed() || !c.isYours(w.Path) {
			return resp
		}
		o := Observation{Stage: StageYours, Webhook: w.Name, Path: w.Path, UID: string(req.UID), At: start,
			Identity: IdentityOf(&req.AdmissionRequest), Kind: req.Kind.String(), Object: redacted(req.Kind.Kind, req.Object.Raw),
			OldObject: redacted(req.Kind.Kind, req.OldObject.Raw), Groups: req.UserInfo.Groups,
			Allowed: resp.Allowed, Patch: redactedPatch(req.Kind.Kind, resp.Patch)}
		if resp.Result != nil {
			o.Message = resp.Result.Message
		}
		c.Joiner.Observe(o)
		return resp
	})
	return w
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
