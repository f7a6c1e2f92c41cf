package admission

import (
	"context"
	"sync/atomic"
	"time"
)

// Waits adds up what a handler reported waiting on other servers
// (ReportWait), so that the admission's log line and hookback's inspector
// show the handler's own time apart. A transport makes one per request and
// hands the handler a context carrying it (WithWaits).
type Waits struct{ total atomic.Int64 }

// Total is what was reported so far.
func (w *Waits) Total() time.Duration { return time.Duration(w.total.Load()) }

type waitsKey struct{}

// WithWaits returns a context whose ReportWait calls add to w.
func WithWaits(ctx context.Context, w *Waits) context.Context {
	return context.WithValue(ctx, waitsKey{}, w)
}

// ReportWait tells the transport that serves ctx's request that the
// handler spent d waiting on another server (a proxy's upstream). It may
// be called more than once (the waits add up) and from any goroutine;
// without a transport that asked (WithWaits) it does nothing, and what is
// reported after Handle returns is not shown.
func ReportWait(ctx context.Context, d time.Duration) {
	if w, ok := ctx.Value(waitsKey{}).(*Waits); ok {
		w.total.Add(int64(d))
	}
}
