package lifecycle

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestGroupStopsItsGoroutinesChildFirst(t *testing.T) {
	errs := NewErrors()
	parent := NewGroup(context.Background(), errs)
	child := parent.Child()
	var childDone, parentDone atomic.Bool
	child.Go(func(ctx context.Context) error {
		<-ctx.Done()
		childDone.Store(true)
		return ctx.Err() // the group's own cancellation: not an error
	})
	parent.Go(func(ctx context.Context) error {
		<-ctx.Done()
		parentDone.Store(true)
		return nil
	})
	child.Stop()
	if !childDone.Load() || parentDone.Load() {
		t.Fatalf("after the child's Stop: child done %v, parent done %v; want only the child", childDone.Load(), parentDone.Load())
	}
	parent.Stop()
	if !parentDone.Load() {
		t.Fatal("parent goroutine still running after Stop")
	}
	select {
	case <-errs.Stopped():
		t.Fatalf("Stopped closed by clean returns: %v", errs.First())
	default:
	}
	if err := errs.Err(); err != nil {
		t.Errorf("Err = %v, want none", err)
	}
}

func TestErrorsTellTheFirstStop(t *testing.T) {
	tests := []struct {
		name    string
		start   func(g *Group)
		wantErr string
	}{
		{name: "an error", start: func(g *Group) {
			g.Go(func(context.Context) error { return errors.New("boom") })
		}, wantErr: "boom"},
		{name: "a server that returned early", start: func(g *Group) {
			g.GoUntilStopped("the server", func(context.Context) error { return nil })
		}, wantErr: "the server stopped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := NewErrors()
			g := NewGroup(context.Background(), errs)
			tt.start(g)
			select {
			case <-errs.Stopped():
			case <-time.After(10 * time.Second):
				t.Fatal("Stopped never closed")
			}
			g.Stop()
			if err := errs.First(); err == nil || err.Error() != tt.wantErr {
				t.Errorf("First = %v, want %q", err, tt.wantErr)
			}
			if err := errs.Err(); err == nil || err.Error() != tt.wantErr {
				t.Errorf("Err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestWaitIsWaitedForButNotAStop(t *testing.T) {
	errs := NewErrors()
	g := NewGroup(context.Background(), errs)
	release := make(chan struct{})
	var waited atomic.Bool
	g.Wait(func() { <-release; waited.Store(true) })
	go func() { <-g.Context().Done(); close(release) }()
	g.Stop()
	if !waited.Load() {
		t.Fatal("Stop returned before the wait function did")
	}
	select {
	case <-errs.Stopped():
		t.Fatal("a wait function's return stopped the run")
	default:
	}
}
