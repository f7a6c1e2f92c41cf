package suite

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/hookback/hookback/reload"
)

// WatchRun is one run of Watch: every row, and the rows that differ from
// the previous run's (all of them the first time); Err is a run that
// could not be made (a suite file that does not load, a CRD refused).
type WatchRun struct {
	All, Changed []Row
	Err          error
}

// WatchOptions say what Watch watches and how.
type WatchOptions struct {
	// Roots are the files and directories whose changes rerun the suite:
	// the suite's, the CRDs', the policies'.
	Roots []string
	// Interval is the backstop re-scan (fsnotify misses events on some
	// filesystems); Debounce folds one save's events into one run.
	Interval, Debounce time.Duration
	Log                *slog.Logger
}

// Watch calls run, then again whenever a file under o.Roots changes, and
// hands each run to each, until ctx is done. run reads everything it
// judges afresh (the suite files, CRDs, policies), so a saved file is
// what the next run uses.
func Watch(ctx context.Context, o WatchOptions, run func(context.Context) ([]Row, error), each func(WatchRun)) error {
	if slices.Contains(o.Roots, "-") {
		return errors.New("watch: stdin (-) cannot be watched: name files or directories")
	}
	var last []Row
	first := true
	rerun := func(ctx context.Context) {
		rows, err := run(ctx)
		r := WatchRun{All: rows, Err: err}
		if err == nil {
			r.Changed = changedRows(rows, last, first)
			last, first = rows, false
		}
		each(r)
	}
	// The watch is in place before the first run: a save during it is
	// run next.
	w, err := reload.New(reload.Options{Trees: o.Roots, Interval: o.Interval, Debounce: o.Debounce, Log: o.Log, OnChange: rerun})
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	rerun(ctx)
	return w.Start(ctx)
}

// changedRows are the rows of now whose status, detail or diff differ
// from the same case's and webhook's row in before, or that are new.
func changedRows(now, before []Row, first bool) []Row {
	if first {
		return now
	}
	type key struct{ file, name, webhook string }
	type seen struct{ status, detail, diff string }
	prev := make(map[key]seen, len(before))
	for _, r := range before {
		prev[key{r.File, r.Case, r.Webhook}] = seen{r.Status, r.Detail, r.Diff}
	}
	var out []Row
	for _, r := range now {
		if p, ok := prev[key{r.File, r.Case, r.Webhook}]; !ok || p != (seen{r.Status, r.Detail, r.Diff}) {
			out = append(out, r)
		}
	}
	return out
}
