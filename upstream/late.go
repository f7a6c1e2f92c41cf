package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/hookback/hookback/admission"
)

// DefaultLateAnswerTimeout is how long an answer is still awaited after the
// apiserver stopped waiting for it: a developer at a breakpoint.
const DefaultLateAnswerTimeout = 10 * time.Minute

// LateAnswer is an upstream's answer that came after the apiserver had
// stopped waiting (its timeout: a breakpoint, a slow handler), checked like
// any other.
type LateAnswer struct {
	// Target is the upstream URL the review went to.
	Target string
	// UID, Namespace and Name are the request's, for the report.
	UID, Namespace, Name string
	// Review is the AdmissionReview sent, Answer the one received (nil
	// when Err is set).
	Review, Answer []byte
	// Response is what the webhook would have answered, after the checks.
	Response admission.Response
	// Err is why no answer came at all within LateAnswerTimeout.
	Err error
	// Waited is how long after the review was sent the answer came.
	Waited time.Duration
}

// restartPoll is how often a restarting upstream is dialled again.
const restartPoll = 100 * time.Millisecond

// exchange is one review's round trip to the upstream, which may outlive
// the apiserver's wait for it.
type exchange struct {
	f      *Forwarder
	target string
	body   *swapBody
	// waitCtx ends when the apiserver stops waiting; sendCtx, when the
	// answer is no longer worth reading (LateAnswerTimeout after that).
	waitCtx, sendCtx context.Context
}

// send posts the review; while the upstream refuses connections after it
// had been up (a rebuild, a restart), it is dialled again until the
// apiserver stops waiting, and the wait is logged.
func (x *exchange) send() ([]byte, error) {
	start := time.Now()
	// The apiserver gives up at the request's deadline (its timeout
	// query): the wait for a restart ends a little before, so that what
	// went wrong ("nothing listens on ...") reaches whoever asked, rather
	// than a bare timeout from the apiserver or from their own client.
	giveUp, cancel := beforeDeadline(x.waitCtx)
	defer cancel()
	for {
		answer, err := x.post()
		if err == nil {
			x.f.up.Store(true)
			if waited := time.Since(start); waited > restartPoll && x.f.restarting(false) {
				x.f.opts.Log.Info("upstream answered after a restart: hookback waited for it", "upstream", x.f.opts.Base.Host, "waited", waited.Round(time.Millisecond))
			}
			return answer, nil
		}
		if !errors.Is(err, syscall.ECONNREFUSED) || !x.f.up.Load() {
			return nil, err
		}
		if x.f.restarting(true) {
			x.f.opts.Log.Info("upstream refuses connections after it was up: waiting for it to restart, within the webhook's timeout", "upstream", x.f.opts.Base.Host)
		}
		select {
		case <-giveUp.Done():
			return nil, err
		case <-time.After(restartPoll):
		}
	}
}

// answerMargin is at most how long before the apiserver's deadline a
// wait for a restarting upstream ends: a tenth of the time left, at most a
// second.
const answerMargin = time.Second

// beforeDeadline is ctx ending a margin before its deadline (a tenth of
// what is left, at most answerMargin); ctx itself when it has none.
func beforeDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	d, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, d.Add(-min(answerMargin, time.Until(d)/10)))
}

// post is one attempt; its error is unexplained (see Forwarder.explain).
func (x *exchange) post() ([]byte, error) {
	hr, err := http.NewRequestWithContext(x.sendCtx, http.MethodPost, x.target, x.body.reader())
	if err != nil {
		return nil, err
	}
	hr.ContentLength = int64(x.body.len())
	hr.Header.Set("Content-Type", "application/json")
	return x.f.read(hr)
}

// swapBody is the review being sent: the transport's buffer while Handle
// runs, a copy once the answer is late, since the transport reuses its
// buffer after Handle returns and the upstream may still be reading.
type swapBody struct {
	mu  sync.Mutex
	b   []byte
	cur *bodyReader
}

func (s *swapBody) reader() io.Reader {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur = &bodyReader{s: s}
	return s.cur
}

func (s *swapBody) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.b)
}

// detach copies the body away from the transport's buffer and returns it.
func (s *swapBody) detach() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = bytes.Clone(s.b)
	return s.b
}

type bodyReader struct {
	s   *swapBody
	off int
}

func (r *bodyReader) Read(p []byte) (int, error) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	if r.off >= len(r.s.b) {
		return 0, io.EOF
	}
	n := copy(p, r.s.b[r.off:])
	r.off += n
	return n, nil
}

// late reads the answer that comes after Handle returned, checks it, and
// hands it to Options.Late.
func (f *Forwarder) late(req admission.Request, review []byte, sent time.Time, result <-chan sendResult) {
	r := <-result
	la := LateAnswer{Target: f.target, UID: string(req.UID), Namespace: req.Namespace, Name: req.Name, Review: review, Answer: r.answer, Waited: time.Since(sent)}
	if r.err != nil {
		la.Err = f.explain(context.Background(), r.err)
	} else if own, err := admission.NewRequest(review); err != nil {
		la.Err = fmt.Errorf("read the review sent again: %w", err)
	} else {
		// The same review, in bytes the transport no longer reuses.
		la.Response = Check(own, r.answer)
	}
	f.opts.Late(la)
}

type sendResult struct {
	answer []byte
	err    error
}
