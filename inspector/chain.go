package inspector

import (
	"encoding/json"
	"fmt"

	"github.com/hookback/hookback/chain"
)

// maxChainBytes bounds one kept chain view: they live beside the arena,
// so the count of reviews bounds them only with this.
const maxChainBytes = 256 << 10

// SetChain attaches the admission chain view of a request (start --chain:
// view makes chain.View as JSON, on its first call) to the entry of
// webhook's review uid, your webhook's first call of that request, and
// tells the open pages. The view is made when a page or a download first
// shows it, never on the admission's path. A review no longer kept gets
// none.
func (s *Store) SetChain(webhook, uid string, view func() []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := s.n - 1; i >= 0; i-- {
		if e := s.ring[(s.start+i)%s.keep]; e.uid == uid && e.webhook == webhook && e.late == "" {
			e.chain, e.makeChain = nil, view
			s.nextID++
			e.seq = s.nextID
			s.wake()
			return
		}
	}
}

// chainView is e's chain view, made on the first call; nil when none is
// known. It is made outside the store's lock: explaining a chain takes
// milliseconds, and admissions record meanwhile.
func (e *entry) chainView() []byte {
	e.store.mu.Lock()
	b, makeView := e.chain, e.makeChain
	e.store.mu.Unlock()
	if b != nil || makeView == nil {
		return b
	}
	b = makeView()
	if len(b) > maxChainBytes {
		b, _ = json.Marshal(map[string]string{"omitted": fmt.Sprintf("the view is %d bytes, more than the inspector keeps (%d)", len(b), maxChainBytes)})
	}
	e.store.mu.Lock()
	defer e.store.mu.Unlock()
	if e.makeChain != nil {
		e.chain, e.makeChain = b, nil
	}
	return b
}

// chainDetail is the chain view as the review's page shows it.
type chainDetail struct {
	chain.View
	Error string
}

// chainDetailOf parses e's chain view; nil when it has none.
func chainDetailOf(e *entry) *chainDetail {
	b := e.chainView()
	if b == nil {
		return nil
	}
	var d chainDetail
	if err := json.Unmarshal(b, &d.View); err != nil {
		d.Error = "the chain view does not parse: " + err.Error()
	}
	return &d
}
