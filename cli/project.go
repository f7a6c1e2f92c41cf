package cli

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/hookback/hookback/project"
)

// resolveProject turns on project mode (see the --project flag) and applies
// its defaults to what the user did not set: the project's manifests, the
// built-ins off, controller-runtime's webhook server as the upstream. Call
// it after the flags are loaded; o.project stays nil outside project mode.
func (o *ServeOptions) resolveProject(c *cli.Context) {
	o.project, o.projectErr = projectMode(c, o)
}

func projectMode(c *cli.Context, o *ServeOptions) (*project.Project, error) {
	dir := o.Project
	switch {
	case c.IsSet("webhook-config") && c.IsSet("project"):
		return nil, errors.New("--project and --webhook-config: give one (--project reads the project's config/default)")
	case c.IsSet("webhook-config"):
		return nil, nil
	case dir == "" && !project.Has("."):
		return nil, nil
	case dir == "":
		dir = "."
	case !project.Has(dir):
		return nil, fmt.Errorf("--project %s: no %s file there: give the root of a kubebuilder or Operator SDK project", dir, project.File)
	}
	p, err := project.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("--project: %w", err)
	}
	o.WebhookConfig = p.Manifests
	if !c.IsSet("webhooks") {
		o.Webhooks = "none"
	}
	if !c.IsSet("controllers") {
		o.Controllers = "none"
	}
	if len(o.Upstream) == 0 {
		o.Upstream, o.upstreamDefaulted = []string{project.DefaultUpstream}, true
	}
	return p, nil
}
