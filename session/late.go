package session

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/inspector"
	"github.com/hookback/hookback/record"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/upstream"
)

// lateReport reports the answers your upstream sent after the apiserver
// had stopped waiting (a breakpoint, a slow handler): one log line, an
// inspector entry and a --record-dir file marked late, each saying what
// the apiserver did instead and what your webhook would have done.
type lateReport struct {
	log *slog.Logger
	// store and dir are set before the server serves (attach).
	store *inspector.Store
	dir   *record.Recorder
}

// attach adds the inspector's store and the --record-dir recorder, once
// they exist; either may be nil.
func (l *lateReport) attach(cfg Config, store *inspector.Store) error {
	l.store = store
	if cfg.RecordDir != "" {
		dir, err := record.NewRecorder(cfg.RecordDir, cfg.Log)
		if err != nil {
			return err
		}
		l.dir = dir
	}
	return nil
}

// forward is the upstream.Options.Late of one route.
func (l *lateReport) forward(webhook, path string, policies []string) func(upstream.LateAnswer) {
	instead := insteadOf(policies)
	return func(a upstream.LateAnswer) {
		would, failure := wouldHave(a)
		l.log.Warn("late answer from your webhook: the apiserver had stopped waiting", "webhook", webhook,
			"namespace", a.Namespace, "name", a.Name, "waited", a.Waited.Round(time.Millisecond), "apiserver", instead, "webhook_would_have", would)
		note := fmt.Sprintf("answered %s after the review was sent, when the apiserver had stopped waiting: %s; your webhook would have %s",
			a.Waited.Round(time.Millisecond), instead, would)
		answer := a.Answer
		if failure != "" {
			answer = nil
		}
		if l.store != nil {
			l.store.RecordServed(admission.Served{Webhook: webhook, Path: path, Review: a.Review, Answer: answer, Failure: failure,
				Start: time.Now().Add(-a.Waited), Took: a.Waited, Upstream: a.Waited, Late: note})
		}
		if l.dir != nil && answer != nil {
			l.dir.RecordLate(webhook, path, a.Review, answer, note)
		}
	}
}

// insteadOf says what the apiserver does when a webhook with these
// failure policies does not answer in time.
func insteadOf(policies []string) string {
	switch {
	case len(policies) == 1 && policies[0] == "Ignore":
		return "failurePolicy Ignore applied, the object was admitted unchanged by this webhook"
	case len(policies) == 1:
		return "failurePolicy Fail applied, the request was rejected"
	}
	return "each webhook's failurePolicy applied (Ignore: admitted unchanged; Fail: rejected)"
}

// wouldHave says what the late answer decided, and the failure when it
// did not pass the checks or never came.
func wouldHave(a upstream.LateAnswer) (string, string) {
	r := a.Response
	msg := ""
	if r.Result != nil {
		msg = r.Result.Message
	}
	switch {
	case a.Err != nil:
		return "answered nothing: " + a.Err.Error(), a.Err.Error()
	case r.Failed():
		return "failed the checks: " + msg, msg
	case !r.Allowed:
		return fmt.Sprintf("denied it: %q", msg), ""
	case len(r.Patch) > 0:
		var ops []json.RawMessage
		_ = json.Unmarshal(r.Patch, &ops)
		return fmt.Sprintf("patched it (%d operations)", len(ops)), ""
	}
	return "allowed it", ""
}

// failurePolicies maps each of your webhooks to its failurePolicy as
// registered (Fail when unset, as the apiserver defaults it).
func failurePolicies(reg *registration.Registration) map[string]string {
	out := map[string]string{}
	for _, o := range reg.Objects {
		hooks, _ := o.Object["webhooks"].([]any)
		for _, h := range hooks {
			hm, _ := h.(map[string]any)
			name, _ := hm["name"].(string)
			policy, _ := hm["failurePolicy"].(string)
			if policy == "" {
				policy = "Fail"
			}
			out[name] = policy
		}
	}
	return out
}

// routePolicies are the distinct failure policies of a route's webhooks.
func routePolicies(r registration.Route, policies map[string]string) []string {
	var out []string
	for _, w := range r.Webhooks {
		if p := policies[w]; p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, strings.Compare)
	return out
}
