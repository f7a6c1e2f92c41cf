package crdvalidate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"time"

	"github.com/hookback/hookback/reload"
)

// WatchRun is one run of Watch: every result, and those that differ from the
// previous run's (all of them the first time); Err is input that could
// not be judged (Run's error).
type WatchRun struct {
	All, Changed Report
	Err          error
}

// WatchOptions tune Watch.
type WatchOptions struct {
	// Interval is the backstop re-scan of the files (fsnotify misses
	// events on some filesystems); Debounce folds one save's events.
	Interval, Debounce time.Duration
	Log                *slog.Logger
}

// Watch runs o, then again whenever a file under its CRDs, objects or old
// objects changes, and hands each run to each, until ctx is done. A CRD
// is compiled again when it changed (a saved CRD is what the next run
// judges with), else reused.
func Watch(ctx context.Context, o Options, wo WatchOptions, each func(WatchRun)) error {
	roots := slices.Concat(o.CRDs, o.Objects, o.Old)
	if slices.Contains(roots, "-") {
		return errors.New("watch: stdin (-) cannot be watched: name files or directories")
	}
	if wo.Log == nil {
		wo.Log = slog.New(slog.DiscardHandler)
	}
	var last Report
	cache := newCompileCache()
	judge := func(ctx context.Context) {
		rep, err := run(ctx, o, nil, cache)
		run := WatchRun{All: rep, Err: err}
		if err == nil {
			run.Changed = rep.changedSince(last)
			last = rep
		}
		each(run)
	}
	// The watch is in place before the first run: a save during it is
	// judged next.
	w, err := reload.New(reload.Options{Trees: roots, Interval: wo.Interval, Debounce: wo.Debounce, Log: wo.Log, OnChange: judge})
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	judge(ctx)
	return w.Start(ctx)
}

// changedSince are the results of rep that prev does not hold as they are.
func (rep Report) changedSince(prev Report) Report {
	type key struct {
		file, name, kind string
		index            int
	}
	before := make(map[key]Result, len(prev))
	for _, r := range prev {
		before[key{r.File, r.Name, r.Kind, r.Index}] = r
	}
	var out Report
	for _, r := range rep {
		if p, ok := before[key{r.File, r.Name, r.Kind, r.Index}]; !ok || !reflect.DeepEqual(p, r) {
			out = append(out, r)
		}
	}
	return out
}
