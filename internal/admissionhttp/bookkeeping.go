package admissionhttp

// The bookkeeping the transport feeds after each answer: the interfaces
// server.Metrics (Observer), record.Recorder (Recorder) and the inspector's
// Store (ServedRecorder) implement.

import "time"

// Observer is told the outcome of every request a webhook serves, for
// metrics. decision is allowed, denied, errored or bad_request (a request
// that was not a decodable review; took is then zero).
//
// Contract: Observe must be safe for concurrent use and must not block: it
// runs on the request's goroutine, or with Options.Afterwards on the
// goroutine that every admission's bookkeeping shares.
type Observer interface {
	Observe(webhook, decision string, took time.Duration)
}

// UpstreamObserver is an Observer that also wants, for a webhook that
// waited on another server (your own, forwarded to --upstream), that wait
// and hookback's own share of the rest, so that `hookback load` can tell
// the user's server's latency from what hookback adds. Its contract is
// Observe's.
type UpstreamObserver interface {
	ObserveUpstream(webhook string, waited, own time.Duration)
}

// Recorder keeps reviews and answers (hookback start --record-dir).
//
// Contract: Record runs after the answer was written (on the request's
// goroutine, or on Afterwards' one goroutine, which every admission's
// bookkeeping waits for); it must be safe for concurrent use, must not block
// for long, must not keep review or answer past its return (their buffers
// are reused), and must never fail the admission.
type Recorder interface {
	Record(webhook, path string, review, answer []byte)
}

// Served is one admission as the transport served it, for a
// ServedRecorder. Review and Answer are only valid during RecordServed.
type Served struct {
	// Webhook and Path are the webhook that answered and where it is served.
	Webhook, Path string
	// ConfigurationKind, when known, is the kind of the configuration that
	// declares the webhook served at Path (the session knows it from what
	// it registered; the transport does not).
	ConfigurationKind string
	// Review is the AdmissionReview as received.
	Review []byte
	// Answer is the AdmissionReview sent back; nil when the call failed.
	Answer []byte
	// Failure is the message of a failed call (HTTP 500, see CallFailed).
	Failure string
	// Start is when the request arrived; Took is how long hookback took to
	// decide, Upstream the part of it spent waiting on an upstream server.
	Start          time.Time
	Took, Upstream time.Duration
	// Late, when set, marks an answer that came after the apiserver had
	// stopped waiting, and says what the apiserver did instead.
	Late string
	// UID is the review's request uid: it joins what the inspector learns
	// about a review later (start --shadow) to its entry.
	UID string
}

// ServedRecorder is a Recorder that also wants the timing of each
// admission and the calls that failed (the inspector). When
// Options.Recorder implements it, the transport calls RecordServed
// instead of Record, for every answer sent and every failed call.
//
// Contract: as Record's: RecordServed runs where Record would, must not
// block for long, must not keep s.Review or s.Answer past its return, and
// must never fail the admission.
type ServedRecorder interface {
	RecordServed(s Served)
}
