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
// A Date header has whole seconds, so the estimate is good to about half a
// second plus the request's latency: ample for Leases of tens of seconds.
// Before the first answer, and for clients not built from a Config, it is
// the local clock.
type ServerClock struct {
	mu     sync.Mutex
	date   string        // the last Date header read, to parse each second once
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

// observe takes the Date header of an answer received at local time at.
func (c *ServerClock) observe(date string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// The first answer within a second is read closest to when the
	// apiserver's clock turned to it; the next ones add nothing.
	if date == "" || date == c.date {
		return
	}
	t, err := http.ParseTime(date)
	if err != nil {
		return
	}
	c.date = date
	// The apiserver's time lies within the second the header names: take
	// its middle.
	c.offset = t.Add(500 * time.Millisecond).Sub(at)
}

// roundTripper records the Date of every answer passing through it.
type roundTripper struct {
	clock *ServerClock
	next  http.RoundTripper
}

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rt.next.RoundTrip(req)
	if err == nil {
		rt.clock.observe(resp.Header.Get("Date"), time.Now())
	}
	return resp, err
}

// wrap is a rest.Config WrapTransport.
func (c *ServerClock) wrap(next http.RoundTripper) http.RoundTripper {
	return &roundTripper{clock: c, next: next}
}
