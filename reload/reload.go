// Package reload is hookback's one watch loop: a Watcher calls its OnChange
// after each change to the files or trees it watches (the webhook
// template, certificate files, your manifests, your policies), so the
// session re-renders and re-applies within milliseconds of a save. Like
// controller-runtime's certwatcher it is built in two steps: New puts the
// watch in place and takes the baseline, Start runs the loop until its
// context ends.
package reload

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Options say what a Watcher watches and what it does on a change.
type Options struct {
	// Files are compared by content. Each file's directory is watched,
	// not the file, because editors replace files by rename, which ends a
	// watch on the file itself; a Secret or ConfigMap volume never touches
	// the file's own name (the kubelet swaps the directory's `..data`
	// symlink), and that is a content change too.
	Files []string
	// Trees are files or directories compared by the names, sizes and
	// modification times of everything below them: your manifests, which
	// may be a kustomize tree whose kustomization reaches into sibling
	// directories. Directories created later are watched from then on
	// (`make manifests` writes new ones).
	Trees []string
	// Interval is the backstop: everything is compared again this often,
	// whatever the events say (they are lost on network filesystems and
	// full queues).
	Interval time.Duration
	// Debounce folds the burst of events one save (or one generator run)
	// makes into one change.
	Debounce time.Duration
	Log      *slog.Logger
	// OnChange runs on Start's goroutine after each change, with Start's
	// context; a change made while it runs is reported once it returns.
	OnChange func(ctx context.Context)
}

// Watcher watches what its Options name.
type Watcher struct {
	o    Options
	fw   *fsnotify.Watcher
	last string
	// files are the last content sums of Options.Files that could be read.
	files map[string][sha256.Size]byte
}

// New puts the watch in place and takes the baseline: a change made after
// New returns is reported by Start. A directory that cannot be watched is
// logged and left to the backstop comparison.
func New(o Options) (*Watcher, error) {
	if o.OnChange == nil {
		return nil, errors.New("reload: no OnChange")
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch %v: %w", append(o.Files, o.Trees...), err)
	}
	w := &Watcher{o: o, fw: fw, files: map[string][sha256.Size]byte{}}
	for _, dir := range w.dirs() {
		if err := fw.Add(dir); err != nil {
			o.Log.Warn("cannot watch a directory; relying on periodic re-reads", "dir", dir, "error", err)
		}
	}
	w.last = w.fingerprint()
	return w, nil
}

// Start calls OnChange after each change until ctx ends, then releases
// the watch and returns nil.
func (w *Watcher) Start(ctx context.Context) error {
	defer w.fw.Close()
	tick := time.NewTicker(w.o.Interval)
	defer tick.Stop()
	var quiet <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-w.fw.Events:
			if ok && quiet == nil {
				quiet = time.After(w.o.Debounce)
			}
		case err, ok := <-w.fw.Errors:
			if ok {
				w.o.Log.Warn("file watch error; relying on periodic re-reads", "error", err)
			}
		case <-quiet:
			quiet = nil
			w.check(ctx)
		case <-tick.C:
			w.check(ctx)
		}
	}
}

// check compares everything with the last state and calls OnChange when it
// differs. A directory created since is watched from now on; what was
// written into it before is in the fingerprint.
func (w *Watcher) check(ctx context.Context) {
	for _, dir := range w.treeDirs() {
		_ = w.fw.Add(dir)
	}
	if cur := w.fingerprint(); cur != w.last {
		w.last = cur
		w.o.OnChange(ctx)
	}
}

// dirs are the directories to watch: each file's, and each tree's own.
func (w *Watcher) dirs() []string {
	out := w.treeDirs()
	for _, f := range w.o.Files {
		out = append(out, filepath.Dir(f))
	}
	return out
}

// treeDirs are the directories of each tree, or a file tree's directory.
func (w *Watcher) treeDirs() []string {
	var out []string
	for _, root := range w.o.Trees {
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

// fingerprint sums each file's content, and the name, size and
// modification time of every file under the trees with the directories'
// names. A file that cannot be read keeps its last content: an editor that
// deletes before it writes is saving, not removing.
func (w *Watcher) fingerprint() string {
	h := sha256.New()
	for _, f := range w.o.Files {
		if b, err := os.ReadFile(f); err == nil {
			w.files[f] = sha256.Sum256(b)
		}
		sum := w.files[f]
		fmt.Fprintf(h, "%s\x00%x\n", f, sum)
	}
	for _, root := range w.o.Trees {
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() {
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
