package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/session"
)

// loadSharedStartFlags are start's flags that mean something to load
// without --start: the cluster, the namespace, the session's /metrics and
// its inspector, which shows the run.
var loadSharedStartFlags = []string{"kubeconfig", "context", "log-format", "log-level", "namespace", "health-address", "inspector-address"}

// startFlagsNeedStart refuses start's other flags, typed on the command
// line, without --start: they would change nothing, silently. Set through
// HOOKBACK_* they are left alone, as settings of a shell that also runs
// start.
func (o LoadOptions) startFlagsNeedStart(c *cli.Context) error {
	if o.StartSession {
		return nil
	}
	sb := &binder{}
	st := defaultStartOptions()
	st.bind(sb)
	var set []string
	for name := range sb.fields {
		if slices.Contains(loadSharedStartFlags, name) || !c.IsSet(name) || os.Getenv(envVar(name)[0]) != "" {
			continue
		}
		set = append(set, "--"+name)
	}
	if len(set) == 0 {
		return nil
	}
	sort.Strings(set)
	return fmt.Errorf("%s: start's flags take effect with --start only (without it, load sends through what is registered already)", strings.Join(set, ", "))
}

// startForLoad runs start's session in this process until it is ready
// (its /readyz on --health-address), for the load; stop ends it, which
// deregisters everything it wrote, and waits for that.
func startForLoad(c *cli.Context, ext Extension, o StartOptions, log *slog.Logger) (stop func() error, err error) {
	if err := o.check(ext); err != nil {
		return nil, usage(err)
	}
	if o.Plan.HealthAddress == "" {
		return nil, usage(errors.New("--start needs --health-address: the load reads the session's /metrics there"))
	}
	opts := o.config(ext, log, c.App.ErrWriter)
	cfg, err := plan.Complete(opts)
	if err != nil {
		return nil, configUsage(err)
	}
	ctx, cancel := context.WithCancel(c.Context)
	var runErr error
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		runErr = session.Run(ctx, cfg)
	}()
	stop = func() error {
		cancel()
		<-finished
		return runErr
	}
	if err := waitReady(ctx, "http://"+o.Plan.HealthAddress+"/readyz", finished); err != nil {
		if serr := stop(); serr != nil {
			return nil, fmt.Errorf("the load's session: %w", serr)
		}
		return nil, err
	}
	return stop, nil
}

// waitReady polls readyz until it answers 200, the session ends, or ctx
// is done.
func waitReady(ctx context.Context, readyz string, finished <-chan struct{}) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		select {
		case <-finished:
			return errors.New("the load's session stopped before it was ready")
		case <-ctx.Done():
			return fmt.Errorf("the load's session: %w", ctx.Err())
		case <-tick.C:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, readyz, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
}
