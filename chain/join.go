package chain

import (
	"slices"
	"sync"
	"time"
)

// Chain is every view of one request, joined.
type Chain struct {
	Identity Identity `json:"identity"`
	// Submitted is the first observer's view; nil when it saw none (it
	// timed out, or it was registered after the request came).
	Submitted *Observation `json:"submitted,omitempty"`
	// Yours are your webhook's calls, one per round it was called in.
	Yours []Observation `json:"yours"`
	// After are the last observer's views, one per round.
	After []Observation `json:"after,omitempty"`
	// Others are your session's other webhooks' calls for this request:
	// the view is told from the first one's side, and these show as the
	// configurations they are.
	Others []Observation `json:"others,omitempty"`
	// Final is the validating observer's view; nil when it never came (a
	// later webhook denied the request, or the observer was not called).
	Final *Observation `json:"final,omitempty"`
	// Ambiguous is set when other requests with the same identity were in
	// flight at once, so the views may be another's (a ReplicaSet creating
	// identical pods: their views are alike too).
	Ambiguous bool `json:"ambiguous,omitempty"`
	started   time.Time
}

// accepts says in which round the chain can take o as its next view (-1:
// it cannot): the apiserver calls your webhook before the last observer
// in a round, makes at most two rounds, and calls the validators last.
func (c *Chain) accepts(o Observation) int {
	if c.Final != nil {
		return -1
	}
	switch o.Stage {
	case StageYours:
		if len(c.Yours) > 0 && o.Webhook != c.Yours[0].Webhook {
			return 0
		}
		switch {
		case len(c.Yours) == 0 && len(c.After) == 0:
			return 0
		case len(c.Yours) <= 1 && len(c.After) == 1:
			return 1
		}
	case StageAfter:
		if len(c.After) < 2 {
			return len(c.After)
		}
	case StageFinal:
		return 0
	}
	return -1
}

func (c *Chain) add(o Observation) {
	switch o.Stage {
	case StageSubmitted:
		c.Submitted = &o
	case StageYours:
		if len(c.Yours) > 0 && o.Webhook != c.Yours[0].Webhook {
			c.Others = append(c.Others, o)
			return
		}
		c.Yours = append(c.Yours, o)
	case StageAfter:
		c.After = append(c.After, o)
	case StageFinal:
		c.Final = &o
	}
}

// Joiner joins observations into chains. A chain is done when the
// validating observer's view comes, or Expire finds it older than TTL; a
// done chain that your webhook saw goes to Done. Safe for concurrent use.
type Joiner struct {
	// TTL is how long a chain waits for its validating view: longer than
	// the apiserver's own 30s limit on one webhook. Zero means DefaultTTL.
	TTL time.Duration
	// Done receives each done chain your webhook saw; it must not block.
	Done func(*Chain)
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu   sync.Mutex
	open map[Identity][]*Chain
	n    int
}

// DefaultTTL bounds how long a chain waits for its last views.
const DefaultTTL = time.Minute

// maxOpen bounds the chains waiting: beyond it the oldest is done early.
const maxOpen = 4096

// Observe adds one view. A submitted view starts a chain; any other view
// joins the oldest open chain of its identity that can take it, or starts
// one of its own (its earlier views were not taken).
func (j *Joiner) Observe(o Observation) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.open == nil {
		j.open = map[Identity][]*Chain{}
	}
	chains := j.open[o.Identity]
	var c *Chain
	if o.Stage != StageSubmitted {
		// The oldest chain that takes it in round 0, else in round 1:
		// concurrent requests alike are served in the order they came, and
		// a reinvocation is rarer than a first call.
		best := 2
		for _, x := range chains {
			if r := x.accepts(o); r >= 0 && r < best {
				c, best = x, r
			}
		}
	}
	if c == nil {
		c = &Chain{Identity: o.Identity, started: j.now()}
		if len(chains) > 0 {
			c.Ambiguous = true
			for _, x := range chains {
				x.Ambiguous = true
			}
		}
		j.open[o.Identity] = append(chains, c)
		j.n++
	}
	c.add(o)
	if o.Stage == StageFinal {
		j.finish(c)
	}
	if j.n > maxOpen {
		j.expire(time.Time{}, true)
	}
}

// Expire finishes the chains older than TTL. The session calls it
// periodically.
func (j *Joiner) Expire() {
	j.mu.Lock()
	defer j.mu.Unlock()
	ttl := j.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	j.expire(j.now().Add(-ttl), false)
}

// expire finishes the chains started before cutoff, or with oldest the
// single oldest one. Called with j.mu held.
func (j *Joiner) expire(cutoff time.Time, oldest bool) {
	var old *Chain
	for _, chains := range j.open {
		for _, c := range chains {
			switch {
			case oldest && (old == nil || c.started.Before(old.started)):
				old = c
			case !oldest && c.started.Before(cutoff):
				j.finish(c)
			}
		}
	}
	if old != nil {
		j.finish(old)
	}
}

// finish takes c out of the open chains and hands it on. Called with j.mu
// held.
func (j *Joiner) finish(c *Chain) {
	chains := j.open[c.Identity]
	i := slices.Index(chains, c)
	if i < 0 {
		return
	}
	chains = slices.Delete(chains, i, i+1)
	if len(chains) == 0 {
		delete(j.open, c.Identity)
	} else {
		j.open[c.Identity] = chains
	}
	j.n--
	if len(c.Yours) > 0 && j.Done != nil {
		j.Done(c)
	}
}

// Open is how many chains wait for their last views.
func (j *Joiner) Open() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.n
}

func (j *Joiner) now() time.Time {
	if j.Now != nil {
		return j.Now()
	}
	return time.Now()
}
