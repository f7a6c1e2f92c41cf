package inspector

import (
	"bytes"
	"cmp"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookback/hookback/internal/admissionhttp"
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
// and bytes. It is the admissionhttp.ServedRecorder the transport feeds: the
// hot path copies bytes (Secrets' data redacted first) and parses nothing;
// what the page shows is parsed when the page asks.
//
// The bodies live in one arena (see arena), not in a slice per review, so
// that what the inspector keeps does not grow the heap that admissions
// allocate from. Their bytes are reused once a review leaves, so nothing
// outside the lock holds them: readers get copies (entry.bodies).
type Store struct {
	keep     int
	maxBytes int64
	log      *slog.Logger

	mu    sync.Mutex
	ring  []*entry // ring[(start+i)%len(ring)], i < n, oldest first
	start int
	n     int
	bytes int64
	arena arena
	head  int // where the newest body ends in the arena
	// nextID numbers entries and their changes: an entry's id is the
	// number it was added with, its seq the number of its last change.
	nextID  uint64
	subs    map[chan struct{}]struct{}
	pending map[string][]Event

	// shadowed are the webhooks compared with the deployed ones (start
	// --shadow), nil without; waiting are comparisons for reviews not
	// recorded yet, by webhook and uid, oldest first in waitOrder.
	shadowing atomic.Bool
	shadowed  map[string]bool
	waiting   map[string]Shadow
	waitOrder []string
	// policyCol: the list has a policy column (start --policy);
	// policyWaiting are views for reviews not recorded yet, by webhook and
	// uid, oldest first in policyOrder.
	policyCol     atomic.Bool
	policyWaiting map[string][]byte
	policyOrder   []string
}

var (
	_ admissionhttp.Recorder       = (*Store)(nil)
	_ admissionhttp.ServedRecorder = (*Store)(nil)
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
	s := &Store{keep: opts.Keep, maxBytes: opts.MaxBytes, log: opts.Log,
		ring: make([]*entry, opts.Keep), subs: map[chan struct{}]struct{}{}}
	s.arena = newArena(s, int(opts.MaxBytes))
	return s
}

// Record implements admissionhttp.Recorder, for a transport that does not know
// ServedRecorder: the review is kept without timings.
func (s *Store) Record(webhook, path string, review, answer []byte) {
	s.RecordServed(admissionhttp.Served{Webhook: webhook, Path: path, Review: review, Answer: answer, Start: time.Now()})
}

// RecordServed implements admissionhttp.ServedRecorder: it copies the review
// (redacted when it may hold a Secret) and the answer into the ring, and
// wakes the open pages.
func (s *Store) RecordServed(x admissionhttp.Served) {
	var shadow *shadowOutcome
	if s.shadowing.Load() && x.UID != "" && x.Late == "" {
		s.mu.Lock()
		shadow = s.claimShadow(&x)
		s.mu.Unlock()
	}
	review, answer, err := record.RedactExchange(x.Review, x.Answer)
	if err != nil {
		s.log.Warn("inspector keeps no body of a review it cannot redact", "webhook", x.Webhook, "error", err)
		review, answer = nil, nil
	}
	e := &entry{store: s, webhook: x.Webhook, path: x.Path, kind: x.ConfigurationKind, uid: x.UID, failure: x.Failure, late: x.Late, shadow: shadow, start: x.Start, took: x.Took, upstream: x.Upstream,
		hasReview: review != nil, hasAnswer: answer != nil, unredactable: err != nil}
	s.mu.Lock()
	if len(s.pending) > 0 {
		e.events = s.claimEvents(x.Webhook, x.Start)
	}
	if len(s.policyWaiting) > 0 && x.Late == "" {
		e.policy = s.claimPolicy(x.Webhook, x.UID)
	}
	s.add(e, review, answer)
	s.wake()
	s.mu.Unlock()
}

// wake tells the open pages that an entry was added or changed. Called
// with s.mu held.
func (s *Store) wake() {
	for ch := range s.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// add appends e as the newest entry with copies of its bodies, dropping the
// oldest entries past the count or byte bound. Called with s.mu held.
func (s *Store) add(e *entry, review, answer []byte) {
	s.nextID++
	e.id, e.seq = s.nextID, s.nextID
	if int64(len(review)+len(answer)) > s.maxBytes {
		// Bigger than the whole bound: keep that it happened, not the body.
		review, answer, e.hasReview, e.hasAnswer, e.tooBig = nil, nil, false, false, true
	}
	if s.n == s.keep {
		s.dropOldest()
	}
	e.reviewLen, e.answerLen = len(review), len(answer)
	if size := e.size(); size > 0 {
		e.off = s.place(size)
		b := s.arena.slice(e.off, size)
		copy(b[copy(b, review):], answer)
		s.head = e.off + size
		s.bytes += int64(size)
	}
	s.ring[(s.start+s.n)%s.keep] = e
	s.n++
}

// place finds room for size bytes in the arena, dropping the oldest entries
// until there is, and returns where. Bodies lie in the arena in the ring's
// order: from the oldest body's offset (tail) up to head, wrapping to 0.
// Called with s.mu held; size is at most s.maxBytes.
func (s *Store) place(size int) int {
	for {
		tail, ok := s.oldestBody()
		if !ok {
			return 0
		}
		if tail < s.head { // the bodies lie in [tail, head)
			if size <= tail {
				// Wrap as soon as the start is free: the arena's lowest
				// pages are the ones already touched.
				return 0
			}
			if int64(s.head+size) <= s.maxBytes {
				return s.head
			}
		} else if s.head+size <= tail { // in [tail, top) and [0, head)
			return s.head
		}
		s.dropOldest()
	}
}

// oldestBody is the arena offset of the oldest kept entry with a body.
// Called with s.mu held.
func (s *Store) oldestBody() (int, bool) {
	for i := 0; i < s.n; i++ {
		if e := s.ring[(s.start+i)%s.keep]; e.size() > 0 {
			return e.off, true
		}
	}
	return 0, false
}

// dropOldest removes the oldest entry; its bytes are free to reuse from now
// on. Called with s.mu held and s.n > 0.
func (s *Store) dropOldest() {
	old := s.ring[s.start]
	s.ring[s.start] = nil
	old.gone = true
	s.bytes -= int64(old.size())
	s.start = (s.start + 1) % s.keep
	s.n--
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

// since returns the kept entries newer than id, oldest first, and the seq
// that changes asks from to see what came after them.
func (s *Store) since(id uint64) ([]*entry, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*entry
	for i := 0; i < s.n; i++ {
		if e := s.ring[(s.start+i)%s.keep]; e.id > id {
			out = append(out, e)
		}
	}
	return out, s.nextID
}

// change is an entry added or changed, and the seq of that change.
type change struct {
	e   *entry
	seq uint64
}

// changes returns the kept entries added or changed after seq, in the
// order they changed, and the seq to ask from next.
func (s *Store) changes(seq uint64) ([]change, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []change
	for i := 0; i < s.n; i++ {
		if e := s.ring[(s.start+i)%s.keep]; e.seq > seq {
			out = append(out, change{e, e.seq})
		}
	}
	slices.SortFunc(out, func(a, b change) int { return cmp.Compare(a.seq, b.seq) })
	return out, s.nextID
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

// entry is one kept review. Fields set at record time never change (but
// those guarded by store.mu); the summary is parsed once, when first asked
// for.
type entry struct {
	store         *Store
	id            uint64
	webhook, path string
	// kind is the configuration kind of the webhook, when known.
	kind           string
	uid            string
	failure        string
	late           string
	start          time.Time
	took, upstream time.Duration
	events         []Event
	// Where the bodies are in the store's arena, review then answer; a
	// review or answer not kept (has* false) is nil, not empty, to readers.
	off, reviewLen, answerLen int
	hasReview, hasAnswer      bool
	// unredactable: the review could not be parsed to redact it, so no body
	// was kept; tooBig: the bodies exceeded the byte bound alone.
	unredactable, tooBig bool
	// gone: dropped from the store, its arena bytes now another's; seq:
	// when it last changed; shadow: its comparison with the deployed
	// webhook, nil until known. Guarded by store.mu.
	gone   bool
	seq    uint64
	shadow *shadowOutcome
	// chain is the admission chain view of the request (start --chain),
	// JSON; nil until made by makeChain, which is nil until the view is
	// known and once it is made. Guarded by store.mu.
	chain     []byte
	makeChain func() []byte
	// policy is start --policy's view of the review (PolicyView), JSON;
	// nil until known. Guarded by store.mu.
	policy []byte

	once sync.Once
	sum  *summary
}

func (e *entry) size() int { return e.reviewLen + e.answerLen }

// bodies returns copies of e's review and answer: nil when they were not
// kept, or once e has left the store.
func (e *entry) bodies() (review, answer []byte) {
	s := e.store
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.gone {
		return nil, nil
	}
	b := bytes.Clone(s.arena.slice(e.off, e.size()))
	if e.hasReview {
		review = b[:e.reviewLen:e.reviewLen]
	}
	if e.hasAnswer {
		answer = b[e.reviewLen:]
	}
	return review, answer
}

// summary parses the entry on first use.
func (e *entry) summary() *summary {
	e.once.Do(func() {
		sum := summarize(e)
		e.sum = &sum
	})
	return e.sum
}
