package reload

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/fsnotify/fsnotify"
)

// TreeWatcher reports when anything under its roots changes: your
// manifests, which may be a file, a directory of YAML or a kustomize tree
// whose kustomization reaches into sibling directories (kubebuilder's
// config/default reads ../crd and ../webhook). It watches every directory
// below each root, adding those created later (`make manifests` writes
// new ones), and backs fsnotify with a periodic scan of names, sizes and
// modification times, as FileWatcher backs it with a re-read.
type TreeWatcher struct {
	// Roots are files or directories; a file's directory is watched.
	Roots []string
	// Interval is the backstop scan period.
	Interval time.Duration
	// Debounce folds the burst of writes one generator run makes into one
	// change.
	Debounce time.Duration
	Log      *slog.Logger
}

// Watch starts watching and returns once the watch is in place. It sends on
// changed (without blocking) whenever the tree's fingerprint differs from
// the last seen, until ctx is done; wait blocks until the watching
// goroutine has stopped.
func (w *TreeWatcher) Watch(ctx context.Context, changed chan<- struct{}) (wait func(), err error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch %v: %w", w.Roots, err)
	}
	for _, dir := range w.dirs() {
		if err := fw.Add(dir); err != nil {
			w.Log.Warn("cannot watch a manifests directory; falling back to periodic scans", "dir", dir, "error", err)
		}
	}
	last := w.fingerprint()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer fw.Close()
		w.loop(ctx, fw, last, changed)
	}()
	return func() { <-done }, nil
}

func (w *TreeWatcher) loop(ctx context.Context, fw *fsnotify.Watcher, last string, changed chan<- struct{}) {
	poll(ctx, fw, w.Interval, w.Debounce, w.Log, func(fsnotify.Event) bool { return true }, func() {
		// A directory created since is watched from now on; what was
		// written into it before is in the fingerprint.
		for _, dir := range w.dirs() {
			_ = fw.Add(dir)
		}
		if cur := w.fingerprint(); cur != last {
			last = cur
			notify(changed)
		}
	})
}

// dirs are the directories to watch: each root's tree, or a file root's
// directory.
func (w *TreeWatcher) dirs() []string {
	var out []string
	for _, root := range w.Roots {
		fi, err := os.Stat(root)
		if err != nil {
			continue
		}
		if !fi.IsDir() {
			out = append(out, filepath.Dir(root))
			continue
		}
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				out = append(out, path)
			}
			return nil
		})
	}
	return out
}

// fingerprint sums the name, size and modification time of every file
// under the roots (a file root: itself), and the directories' names.
func (w *TreeWatcher) fingerprint() string {
	h := sha256.New()
	for _, root := range w.Roots {
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() {
				// A new directory counts: a watch for it is added then.
				fmt.Fprintf(h, "%s/\n", path)
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return nil
			}
			fmt.Fprintf(h, "%s\x00%d\x00%s\n", path, fi.Size(), strconv.FormatInt(fi.ModTime().UnixNano(), 10))
			return nil
		})
	}
	return string(h.Sum(nil))
}
