package plan

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/hookback/hookback/assembly"
	"github.com/hookback/hookback/certs"
	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/project"
)

// Resolve fills in what depends on the machine, the build, the project and
// the environment: the session name, project mode and its defaults, the
// built-ins selected, HOOKBACK_KUBECTL, the relay image. Complete and
// Validate run it. A zero duration or health address takes DefaultOptions'
// value; a zero Port, LeaseNamespace or Certs.Mode stays an error.
func (o Options) Resolve() (Options, error) {
	d := DefaultOptions()
	o.Session = cmp.Or(o.Session, DefaultSession())

	o.HealthAddress = cmp.Or(o.HealthAddress, d.HealthAddress)
	o.LeaseDuration = cmp.Or(o.LeaseDuration, d.LeaseDuration)
	o.VerifyTimeout = cmp.Or(o.VerifyTimeout, d.VerifyTimeout)
	o.ReloadInterval = cmp.Or(o.ReloadInterval, d.ReloadInterval)
	o.Tunnel = o.Tunnel.WithDefaults()
	o.Tunnel.Image = cmp.Or(o.Tunnel.Image, DefaultImage(o.Version))
	// make run points this at the local control plane's kubectl when none
	// is on PATH, so the banner's suggestions work as printed.
	o.Kubectl = cmp.Or(o.Kubectl, os.Getenv("HOOKBACK_KUBECTL"), "kubectl")
	// Another hookback may hold the default inspector address: then a free
	// loopback port serves instead. An address the user chose must be it.
	o.Inspector.Fallback = o.Inspector.Fallback || o.Inspector.Address == DefaultInspectorAddress
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Certs.Log == nil {
		o.Certs.Log = o.Log
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	// --policy-enforce applies --policy's policies instead of evaluating
	// them beside the apiserver.
	if o.PolicyEnforce.Enabled && len(o.PolicyEnforce.Input.Paths) == 0 {
		o.PolicyEnforce.Input, o.Policies = o.Policies, PolicyInput{}
	}
	p, err := o.projectMode()
	if err != nil {
		return o, err
	}
	if p != nil {
		o = o.withProject(p)
	}
	return o.selectBuiltins()
}

// projectMode is the project of project mode (ProjectDir), or nil.
func (o Options) projectMode() (*project.Project, error) {
	dir := o.ProjectDir
	switch {
	case o.Project != nil:
		return o.Project, nil
	case dir == "", dir == AutoProject && (len(o.User.Manifests) > 0 || !project.Has(".")):
		return nil, nil
	case dir == AutoProject:
		dir = "."
	case len(o.User.Manifests) > 0:
		return nil, field.Clause("plan.Options.ProjectDir", dir, "and {plan.UserWebhooks.Manifests}: give one ({plan.Options.ProjectDir} reads the project's config/default)")
	case !project.Has(dir):
		return nil, field.New("plan.Options.ProjectDir", dir, fmt.Sprintf("no %s file there: give the root of a kubebuilder or Operator SDK project", project.File))
	}
	p, err := project.Load(dir)
	if err != nil {
		return nil, field.Errorf("plan.Options.ProjectDir", dir, "%w", err)
	}
	return p, nil
}

// withProject applies project mode's defaults to what is not set: the
// project's manifests, the built-ins off, controller-runtime's webhook
// server as the upstream, its certificate directory.
func (o Options) withProject(p *project.Project) Options {
	o.Project = p
	o.User.Manifests = p.Manifests
	// The default selection, every built-in, is off in project mode.
	if slices.Equal(o.Webhooks, []string{All}) {
		o.Webhooks = nil
	}
	if slices.Equal(o.Controllers, []string{All}) {
		o.Controllers = nil
	}
	if len(o.User.Upstream) == 0 && len(o.User.Upstreams) == 0 {
		o.User.Upstream, o.User.UpstreamDefaulted = []string{project.DefaultUpstream}, true
	}
	if o.User.CertDir == "" {
		o.User.CertDir = certs.ControllerRuntimeCertDir()
	}
	return o
}

// selectBuiltins resolves All and None in Webhooks and Controllers into
// the built-ins' names.
func (o Options) selectBuiltins() (Options, error) {
	var errs []error
	hooks, err := assembly.SelectWebhooks(splitEach(o.Webhooks))
	if err != nil {
		errs = append(errs, field.New("plan.Options.Webhooks", "", err.Error()))
	}
	ctls, err := assembly.SelectControllers(splitEach(o.Controllers))
	if err != nil {
		errs = append(errs, field.New("plan.Options.Controllers", "", err.Error()))
	}
	o.Webhooks, o.Controllers = hooks, ctls
	if len(errs) > 0 {
		return o, errors.Join(errs...)
	}
	return o, nil
}

// splitEach splits comma lists ("a,b" as one element), as typed.
func splitEach(list []string) []string {
	var out []string
	for _, s := range list {
		out = append(out, strings.Split(s, ",")...)
	}
	return out
}
