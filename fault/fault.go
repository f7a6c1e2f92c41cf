// Package fault makes a webhook misbehave on purpose, the ways real ones
// fail in the field: refused (nothing answers), timeout (never answers),
// error (HTTP 500) and slow (answers after a delay). `start --fault` and
// `hookback drill` wrap the user's webhooks with it, so a developer sees what
// the apiserver and the cluster do while their webhook is down or slow,
// with the webhook's own failurePolicy and timeoutSeconds as the judges. A
// live session holds its fault in a Switch, which the inspector switches.
package fault

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hookback/hookback/admission"
)

// Kind is how a faulty webhook misbehaves.
type Kind string

// The kinds of fault.
const (
	// Refuse fails the call as a webhook that went away does: the
	// transport closes the connection (resets the stream on HTTP/2) with
	// no answer (admission.CallRefused), and the apiserver applies
	// failurePolicy with its own message ("connection reset", "EOF").
	Refuse Kind = "refuse"
	// Timeout never answers: the call ends when the apiserver stops
	// waiting (timeoutSeconds, or the request's own deadline).
	Timeout Kind = "timeout"
	// Error answers HTTP 500.
	Error Kind = "error"
	// Slow waits Fault.Delay, then answers as the webhook would.
	Slow Kind = "slow"
)

// Fault is one parsed --fault value.
type Fault struct {
	Kind  Kind
	Delay time.Duration
}

// String is the fault as written: refuse, timeout, error or slow=DUR.
func (f Fault) String() string {
	if f.Kind == Slow {
		return fmt.Sprintf("%s=%s", f.Kind, f.Delay)
	}
	return string(f.Kind)
}

// Parse reads refuse, timeout, error or slow=DUR.
func Parse(s string) (Fault, error) {
	kind, arg, hasArg := strings.Cut(s, "=")
	switch k := Kind(kind); k {
	case Refuse, Timeout, Error:
		if hasArg {
			return Fault{}, fmt.Errorf("fault %q: %s takes no value; want refuse, timeout, error or slow=DUR", s, k)
		}
		return Fault{Kind: k}, nil
	case Slow:
		d, err := time.ParseDuration(arg)
		if !hasArg || err != nil || d <= 0 {
			return Fault{}, fmt.Errorf("fault %q: want slow=DUR with a positive duration, such as slow=3s", s)
		}
		return Fault{Kind: Slow, Delay: d}, nil
	}
	return Fault{}, fmt.Errorf("fault %q: want refuse, timeout, error or slow=DUR", s)
}

// Wrap returns h with f injected into every call.
func Wrap(h admission.Handler, f Fault) admission.Handler {
	return admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		return inject(ctx, h, f, req)
	})
}

// inject is one call under f: none, or the fault before (or instead of)
// h.
func inject(ctx context.Context, h admission.Handler, f Fault, req admission.Request) admission.Response {
	switch f.Kind {
	case Refuse:
		return admission.CallRefused(errors.New("hookback fault refuse: connection closed with no answer"))
	case Error:
		return admission.CallFailed(errors.New("hookback fault error: the webhook failed with HTTP 500"))
	case Timeout:
		<-ctx.Done() // the apiserver hung up, or hookback is stopping
		return admission.CallFailed(fmt.Errorf("hookback fault timeout: %w", ctx.Err()))
	case Slow:
		t := time.NewTimer(f.Delay)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return admission.CallFailed(fmt.Errorf("hookback fault slow=%s: %w", f.Delay, ctx.Err()))
		case <-t.C:
		}
	}
	return h.Handle(ctx, req)
}
