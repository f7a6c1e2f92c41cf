package server

import (
	"net/http"
	"sync/atomic"
	"time"
)

// inFlight counts the requests the webhook server is serving, so that Start
// returns only once they, and so their bookkeeping, are done: Shutdown
// waits for them only until its bound, and Close does not wait at all.
type inFlight struct {
	n       atomic.Int64
	closing atomic.Bool
	drained chan struct{} // signalled when n reaches zero while closing
}

func newInFlight() *inFlight { return &inFlight{drained: make(chan struct{}, 1)} }

// wrap counts h's requests.
func (f *inFlight) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.n.Add(1)
		defer f.leave()
		h.ServeHTTP(w, r)
	})
}

func (f *inFlight) leave() {
	if f.n.Add(-1) == 0 && f.closing.Load() {
		select {
		case f.drained <- struct{}{}:
		default:
		}
	}
}

// wait waits up to bound for the requests being served to return and
// reports how many still run then. Their contexts are cancelled once the
// server is closed, and handlers must honour them, so the bound is only
// reached by a handler that does not.
func (f *inFlight) wait(bound time.Duration) int64 {
	f.closing.Store(true)
	timer := time.NewTimer(bound)
	defer timer.Stop()
	for {
		n := f.n.Load()
		if n <= 0 {
			return 0
		}
		select {
		case <-f.drained:
		case <-timer.C:
			return f.n.Load()
		}
	}
}
