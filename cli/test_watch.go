package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hookback/hookback/internal/report"
	"github.com/hookback/hookback/suite"
)

// validateWatch: --watch prints a table of what changed, and neither
// rewrites cases nor fuzzes.
func (o TestOptions) validateWatch() error {
	if !o.Watch {
		return nil
	}
	var errs []error
	if o.Output != report.FormatTable {
		errs = append(errs, fmt.Errorf("--output %q with --watch: want table", o.Output))
	}
	if o.Update || o.Fuzz.N > 0 {
		errs = append(errs, errors.New("--watch reruns the suite as it is: not with --update or --conversion-fuzz"))
	}
	return errors.Join(errs...)
}

// watchTest runs the suite again on every change to its files, CRDs and
// policies, until Ctrl-C, printing the rows that changed and a summary;
// a run that cannot be made (a suite file that does not load) is printed
// and watched past. The webhooks of opts (built-ins, your server) stay
// as they were at the start.
func watchTest(c *cli.Context, o TestOptions, paths []string, opts suite.Options) error {
	roots := slices.Concat(paths, o.Policy)
	if o.Fuzz.CRD != "" {
		roots = append(roots, o.Fuzz.CRD)
	}
	base, cache := opts.Webhooks, newCRDCache()
	run := func(ctx context.Context) ([]suite.Row, error) {
		defer cache.rotate()
		files, err := loadSuite(paths, false)
		if err != nil {
			return nil, err
		}
		extra, err := suiteWebhooks(ctx, o, files, nil, cache)
		if err != nil {
			return nil, err
		}
		each := opts
		each.Webhooks = append(slices.Clip(base), extra...)
		return suite.Run(ctx, files, each), nil
	}
	wo := suite.WatchOptions{Roots: roots, Interval: 2 * time.Second, Debounce: 25 * time.Millisecond, Log: opts.Log}
	var werr error
	err := suite.Watch(c.Context, wo, run, func(r suite.WatchRun) {
		if r.Err != nil {
			fmt.Fprintln(c.App.ErrWriter, "Error:", withFlagNames(r.Err))
			return
		}
		if len(r.Changed) > 0 && werr == nil {
			werr = report.Write(c.App.Writer, report.FormatTable, suite.Report(r.Changed))
		}
		n := suite.Count(r.All)
		fmt.Fprintf(c.App.ErrWriter, "%d results: %d passed, %d failed, %d errors (%d changed); watching for changes\n",
			n.Rows, n.Passed, n.Failed, n.Errors, len(r.Changed))
	})
	if err != nil {
		return exit(err, exitUsage)
	}
	return werr
}
