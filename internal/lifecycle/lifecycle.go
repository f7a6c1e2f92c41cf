// Package lifecycle runs the goroutines of one long-lived run (a session of
// `hookback start`, a replica of `hookback serve`) as groups on one context
// tree. Each Group is stopped by whoever made it, which cancels its context
// and waits for every goroutine it started; a child group ends no later than
// its parent. What the goroutines return is collected in one Errors, which
// also tells the run's loop when the first of them stopped on its own,
// without a channel sized by hand for the number of senders.
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Errors collects what a run's goroutines returned.
//
// Contract: safe for concurrent use; the zero value is not usable (New).
type Errors struct {
	mu      sync.Mutex
	errs    []error
	first   error
	stopped chan struct{}
	once    sync.Once
}

// NewErrors returns an empty collection.
func NewErrors() *Errors { return &Errors{stopped: make(chan struct{})} }

// report records err and marks the collection stopped.
func (e *Errors) report(err error) {
	e.mu.Lock()
	e.errs = append(e.errs, err)
	e.mu.Unlock()
	e.once.Do(func() {
		e.mu.Lock()
		e.first = err
		e.mu.Unlock()
		close(e.stopped)
	})
}

// Stopped is closed once a goroutine returned an error.
func (e *Errors) Stopped() <-chan struct{} { return e.stopped }

// First is the first error reported, nil while there is none.
func (e *Errors) First() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.first
}

// Err joins every error reported.
func (e *Errors) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return errors.Join(e.errs...)
}

// Group is a set of goroutines started together and stopped together.
type Group struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errs   *Errors
}

// NewGroup starts a group under parent whose goroutines report to errs.
func NewGroup(parent context.Context, errs *Errors) *Group {
	ctx, cancel := context.WithCancel(parent)
	return &Group{ctx: ctx, cancel: cancel, errs: errs}
}

// Child is a group under g: stopping g stops it too; stop it first when
// its goroutines must end before g's.
func (g *Group) Child() *Group { return NewGroup(g.ctx, g.errs) }

// Context is the group's context, done once Stop is called.
func (g *Group) Context() context.Context { return g.ctx }

// Go runs f on a goroutine of the group. An error it returns is kept and
// tells Stopped, unless it is the group's own cancellation; a nil return
// is a quiet end.
func (g *Group) Go(f func(ctx context.Context) error) {
	g.wg.Go(func() {
		err := f(g.ctx)
		if err == nil || g.ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return
		}
		g.errs.report(err)
	})
}

// GoUntilStopped is Go for f that must run as long as the group (a
// server): a return before Stop, even without an error, is one.
func (g *Group) GoUntilStopped(name string, f func(ctx context.Context) error) {
	g.Go(func(ctx context.Context) error {
		err := f(ctx)
		if err == nil && ctx.Err() == nil {
			return fmt.Errorf("%s stopped", name)
		}
		return err
	})
}

// Wait tracks f, a goroutine's wait function handed back by something that
// started its own (a file watcher), so Stop waits for it too. Its return
// is not a stop of the run.
func (g *Group) Wait(f func()) { g.wg.Go(f) }

// Stop cancels the group's context and waits for its goroutines.
func (g *Group) Stop() {
	g.cancel()
	g.wg.Wait()
}
