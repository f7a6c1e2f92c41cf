package cli

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/hookback/hookback/assembly"
	"github.com/hookback/hookback/incluster"
	"github.com/hookback/hookback/plan"
)

// inClusterFlagNames are render's flags for --in-cluster only.
var inClusterFlagNames = []string{"in-cluster", "install-namespace", "image", "replicas", "cert-manager"}

// inClusterApplies are the flags --in-cluster reads; any other serve flag
// decides a laptop session only, and setting it is a mistake worth saying.
var inClusterApplies = append([]string{"webhooks", "controllers", "template"}, inClusterFlagNames...)

// InClusterOptions are render --in-cluster's flags.
type InClusterOptions struct {
	GlobalOptions
	Enabled                    bool
	Namespace, Image, Template string
	Replicas                   int
	CertManager                bool
	Webhooks, Controllers      []string
	// Inapplicable are laptop-only flags the user set.
	Inapplicable []string
}

func defaultInClusterOptions() InClusterOptions {
	return InClusterOptions{Namespace: incluster.DefaultNamespace, Replicas: incluster.DefaultReplicas}
}

// bind binds render's in-cluster flags; the rest come from ServeOptions.
func (o *InClusterOptions) bind(b *binder) {
	bind(b, &o.Enabled, "in-cluster", catInCluster, "print everything to deploy hookback in the cluster instead (Namespace, RBAC, Deployment, Service, webhook configurations with service references)")
	bind(b, &o.Namespace, "install-namespace", catInCluster, "in-cluster: the install's namespace (its Service, the CA Secret, the leader election Lease)", sets("incluster.Options.Namespace"))
	bind(b, &o.Image, "image", catInCluster, "in-cluster: hookback image (default: ghcr.io/hookback/hookback:<this version>, :latest for a dev build)", sets("incluster.Options.Image"))
	bind(b, &o.Replicas, "replicas", catInCluster, "in-cluster: replicas of the Deployment", sets("incluster.Options.Replicas"))
	bind(b, &o.CertManager, "cert-manager", catInCluster, "in-cluster: annotate the webhook configurations for cert-manager's cainjector (Certificate NAMESPACE/hookback)")
}

// inapplicable lists the laptop-only flags set on the command line: only
// there, since HOOKBACK_* variables kept for laptop sessions must not stop
// a render for the cluster.
func inapplicable(c *cli.Context, b *binder) []string {
	var out []string
	for _, f := range b.flags {
		name := f.Names()[0]
		fromEnv := os.Getenv(envVar(name)[0]) != ""
		if c.IsSet(name) && !fromEnv && !slices.Contains(inClusterApplies, name) && !slices.Contains(globalFlagNames, name) {
			out = append(out, name)
		}
	}
	return out
}

// Validate reports the flags' own problems: their syntax, and flags that do
// not apply with --in-cluster. The install's rules live once in incluster
// (Options.Validate), which InCluster runs.
func (o InClusterOptions) Validate() error {
	errs := []error{o.GlobalOptions.Validate(), validateSelection(o.Webhooks, o.Controllers)}
	for _, name := range o.Inapplicable {
		if name == "namespace" {
			errs = append(errs, errors.New(renamedNamespace))
			continue
		}
		errs = append(errs, fmt.Errorf("--%s decides a laptop session only: it does not apply with --in-cluster", name))
	}
	return errors.Join(errs...)
}

// renamedNamespace is the error of the install's old flag spelling:
// --namespace scopes a laptop session in every command now.
const renamedNamespace = "--namespace is the scope of a laptop session: the install's namespace is --install-namespace"

// bindOldNamespace accepts the install's old spelling only to refuse it
// by name (refuseOldNamespace).
func bindOldNamespace(b *binder) {
	var old string
	bind(b, &old, "namespace", catInCluster, "renamed --install-namespace", alias("n"), hidden)
}

// refuseOldNamespace is the usage error of --namespace where it once named
// the install's namespace.
func refuseOldNamespace(c *cli.Context) error {
	if c.IsSet("namespace") {
		return usage(errors.New(renamedNamespace))
	}
	return nil
}

// deploy is the deploy Options of these, with the template text; call
// after Validate.
func (o InClusterOptions) deploy(tmpl []byte) incluster.Options {
	hooks, _ := assembly.SelectWebhooks(splitLists(o.Webhooks))
	ctls, _ := assembly.SelectControllers(splitLists(o.Controllers))
	return incluster.Options{Namespace: o.Namespace, Image: o.Image, Replicas: int32(o.Replicas),
		Webhooks: hooks, Controllers: ctls, Template: tmpl, CertManager: o.CertManager, CustomTemplate: o.Template != ""}
}

// runRenderInCluster prints the in-cluster install.
func runRenderInCluster(c *cli.Context, o InClusterOptions, ext Extension) error {
	if o.Image == "" {
		o.Image = plan.DefaultImage(version())
	}
	if err := o.Validate(); err != nil {
		// With the install's own problems, so every one is said at once.
		return usage(errors.Join(err, o.deploy(ext.Template).Validate()))
	}
	tmpl := ext.Template
	if o.Template != "" {
		b, err := os.ReadFile(o.Template)
		if err != nil {
			return fmt.Errorf("render in-cluster: %w", err)
		}
		tmpl = b
	}
	do := o.deploy(tmpl)
	objs, err := incluster.InCluster(do)
	if err != nil {
		return configUsage(err)
	}
	out, err := incluster.YAML(fmt.Sprintf(`hookback %s in the cluster: namespace %s, image %s, webhooks [%s], controllers [%s].
Generated by hookback render --in-cluster; apply with kubectl apply -f -, remove with
hookback uninstall --install-namespace %[2]s (docs/in-cluster.md).`,
		version(), do.Namespace, do.Image, strings.Join(do.Webhooks, " "), strings.Join(do.Controllers, " ")), objs)
	if err != nil {
		return fmt.Errorf("render in-cluster: %w", err)
	}
	_, err = c.App.Writer.Write(out)
	return err
}
