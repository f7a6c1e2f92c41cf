package admissionhttp

import (
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/hookback/hookback/admission"
)

// Afterwards does what each admission owes once its answer is written (the
// log line, the metrics, the inspector's and --record-dir's copies) on a
// goroutine of its own. Done on the request's goroutine, that work runs
// before the handler returns, and over HTTP/2 the stream only ends (the
// apiserver only has its answer) when the handler returns, so a
// --record-dir write to a slow disk, or the inspector's copy of a 3 MiB
// review, would hold the answer. (For small reviews on a fast disk the
// difference through the apiserver was within noise: bench/JOURNAL.md,
// "After the answer".)
//
// The zero value is not usable: NewAfterwards, then Run on one goroutine
// and Close when no more admissions are served. Admissions that finish
// after Close do their bookkeeping themselves, as without Afterwards.
type Afterwards struct {
	mu     sync.RWMutex
	closed bool
	jobs   chan afterJob
}

// afterJob is one admission's bookkeeping.
type afterJob struct {
	a      *admissionHTTP
	req    admission.Request
	resp   admission.Response
	start  time.Time
	took   time.Duration
	answer []byte
	// waited is what the handler reported waiting on another server.
	waited time.Duration
}

// NewAfterwards queues up to queue admissions' bookkeeping; an admission
// that finds the queue full waits for room, so a burst slows down answers
// rather than losing log lines or growing without bound.
func NewAfterwards(queue int) *Afterwards {
	return &Afterwards{jobs: make(chan afterJob, max(queue, 1))}
}

// Run does the queued bookkeeping until Close, then what is still queued,
// and returns.
func (f *Afterwards) Run() {
	for j := range f.jobs {
		j.run()
	}
}

// Close stops taking jobs; Run returns once it has done the queued ones.
func (f *Afterwards) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.closed {
		f.closed = true
		close(f.jobs)
	}
}

// do queues j, or runs it here once f is closed (or f is nil).
func (f *Afterwards) do(j afterJob) {
	if f != nil {
		f.mu.RLock()
		if !f.closed {
			f.jobs <- j
			f.mu.RUnlock()
			return
		}
		f.mu.RUnlock()
	}
	j.run()
}

// run logs, observes and records one admission. A panic here (a recorder's
// bug) is logged and dropped: the answer has been sent already, and the
// process must stay up.
func (j afterJob) run() {
	defer func() {
		if p := recover(); p != nil {
			j.a.log.Error("admission bookkeeping panicked", "webhook", j.a.name, "uid", j.req.UID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		}
	}()
	a := j.a
	a.logAdmission(j.req, j.resp, j.took, j.waited)
	body := j.req.Review()
	s := Served{Webhook: a.name, Path: a.path, UID: string(j.req.UID), Review: body, Answer: j.answer, Start: j.start, Took: j.took, Upstream: j.waited}
	switch {
	case j.resp.Failed():
		s.Answer, s.Failure = nil, j.resp.Result.Message
		if a.served != nil {
			a.served.RecordServed(s)
		}
	case a.served != nil:
		a.served.RecordServed(s)
	case a.rec != nil:
		a.rec.Record(a.name, a.path, body, j.answer)
	}
}
