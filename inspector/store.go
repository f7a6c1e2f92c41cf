package inspector

import (
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/record"
)

// Defaults of StoreOptions.
const (
	// DefaultKeep is how many reviews are kept (--inspector-keep).
	DefaultKeep = 500
	// DefaultMaxBytes bounds the bytes kept (reviews and answers together):
	// a review can be 7 MiB, so the count alone bounds nothing.
	DefaultMaxBytes = 64 << 20
	// maxPendingEvents bounds the Events waiting for their review's answer,
	// per webhook.
	maxPendingEvents = 32
)

// StoreOptions configure NewStore.
type StoreOptions struct {
	// Keep is how many reviews are kept, the newest; zero means DefaultKeep.
	Keep int
	// MaxBytes bounds the bytes of the kept reviews and answers; zero means
	// DefaultMaxBytes. The oldest are dropped first.
	MaxBytes int64
	// Log receives a line when a review cannot be kept (never its body).
	Log *slog.Logger
}

// Event is a Kubernetes Event a webhook recorded while it decided a review.
type Event struct {
	Time                 time.Time
	Type, Reason, Action string
	Note                 string
	Regarding            string // Kind namespace/name
}

// Store keeps the last reviews hookback served, in a ring bounded in count
// and bytes. It is the admission.ServedRecorder the transport feeds: the
// hot path copies bytes (Secrets' data redacted first) and parses nothing;
// what the page shows is parsed when the page asks.
type Store struct {
	keep     int
	maxBytes int64
	log      *slog.Logger

	mu      sync.Mutex
	ring    []*entry // ring[(start+i)%len(ring)], i < n, oldest first
	start   int
	n       int
	bytes   int64
	nextID  uint64
	subs    map[chan struct{}]struct{}
	pending map[string][]Event
}

var (
	_ admission.Recorder       = (*Store)(nil)
	_ admission.ServedRecorder = (*Store)(nil)
)

// NewStore returns an empty store.
func NewStore(opts StoreOptions) *Store {
	if opts.Keep <= 0 {
		opts.Keep = DefaultKeep
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Store{keep: opts.Keep, maxBytes: opts.MaxBytes, log: opts.Log,
		ring: make([]*entry, opts.Keep), subs: map[chan struct{}]struct{}{}}
}

// Record implements admission.Recorder, for a transport that does not know
// ServedRecorder: the review is kept without timings.
func (s *Store) Record(webhook, path string, review, answer []byte) {
	s.RecordServed(admission.Served{Webhook: webhook, Path: path, Review: review, Answer: answer, Start: time.Now()})
}

// RecordServed implements admission.ServedRecorder: it copies the review
// (redacted when it may hold a Secret) and the answer into the ring, and
// wakes the open pages.
func (s *Store) RecordServed(x admission.Served) {
	review, answer, err := record.RedactExchange(x.Review, x.Answer)
	if err != nil {
		s.log.Warn("inspector keeps no body of a review it cannot redact", "webhook", x.Webhook, "error", err)
		review, answer = nil, nil
	}
	// One allocation for both (the transport reuses its buffers); Concat
	// does not zero what it copies over.
	buf := slices.Concat(review, answer)
	e := &entry{webhook: x.Webhook, path: x.Path, failure: x.Failure, start: x.Start, took: x.Took, upstream: x.Upstream,
		review: buf[:len(review):len(review)], unredactable: err != nil}
	if answer != nil {
		e.answer = buf[len(review):]
	}
	s.mu.Lock()
	if len(s.pending) > 0 {
		e.events = s.claimEvents(x.Webhook, x.Start)
	}
	s.add(e)
	for ch := range s.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	s.mu.Unlock()
}

// add appends e as the newest entry, dropping the oldest ones past the
// count or byte bound. Called with s.mu held.
func (s *Store) add(e *entry) {
	s.nextID++
	e.id = s.nextID
	if e.size() > s.maxBytes {
		// Bigger than the whole bound: keep that it happened, not the body.
		e.review, e.answer, e.tooBig = nil, nil, true
	}
	size := e.size()
	for s.n > 0 && (s.n == s.keep || s.bytes+size > s.maxBytes) {
		old := s.ring[s.start]
		s.ring[s.start] = nil
		s.bytes -= old.size()
		s.start = (s.start + 1) % s.keep
		s.n--
	}
	s.ring[(s.start+s.n)%s.keep] = e
	s.n++
	s.bytes += size
}

// AddEvent notes an Event a webhook recorded; it is attached to that
// webhook's review that is answered next and started before the Event.
// Events are matched by webhook and time: two concurrent reviews of one
// webhook may swap theirs.
func (s *Store) AddEvent(webhook string, ev Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == nil {
		s.pending = map[string][]Event{}
	}
	p := append(s.pending[webhook], ev)
	if len(p) > maxPendingEvents {
		p = p[len(p)-maxPendingEvents:]
	}
	s.pending[webhook] = p
}

// claimEvents takes the pending Events of webhook recorded since start;
// older ones belong to no review still to come and are dropped. Called with
// s.mu held.
func (s *Store) claimEvents(webhook string, start time.Time) []Event {
	p, ok := s.pending[webhook]
	if !ok {
		return nil
	}
	delete(s.pending, webhook)
	var out []Event
	for _, ev := range p {
		if !ev.Time.Before(start) {
			out = append(out, ev)
		}
	}
	return out
}

// subscribe returns a channel that receives a value (coalesced) whenever a
// review is added, and the function that ends the subscription.
func (s *Store) subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	s.subs[ch] = struct{}{}
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		delete(s.subs, ch)
		s.mu.Unlock()
	}
}

// since returns the kept entries newer than id, oldest first.
func (s *Store) since(id uint64) []*entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*entry
	for i := 0; i < s.n; i++ {
		if e := s.ring[(s.start+i)%s.keep]; e.id > id {
			out = append(out, e)
		}
	}
	return out
}

// get returns the kept entry id, or nil.
func (s *Store) get(id uint64) *entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i < s.n; i++ {
		if e := s.ring[(s.start+i)%s.keep]; e.id == id {
			return e
		}
	}
	return nil
}

// usage reports how many entries and bytes are kept.
func (s *Store) usage() (n int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n, s.bytes
}

// Keep is the count bound.
func (s *Store) Keep() int { return s.keep }

// entry is one kept review. Fields set at record time never change; the
// summary is parsed once, when first asked for.
type entry struct {
	id             uint64
	webhook, path  string
	review, answer []byte
	failure        string
	start          time.Time
	took, upstream time.Duration
	events         []Event
	// unredactable: the review could not be parsed to redact it, so no body
	// was kept; tooBig: the bodies exceeded the byte bound alone.
	unredactable, tooBig bool

	once sync.Once
	sum  *summary
}

func (e *entry) size() int64 { return int64(len(e.review) + len(e.answer)) }

// summary parses the entry on first use.
func (e *entry) summary() *summary {
	e.once.Do(func() {
		sum := summarize(e)
		e.sum = &sum
	})
	return e.sum
}
