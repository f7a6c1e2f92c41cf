package kubeconfig

import (
	"net/http"
	"sync"
	"time"
)

// ServerClock tells the time by the apiserver's clock, as far as the Date
// headers of its answers show it. Session Leases are judged by it: a laptop
// whose clock is off by more than a Lease's duration (a VM or WSL after
// sleep) would otherwise see live sessions as dead, or have its own seen so.
// Every hookback writes and reads renewTime on this one clock.
//
// A Date header has whole seconds, stamped somewhere between the request's
// send and its answer's arrival: each answer bounds the offset between the
// clocks to an interval about a second wide. The clock keeps the offset
// closest to its previous one within each new interval: zero while the
// local clock agrees with the apiserver's (the same machine, NTP), the
// smallest correction that fits the answers otherwise.
type ServerClock struct {
	mu     sync.Mutex
	offset time.Duration // the apiserver's clock minus the local one
}

// Now is the current time on the apiserver's clock. A nil clock is the
// local clock.
func (c *ServerClock) Now() time.Time {
	if c == nil {
		return time.Now()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// observe takes the Date header of an answer to a request sent at local
// time sent and answered at local time at.
func (c *ServerClock) observe(date string, sent, at time.Time) {
	if date == "" {
		return
	}
	t, err := http.ParseTime(date)
	if err != nil {
		return
	}
	// The apiserver's clock read t..t+1s at some local instant in sent..at.
	lo, hi := t.Sub(at), t.Add(time.Second).Sub(sent)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset = min(max(c.offset, lo), hi)
}

// roundTripper records the Date of every answer passing through it.
type roundTripper struct {
	clock *ServerClock
	next  http.RoundTripper
}

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	sent := time.Now()
	resp, err := rt.next.RoundTrip(req)
	if err == nil {
		rt.clock.observe(resp.Header.Get("Date"), sent, time.Now())
	}
	return resp, err
}

// wrap is a rest.Config WrapTransport.
func (c *ServerClock) wrap(next http.RoundTripper) http.RoundTripper {
	return &roundTripper{clock: c, next: next}
}
