package chain

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// queueLen bounds the views taken but not yet joined: more than the
// apiserver's usual concurrency times the four calls of a request.
const queueLen = 1024

// queueBytes bounds the reviews those views hold: a burst of big objects
// is dropped rather than held.
const queueBytes = 64 << 20

// pending is one view before it is joined: an observer's review as
// received, or your webhook's call.
type pending struct {
	stage   Stage
	webhook string
	at      time.Time
	review  *reviewBuf
	yours   *yoursCall
}

// reviewBuf is an observer's review and its answer, pooled: Run returns it
// once the view is made.
type reviewBuf struct {
	body  bytes.Buffer
	reply []byte
}

var reviewPool = sync.Pool{New: func() any { return new(reviewBuf) }}

// queue is the Collector's views in the order they were taken, bounded by
// count and bytes. A view that finds it full is dropped and counted
// (Dropped): the request is not held, and its chain is told without that
// view, or not at all.
type queue struct {
	ch      chan pending
	bytes   atomic.Int64
	dropped atomic.Int64
}

func (q *queue) init() { q.ch = make(chan pending, queueLen) }

// put queues p, or drops it. Called on the request's goroutine: it never
// blocks.
func (q *queue) put(c *Collector, p pending) {
	var n int64
	if p.review != nil {
		n = int64(p.review.body.Len())
		if q.bytes.Add(n) > queueBytes {
			q.bytes.Add(-n)
			q.drop(c, p)
			return
		}
	}
	select {
	case q.ch <- p:
	default:
		q.bytes.Add(-n)
		q.drop(c, p)
	}
}

func (q *queue) drop(c *Collector, p pending) {
	if p.review != nil {
		reviewPool.Put(p.review)
	}
	// The first drop says why; then one line per thousand, not one per
	// request of a burst.
	if n := q.dropped.Add(1); n == 1 || n%1000 == 0 {
		c.log.Warn("--chain: views dropped: the views waiting to be joined are at their bound (the machine is too busy to keep up); those requests' chains are told without them, or not at all",
			"dropped", n, "bound", queueLen, "bound_bytes", queueBytes)
	}
}

// Dropped is how many views found the queue full and were not joined.
func (c *Collector) Dropped() int64 { return c.q.dropped.Load() }

// Run makes the queued views and joins them, in the order they were
// taken, until ctx ends.
func (c *Collector) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-c.q.ch:
			c.join(p)
		}
	}
}

func (c *Collector) join(p pending) {
	if p.yours != nil {
		c.Joiner.Observe(p.yours.observation())
		return
	}
	o, err := observation(p.stage, p.webhook, p.at, p.review.body.Bytes())
	c.q.bytes.Add(-int64(p.review.body.Len()))
	reviewPool.Put(p.review)
	if err != nil {
		// Answered (allowed) at once, but not a review the view can use.
		c.log.Warn("--chain: an observer's review was not decodable; its view is left out", "webhook", p.webhook, "error", err)
		return
	}
	c.Joiner.Observe(o)
}
