package session

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hookback/hookback/inspector"
	"github.com/hookback/hookback/internal/admissionhttp"
	"github.com/hookback/hookback/record"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/upstream"
)

// lateReport reports the answers your upstream sent after the apiserver
// had stopped waiting (a breakpoint, a slow handler): one log line, an
// inspector entry and a --record-dir file marked late, each saying what
// the apiserver did instead and what your webhook would have done. At stop
// it waits a little for the answers still awaited, and records the others
// without an answer (drain).
type lateReport struct {
	log *slog.Logger
	// timeout is --late-answer-timeout: drain never waits longer.
	timeout time.Duration
	// store and dir are set before the server serves (attach).
	store *inspector.Store
	dir   *record.Recorder

	mu sync.Mutex
	// awaiting are the reviews whose late answer has not come, by webhook
	// and uid (a webhook reinvoked with one uid awaits twice); stopped:
	// drain has given up on those left, whose answers are no longer told.
	awaiting map[string][]awaited
	stopped  bool
	// answered wakes drain when an awaited answer came.
	answered chan struct{}
}

// awaited is a review whose late answer has not come yet.
type awaited struct {
	webhook, path, instead string
	review                 upstream.LateAnswer
	sent                   time.Time
}

// lateDrain is how long hookback, stopping, still waits for the late
// answers in flight (at most --late-answer-timeout): long enough for a
// handler that is about to answer, short enough not to hold up a stop.
const lateDrain = 3 * time.Second

func newLateReport(log *slog.Logger, timeout time.Duration) *lateReport {
	return &lateReport{log: log, timeout: timeout, awaiting: map[string][]awaited{}, answered: make(chan struct{}, 1)}
}

// attach adds the inspector's store and the --record-dir recorder, once
// they exist; either may be nil.
func (l *lateReport) attach(s sinks) error {
	l.store = s.store
	dir, err := s.dir()
	l.dir = dir
	return err
}

// forward sets opts to read and report one route's late answers.
func (l *lateReport) forward(opts *upstream.Options, webhook, path string, policies []string) {
	instead := insteadOf(policies)
	opts.Awaiting = func(a upstream.LateAnswer) {
		l.mu.Lock()
		defer l.mu.Unlock()
		k := webhook + "\x00" + a.UID
		l.awaiting[k] = append(l.awaiting[k], awaited{webhook: webhook, path: path, instead: instead, review: a, sent: time.Now().Add(-a.Waited)})
	}
	opts.Late = func(a upstream.LateAnswer) {
		if l.settle(webhook + "\x00" + a.UID) {
			l.report(webhook, path, instead, a)
		}
	}
}

// settle takes an awaited review off the list; false when drain already
// gave up on it.
func (l *lateReport) settle(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w := l.awaiting[key]; len(w) > 0 {
		if l.awaiting[key] = w[1:]; len(w) == 1 {
			delete(l.awaiting, key)
		}
		select {
		case l.answered <- struct{}{}:
		default:
		}
		return true
	}
	return !l.stopped
}

// report is one late answer's log line, inspector entry and record.
func (l *lateReport) report(webhook, path, instead string, a upstream.LateAnswer) {
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
		l.store.RecordServed(admissionhttp.Served{Webhook: webhook, Path: path, UID: a.UID, Review: a.Review, Answer: answer, Failure: failure,
			Start: time.Now().Add(-a.Waited), Took: a.Waited, Upstream: a.Waited, Late: note})
	}
	if l.dir != nil && answer != nil {
		l.dir.RecordLate(webhook, path, a.Review, answer, note)
	}
}

// drain waits, at stop, for the late answers still awaited, up to
// lateDrain and never beyond --late-answer-timeout; each still awaited
// then gets a log line and a --record-dir record marked late without an
// answer, which hookback replay sends again.
func (l *lateReport) drain() {
	if l == nil {
		return
	}
	l.drainWithin(min(lateDrain, l.timeout))
}

func (l *lateReport) drainWithin(bound time.Duration) {
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	for l.left() > 0 {
		select {
		case <-l.answered:
		case <-deadline.C:
			l.giveUp()
			return
		}
	}
	l.giveUp()
}

// left is how many late answers are still awaited.
func (l *lateReport) left() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.awaiting)
}

// giveUp stops awaiting, and reports the reviews whose answer never came:
// a log line each, and a record without an answer.
func (l *lateReport) giveUp() {
	l.mu.Lock()
	var all []awaited
	for _, w := range l.awaiting {
		all = append(all, w...)
	}
	l.awaiting, l.stopped = map[string][]awaited{}, true
	l.mu.Unlock()
	slices.SortFunc(all, func(a, b awaited) int { return a.sent.Compare(b.sent) })
	for _, w := range all {
		waited := time.Since(w.sent).Round(time.Millisecond)
		kept := "recorded in --record-dir without an answer, for hookback replay"
		if l.dir == nil {
			kept = "not recorded: no --record-dir"
		}
		l.log.Warn("hookback stopped before your webhook answered a late review", "webhook", w.webhook,
			"namespace", w.review.Namespace, "name", w.review.Name, "waited", waited, "review", kept)
		if l.dir != nil {
			note := fmt.Sprintf("no answer: hookback stopped %s after the review was sent, before your webhook answered; the apiserver had stopped waiting: %s",
				waited, w.instead)
			l.dir.RecordLate(w.webhook, w.path, w.review.Review, nil, note)
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
