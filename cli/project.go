package cli

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/hookback/hookback/project"
	"github.com/hookback/hookback/session"
)

// projectMode turns on project mode (see the --project flag) and applies
// its defaults to what the user did not set: the project's manifests, the
// built-ins off, controller-runtime's webhook server as the upstream.
// It returns nil when not in project mode.
func projectMode(c *cli.Context, o *ServeOptions) (*project.Project, error) {
	dir := c.String("project")
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
	o.User.Manifests = p.Manifests
	if !c.IsSet("webhooks") {
		o.Webhooks = []string{"none"}
	}
	if !c.IsSet("controllers") {
		o.Controllers = []string{"none"}
	}
	if len(o.User.Upstreams) == 0 {
		o.User.Upstreams = []session.Upstream{{URL: project.DefaultUpstream}}
	}
	return p, nil
}
