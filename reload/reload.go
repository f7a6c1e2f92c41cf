// Package reload tells hookback when a file it serves from has changed (the
// webhook template, certificate files, your manifests), so the session
// re-renders and re-applies within milliseconds of a save.
package reload

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// FileWatcher reports when a file's content changes. It watches the file's
// directory, not the file, because editors replace files by rename, which
// ends a watch on the file itself. A Secret or ConfigMap volume never
// touches the file's own name: the kubelet swaps the directory's `..data`
// symlink, so events on `..`-names count too. A periodic re-read backs
// fsnotify up where events are lost (network filesystems, full queues).
type FileWatcher struct {
	Path string
	// Interval is the backstop re-read period.
	Interval time.Duration
	// Debounce folds the burst of events one save makes into one change.
	Debounce time.Duration
	Log      *slog.Logger
}

// Watch starts watching and returns once the watch is in place, so no change
// made after it returns is missed. It sends on changed (without blocking; one
// pending change is enough) whenever the content differs from the last seen,
// until ctx is done; wait blocks until the watching goroutine has stopped.
func (w *FileWatcher) Watch(ctx context.Context, changed chan<- struct{}) (wait func(), err error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch %q: %w", w.Path, err)
	}
	if err := fw.Add(filepath.Dir(w.Path)); err != nil {
		w.Log.Warn("cannot watch template directory; falling back to periodic re-read", "dir", filepath.Dir(w.Path), "error", err)
	}
	last, _ := os.ReadFile(w.Path)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer fw.Close()
		w.loop(ctx, fw, last, changed)
	}()
	return func() { <-done }, nil
}

func (w *FileWatcher) loop(ctx context.Context, fw *fsnotify.Watcher, last []byte, changed chan<- struct{}) {
	base := filepath.Clean(w.Path)
	relevant := func(ev fsnotify.Event) bool {
		return filepath.Clean(ev.Name) == base || strings.HasPrefix(filepath.Base(ev.Name), "..")
	}
	poll(ctx, fw, w.Interval, w.Debounce, w.Log, relevant, func() {
		cur, err := os.ReadFile(w.Path)
		if err != nil || bytes.Equal(cur, last) {
			return
		}
		last = cur
		notify(changed)
	})
}

// poll runs until ctx is done: check runs once a burst of relevant events
// has been quiet for debounce, and every interval whatever the events (they
// are lost on network filesystems and full queues).
func poll(ctx context.Context, fw *fsnotify.Watcher, interval, debounce time.Duration, log *slog.Logger, relevant func(fsnotify.Event) bool, check func()) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var quiet <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-fw.Events:
			if ok && quiet == nil && relevant(ev) {
				quiet = time.After(debounce)
			}
		case err, ok := <-fw.Errors:
			if ok {
				log.Warn("file watch error; relying on periodic re-reads", "error", err)
			}
		case <-quiet:
			quiet = nil
			check()
		case <-tick.C:
			check()
		}
	}
}

// notify sends on changed without blocking: one pending change is enough.
func notify(changed chan<- struct{}) {
	select {
	case changed <- struct{}{}:
	default:
	}
}
