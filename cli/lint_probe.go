package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"

	"github.com/hookback/hookback/lint"
	"github.com/hookback/hookback/project"
	"github.com/hookback/hookback/suite"
	"github.com/hookback/hookback/upstream"
)

// lintProbeOptions are lint --probe's flags: your webhook server, and the
// suite whose cases are the samples.
type lintProbeOptions struct {
	Probe            bool
	Upstream         string
	UpstreamCA       string
	UpstreamInsecure bool
	Cases            []string
}

func (o *lintProbeOptions) bind(b *binder) {
	bind(b, &o.Probe, "probe", catUser, "send each mutating webhook a sample object through your server, then its own output as a new review, as the apiserver does under reinvocationPolicy IfNeeded; a second change is the finding reinvocation-unsafe")
	bind(b, &o.Upstream, "upstream", catUser, "with --probe: your webhook server, called at each webhook's path as start forwards to it")
	bind(b, &o.UpstreamCA, "upstream-ca", catUser, "with --probe: CA file to trust an https upstream", sets("upstream.Options.CAFile"))
	bind(b, &o.UpstreamInsecure, "upstream-insecure", catUser, "with --probe: do not verify an https upstream's certificate (loopback upstreams only)", sets("upstream.Options.Insecure"))
	bind(b, &o.Cases, "probe-cases", catUser, "with --probe: suite files or directories (hookback test's) whose CREATE cases are the samples of the webhooks they match, in place of a minimal object per rule (repeatable)")
}

// Validate refuses the probe's flags without --probe.
func (o lintProbeOptions) Validate() error {
	if o.Probe {
		return nil
	}
	var errs []error
	for flag, set := range map[string]bool{"--upstream": o.Upstream != "", "--upstream-ca": o.UpstreamCA != "",
		"--upstream-insecure": o.UpstreamInsecure, "--probe-cases": len(o.Cases) > 0} {
		if set {
			errs = append(errs, fmt.Errorf("%s is for --probe: add --probe to send your webhooks samples through your server", flag))
		}
	}
	return errors.Join(errs...)
}

// upstream is where the samples go: --upstream, else controller-runtime's
// default address, where a kubebuilder project's manager serves.
func (o lintProbeOptions) upstream() (upstream.Options, error) {
	raw := o.Upstream
	if raw == "" {
		raw = project.DefaultUpstream
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return upstream.Options{}, fmt.Errorf("--upstream %q: want an http or https URL such as https://127.0.0.1:9443", raw)
	}
	opts := upstream.Options{Base: u, CAFile: o.UpstreamCA, Insecure: o.UpstreamInsecure, Role: "upstream " + u.Host}
	return opts, opts.Validate()
}

// probe sends in's mutating webhooks their samples and their own output
// (suite.Probe), sets what it found on in, and tells what it could not
// judge on errOut.
func (o lintProbeOptions) probe(ctx context.Context, in *lint.Input, errOut io.Writer) error {
	up, err := o.upstream()
	if err != nil {
		return usage(err)
	}
	var cases []*suite.File
	if len(o.Cases) > 0 {
		if cases, err = suite.Load(o.Cases); err != nil {
			return usage(err)
		}
	}
	// Yours only: with --cluster, the cluster's other webhooks are not
	// served by your server.
	hooks := slices.DeleteFunc(slices.Clone(in.Hooks), func(h *lint.Hook) bool { return !h.Mutating || h.Config.Doc.Source == "" })
	if len(hooks) == 0 {
		fmt.Fprintln(errOut, "lint --probe: no mutating webhook of yours to probe")
		return nil
	}
	res, err := suite.Probe(ctx, hooks, suite.ProbeOptions{Upstream: up, Cases: cases})
	switch {
	case errors.Is(err, suite.ErrProbe):
		// "lint --probe: no mutating webhook answered ...", each saying why.
		return exit(fmt.Errorf("lint --%w", err), exitUsage)
	case err != nil:
		return exit(fmt.Errorf("lint --probe: %w", err), exitUsage)
	}
	for _, s := range res.Skipped {
		fmt.Fprintf(errOut, "reinvocation-unsafe not checked for %s\n", s)
	}
	in.Reinvocations = res.Reinvocations
	return nil
}
